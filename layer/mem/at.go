package mem

import (
	"io/fs"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

// A union that has just looked a name up through LookupAt, under its own
// writers' lock, changes it through these, with the directory's handle and
// the name, instead of giving the layer the whole path to walk again.

// OpenFileIn is OpenFile of the entry name, one element, of dir, a
// directory handle LookupAt returned (nil: the root); path is the entry's
// path, which the handle and errors report. A symlink there is not
// followed: opening one fails as OpenFile with syscall.O_NOFOLLOW does.
// A handle on a directory removed since fails with ENOENT.
func (f *FS) OpenFileIn(dir pathwalk.Dir, name, path string, flag int, perm fs.FileMode) (layer.File, error) {
	var h *file
	err := f.update(func(root *entry, now int64) error {
		if err := checkCreate(path); err != nil {
			return err
		}
		w, err := f.whereIn(root, dir, name)
		if err != nil {
			return err
		}
		e, err := f.openWhere(w, flag, perm, now)
		if err == nil {
			h = &file{fsys: f, ino: e.ino, name: path, flag: flag}
		}
		return err
	})
	if err != nil {
		return nil, layer.PathError("open", path, err)
	}
	return h, nil
}

// WriteFileIn is WriteFile of the entry name, one element, of dir, a
// directory handle LookupAt returned (nil: the root), known as path (see
// OpenFileIn): it creates the file with perm or truncates it, and writes
// data, in one step, so that readers see the old file or the new one. A
// symlink there is not followed: writing through one fails with ELOOP,
// as OpenFileIn does.
func (f *FS) WriteFileIn(dir pathwalk.Dir, name, path string, data []byte, perm fs.FileMode) error {
	return f.writeFile(path, data, perm, func(root *entry) (where, error) { return f.whereIn(root, dir, name) })
}

// OpenAt opens the regular file name, one element, of dir, a directory
// handle LookupAt returned (nil: the root), for reading, known as path in
// the handle (see pathwalk.OpenAtFS): a union's read of the file costs the
// one lookup. A missing entry is ENOENT, one that is no regular file
// EISDIR, ELOOP or EINVAL, all bare, so that a miss costs no allocation.
func (f *FS) OpenAt(dir pathwalk.Dir, name, path string) (fs.File, error) {
	w, err := f.whereIn(f.root.Load(), dir, name)
	if err == nil && w.e == nil {
		err = errNotExist
	}
	if err != nil {
		return nil, err
	}
	switch st := w.e.state(); {
	case st.isDir():
		return nil, errIsDir
	case st.isSymlink():
		return nil, syscall.ELOOP
	case !st.isRegular():
		return nil, errInvalid
	}
	return &file{fsys: f, ino: w.e.ino, name: path}, nil
}

// ReadFileAt returns a copy of the regular file name, one element, of
// dir, a directory handle LookupAt returned (nil: the root), as OpenAt
// would find it (see pathwalk.ReadFileAtFS). Its errors are OpenAt's,
// bare; path is unused, since the copy cannot fail.
func (f *FS) ReadFileAt(dir pathwalk.Dir, name, path string) ([]byte, error) {
	w, err := f.whereIn(f.root.Load(), dir, name)
	if err == nil && w.e == nil {
		err = errNotExist
	}
	if err != nil {
		return nil, err
	}
	return regularBytes(w.e.state())
}

// ReadFileAt returns a copy of the regular file name, one element, of
// dir, a directory handle LookupAt returned (nil: the root), with bare
// errors as FS.ReadFileAt's.
func (s *Snapshot) ReadFileAt(dir pathwalk.Dir, name, path string) ([]byte, error) {
	d, _ := dir.(*entry)
	if d == nil {
		d = s.root
	}
	if !d.state().isDir() {
		return nil, errNotDir
	}
	if err := checkElem(name); err != nil {
		return nil, err
	}
	child, ok := getKid(nil, d, d.state(), name)
	if !ok {
		return nil, errNotExist
	}
	return regularBytes(child.state())
}

// checkElem refuses name where a walk would: an invalid path, ".", more
// than one element, or an element over the length limit.
func checkElem(name string) error {
	if !pathwalk.ValidElem(name) {
		return fs.ErrInvalid
	}
	return pathwalk.CheckElem(name)
}

// regularBytes returns a copy of st's content when st is a regular file's.
func regularBytes(st *state) ([]byte, error) {
	switch {
	case st.isDir():
		return nil, errIsDir
	case st.isSymlink():
		return nil, syscall.ELOOP
	case !st.isRegular():
		return nil, errInvalid
	}
	return st.data.bytes(), nil
}

// RemoveIn is Remove of the entry name of dir (see OpenFileIn).
func (f *FS) RemoveIn(dir pathwalk.Dir, name, path string) error {
	err := f.update(func(root *entry, now int64) error {
		w, err := f.whereIn(root, dir, name)
		switch {
		case err != nil:
			return err
		case w.e == nil:
			return errNotExist
		case w.e.state().isDir() && w.e.state().children().Len() > 0:
			return errNotEmpty
		}
		f.unlink(w.dir, w.base, w.e, now)
		return nil
	})
	if err != nil {
		return layer.PathError("remove", path, err)
	}
	return nil
}

// whereIn locates name in the directory of the handle dir as it is now,
// as a walk to it would: under f.mu for a writer, or for a reader, which
// reads what it loads atomically.
func (f *FS) whereIn(root *entry, dir pathwalk.Dir, name string) (where, error) {
	d, _ := dir.(*entry)
	if d == nil {
		d = root
	} else if d = d.ino.cur.Load(); !f.linked(d.ino) {
		return where{}, errNotExist
	}
	if !d.state().isDir() {
		return where{}, errNotDir
	}
	if err := checkElem(name); err != nil {
		return where{}, err
	}
	e, _ := getKid(f, d, d.state(), name)
	return where{dir: d, base: name, e: e}, nil
}
