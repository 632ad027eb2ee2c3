package mem

import (
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

var (
	_ pathwalk.OpenAtFS = (*FS)(nil)
	_ pathwalk.LookupFS = (*FS)(nil)
	_ pathwalk.LookupFS = (*Snapshot)(nil)

	_ pathwalk.ReadFileAtFS = (*FS)(nil)
	_ pathwalk.ReadFileAtFS = (*Snapshot)(nil)
)

// LookupAt looks name up in a directory found by an earlier LookupAt (nil:
// the root as it is now), for a union's resolution. A handle is the
// directory's entry, and a lookup reads the latest state of its
// directory (the entry its inode stands on now), so that a handle kept
// across writes stays current, as a directory descriptor does; a write
// through an open file after a snapshot replaces the entries above it.
// Every new state is whole before its inode takes it, so that a rename
// or a removal shows whole.
func (f *FS) LookupAt(dir pathwalk.Dir, name string) (pathwalk.Entry, error) {
	return lookupAt(f.root.Load(), current(dir), name, f)
}

// ReadLinkAt returns the target of the symlink name in dir.
func (f *FS) ReadLinkAt(dir pathwalk.Dir, name string) (string, error) {
	return readLinkAt(f.root.Load(), current(dir), name, f)
}

// Linked reports whether the directory of dir, a handle LookupAt returned
// (nil: the root), is still reachable from the root. A union that keeps
// handles across writes asks it before using one, so that removing an
// empty directory need not forget every handle it keeps.
func (f *FS) Linked(dir pathwalk.Dir) bool {
	d, _ := dir.(*entry)
	return d == nil || f.linked(d.ino)
}

// current returns the entry the inode of the live handle dir stands on
// now; nil stays nil (the root).
func current(dir pathwalk.Dir) pathwalk.Dir {
	if d, _ := dir.(*entry); d != nil {
		return d.ino.cur.Load()
	}
	return dir
}

// LookupAt looks name up in a directory found by an earlier LookupAt (nil:
// the root).
func (s *Snapshot) LookupAt(dir pathwalk.Dir, name string) (pathwalk.Entry, error) {
	return lookupAt(s.root, dir, name, nil)
}

// ReadLinkAt returns the target of the symlink name in dir.
func (s *Snapshot) ReadLinkAt(dir pathwalk.Dir, name string) (string, error) {
	return readLinkAt(s.root, dir, name, nil)
}

// lookupAt, readLinkAt and kid take live, the layer, for a lookup of the
// live layer, which large directories' hash indexes may answer (see
// kidIndex), and nil for a snapshot's.

func lookupAt(root *entry, dir pathwalk.Dir, name string, live *FS) (pathwalk.Entry, error) {
	d, _ := dir.(*entry)
	if d == nil {
		d = root
	}
	child, err := kid(d, name, live)
	if err != nil {
		return pathwalk.Entry{}, err
	}
	return entryOf(child, name, live), nil
}

func readLinkAt(root *entry, dir pathwalk.Dir, name string, live *FS) (string, error) {
	d, _ := dir.(*entry)
	if d == nil {
		d = root
	}
	return linkOf(d, name, live)
}

func kid(dir *entry, name string, live *FS) (*entry, error) {
	ds := dir.state()
	if !ds.isDir() {
		return nil, syscall.ENOTDIR
	}
	child, ok := getKid(live, dir, ds, name)
	if !ok {
		return nil, syscall.ENOENT
	}
	return child, nil
}

// entryOf describes child; a directory's Dir is its entry.
func entryOf(child *entry, name string, live *FS) pathwalk.Entry {
	cs := child.state()
	e := pathwalk.Entry{Info: child.info(name, cs)}
	if cs.isSymlink() {
		e.Target = cs.target()
	}
	if cs.isDir() {
		e.Dir = child
		if o, ok := getKid(live, child, cs, layer.OpaqueName); ok && layer.IsWhiteout(o.state().mode) {
			e.Opaque = true
		}
	}
	return e
}

func linkOf(dir *entry, name string, live *FS) (string, error) {
	child, err := kid(dir, name, live)
	if err != nil {
		return "", err
	}
	cs := child.state()
	if !cs.isSymlink() {
		return "", syscall.EINVAL
	}
	return cs.target(), nil
}
