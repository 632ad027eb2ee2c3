package mem

import (
	"fmt"
	"io/fs"
)

// Check verifies the layer's invariants and returns the first violation:
// every directory's index is a valid treap, every entry is the latest
// version of its inode, and every inode names the directory and the name
// it is linked under. Tests call it after a run.
func (f *FS) Check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	root := f.root.Load()
	if root != f.rootIno.cur.Load() {
		return fmt.Errorf("mem: published root is not the latest version")
	}
	if f.rootIno.parent.Load() != nil {
		return fmt.Errorf("mem: root has a parent")
	}
	return check(root, ".")
}

func check(dir *entry, name string) error {
	if !dir.isDir() {
		return fmt.Errorf("mem: %s: not a directory", name)
	}
	if err := dir.kids.Check(); err != nil {
		return fmt.Errorf("mem: %s: %w", name, err)
	}
	for base, e := range dir.kids.All() {
		child := base
		if name != "." {
			child = name + "/" + base
		}
		switch {
		case !fs.ValidPath(child) || base == "." || base == "..":
			return fmt.Errorf("mem: %s: invalid name %q", name, base)
		case e.ino.cur.Load() != e:
			return fmt.Errorf("mem: %s: not the latest version of its inode", child)
		case e.ino.parent.Load() != dir.ino || e.ino.name != base:
			return fmt.Errorf("mem: %s: inode linked as %q elsewhere", child, e.ino.name)
		case e.isDir():
			if err := check(e, child); err != nil {
				return err
			}
		case e.isRegular() || e.isSymlink():
			if e.data != nil && e.data.size > 0 && int64(len(e.data.tail)) > e.data.size-e.data.last()<<chunkShift {
				return fmt.Errorf("mem: %s: tail longer than the file", child)
			}
		}
	}
	return nil
}
