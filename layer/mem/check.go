package mem

import (
	"fmt"
	"io/fs"
)

// Check verifies the layer's invariants and returns the first violation:
// every directory's index is a valid treap, every entry is the latest
// entry of its inode and no newer than its directory's unless that one is
// still changeable, and every inode names the directory and the name it is
// linked under. Tests call it after a run.
func (f *FS) Check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	root := f.root.Load()
	if root != f.rootIno.cur.Load() {
		return fmt.Errorf("mem: published root is not the latest entry")
	}
	if f.rootIno.parent.Load() != nil {
		return fmt.Errorf("mem: root has a parent")
	}
	return check(root, ".", f.epoch)
}

func check(dir *entry, name string, epoch uint64) error {
	ds := dir.state()
	if !ds.isDir() {
		return fmt.Errorf("mem: %s: not a directory", name)
	}
	if err := ds.children().Check(); err != nil {
		return fmt.Errorf("mem: %s: %w", name, err)
	}
	for base, e := range ds.children().All() {
		child := base
		if name != "." {
			child = name + "/" + base
		}
		s := e.state()
		switch {
		case !fs.ValidPath(child) || base == "." || base == "..":
			return fmt.Errorf("mem: %s: invalid name %q", name, base)
		case e.ino.cur.Load() != e:
			return fmt.Errorf("mem: %s: not the latest entry of its inode", child)
		case e.epoch > epoch || e.epoch > dir.epoch && dir.epoch != epoch:
			return fmt.Errorf("mem: %s: entry of epoch %d under a frozen directory of epoch %d", child, e.epoch, dir.epoch)
		case e.name != base:
			return fmt.Errorf("mem: %s: entry named %q", child, e.name)
		case e.ino.parent.Load() != dir.ino:
			return fmt.Errorf("mem: %s: inode linked elsewhere", child)
		case s.isDir():
			if err := check(e, child, epoch); err != nil {
				return err
			}
		case s.isRegular() || s.isSymlink():
			if d := s.data; d != nil && d.size > 0 && int64(len(d.tail)) > d.size-d.last()<<chunkShift {
				return fmt.Errorf("mem: %s: tail longer than the file", child)
			}
		}
	}
	return nil
}
