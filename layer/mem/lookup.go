package mem

import (
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

var (
	_ pathwalk.LookupFS = (*FS)(nil)
	_ pathwalk.LookupFS = (*Snapshot)(nil)
)

// LookupAt looks name up in a directory found by an earlier LookupAt (nil:
// the root), for a union's resolution. The live layer's handle is the
// directory's inode, so that a lookup sees the latest state, writes made
// since the directory was found included; a snapshot's is its entry.
func (f *FS) LookupAt(dir pathwalk.Dir, name string) (pathwalk.Entry, error) {
	ino, _ := dir.(*inode)
	if ino == nil {
		ino = f.rootIno
	}
	child, err := kid(ino.cur.Load(), name)
	if err != nil {
		return pathwalk.Entry{}, err
	}
	e := entryOf(child, name)
	if e.Dir != nil {
		e.Dir = child.ino
	}
	return e, nil
}

// ReadLinkAt returns the target of the symlink name in dir.
func (f *FS) ReadLinkAt(dir pathwalk.Dir, name string) (string, error) {
	ino, _ := dir.(*inode)
	if ino == nil {
		ino = f.rootIno
	}
	return linkOf(ino.cur.Load(), name)
}

// LookupAt looks name up in a directory found by an earlier LookupAt (nil:
// the root).
func (s *Snapshot) LookupAt(dir pathwalk.Dir, name string) (pathwalk.Entry, error) {
	d, _ := dir.(*entry)
	if d == nil {
		d = s.root
	}
	child, err := kid(d, name)
	if err != nil {
		return pathwalk.Entry{}, err
	}
	return entryOf(child, name), nil
}

// ReadLinkAt returns the target of the symlink name in dir.
func (s *Snapshot) ReadLinkAt(dir pathwalk.Dir, name string) (string, error) {
	d, _ := dir.(*entry)
	if d == nil {
		d = s.root
	}
	return linkOf(d, name)
}

func kid(dir *entry, name string) (*entry, error) {
	ds := dir.state()
	if !ds.isDir() {
		return nil, syscall.ENOTDIR
	}
	child, ok := ds.kids.Get(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	return child, nil
}

// entryOf describes child; a directory's Dir is its entry.
func entryOf(child *entry, name string) pathwalk.Entry {
	cs := child.state()
	e := pathwalk.Entry{Info: &fileInfo{name: name, s: cs}}
	if cs.isDir() {
		e.Dir = child
		if o, ok := cs.kids.Get(layer.OpaqueName); ok && layer.IsWhiteout(o.state().mode) {
			e.Opaque = true
		}
	}
	return e
}

func linkOf(dir *entry, name string) (string, error) {
	child, err := kid(dir, name)
	if err != nil {
		return "", err
	}
	cs := child.state()
	if !cs.isSymlink() {
		return "", syscall.EINVAL
	}
	return cs.target(), nil
}
