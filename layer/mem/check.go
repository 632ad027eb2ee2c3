package mem

import (
	"fmt"
	"io/fs"
)

// Check verifies the layer's invariants and returns the first violation:
// every directory's index is a valid treap, a large directory's hash
// index holds exactly its entries, every entry is the latest
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
	return f.check(root, ".")
}

func (f *FS) check(dir *entry, name string) error {
	epoch := f.epoch
	ds := dir.state()
	if !ds.isDir() {
		return fmt.Errorf("mem: %s: not a directory", name)
	}
	if err := ds.children().Check(); err != nil {
		return fmt.Errorf("mem: %s: %w", name, err)
	}
	if err := f.checkIndex(ds); err != nil {
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
			if err := f.check(e, child); err != nil {
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

// checkIndex verifies that the hash index of a live directory, if it has
// one, is closed, holds exactly the directory's entries, each in the slot
// its probe sequence finds, and that the directory has not fallen below
// f.indexDrop entries.
func (f *FS) checkIndex(ds *state) error {
	kids := ds.dir.kids
	x := ds.dir.idx.Load()
	if x == nil {
		return nil
	}
	if kids.Len() < f.indexDrop {
		return fmt.Errorf("hash index kept at %d entries", kids.Len())
	}
	if x.dead || x.open || x.seq.Load()&1 != 0 {
		return fmt.Errorf("hash index left open (dead %v, seq %d)", x.dead, x.seq.Load())
	}
	t := x.tab.Load()
	n := 0
	for i := range t.capacity() {
		if t.slot(uint64(i)).Load() != nil {
			n++
		}
	}
	if n != kids.Len() || x.live != n || x.used < n || x.used > t.capacity()*7/8 {
		return fmt.Errorf("hash index holds %d entries (counts %d, %d used of %d), the directory %d", n, x.live, x.used, t.capacity(), kids.Len())
	}
	for base, e := range kids.All() {
		if got := t.find(base, hashName(base)); got != e {
			return fmt.Errorf("hash index has %p for %q, the directory %p", got, base, e)
		}
	}
	return nil
}
