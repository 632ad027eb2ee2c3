package mem

import (
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs/layer"
)

// The mode bits a file keeps; the type bits are the layer's own.
const (
	fileModeMask = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
	dirModeMask  = fs.ModePerm | fs.ModeSticky
)

// commit makes e the latest version of its inode and rebuilds every
// directory above it, up to the root or to the top of an unlinked subtree.
// The caller holds f.mu and calls publish when the operation is complete,
// so that readers never see half of one.
func (f *FS) commit(e *entry) {
	ino := e.ino
	for {
		ino.cur.Store(e)
		p := ino.parent.Load()
		if p == nil {
			return
		}
		pe := p.cur.Load().with()
		pe.kids = pe.kids.Set(ino.name, e)
		e, ino = pe, p
	}
}

// publish makes the state built by commit visible to readers.
func (f *FS) publish() { f.root.Store(f.rootIno.cur.Load()) }

// update runs op under the writer lock and publishes what it did. op
// checks everything that can fail before it changes anything.
func (f *FS) update(op func(root *entry, now int64) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := op(f.root.Load(), f.now().UnixNano())
	f.publish()
	return err
}

// link adds e to directory dir under name, or replaces what is there.
func (f *FS) link(dir *entry, name string, e *entry, now int64) {
	e.ino.parent.Store(dir.ino)
	e.ino.name = name
	e.ino.cur.Store(e)
	nd := dir.ino.cur.Load().with()
	nd.kids = nd.kids.Set(name, e)
	nd.mtime = now
	f.commit(nd)
}

// unlink removes name from directory dir; the inode lives on for open
// handles.
func (f *FS) unlink(dir *entry, name string, e *entry, now int64) {
	nd := dir.ino.cur.Load().with()
	nd.kids = nd.kids.Delete(name)
	nd.mtime = now
	f.commit(nd)
	e.ino.parent.Store(nil)
}

func newEntry(mode fs.FileMode, now int64) *entry {
	e := &entry{ino: &inode{}, mode: mode, mtime: now}
	if mode.IsDir() {
		e.kids = emptyDir
	}
	return e
}

// OpenFile opens name with the flags of [os.OpenFile]: os.O_RDONLY,
// os.O_WRONLY or os.O_RDWR, with os.O_CREATE, os.O_EXCL, os.O_TRUNC and
// os.O_APPEND, and syscall.O_NOFOLLOW and syscall.O_DIRECTORY. perm is the
// mode of a created file; no umask applies.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	if acc == os.O_RDONLY && flag&(os.O_CREATE|os.O_TRUNC) == 0 {
		// Reading needs no lock.
		w, err := walk(f.root.Load(), name, flag&syscall.O_NOFOLLOW == 0)
		if err == nil {
			err = checkOpen(w.e, flag)
		}
		if err != nil {
			return nil, layer.PathError("open", name, err)
		}
		return &file{fsys: f, ino: w.e.ino, name: name, flag: flag}, nil
	}
	var h *file
	err := f.update(func(root *entry, now int64) error {
		e, err := f.open(root, name, flag, perm, now)
		if err == nil {
			h = &file{fsys: f, ino: e.ino, name: name, flag: flag}
		}
		return err
	})
	if err != nil {
		return nil, layer.PathError("open", name, err)
	}
	return h, nil
}

// checkOpen applies open's checks to an existing entry e (nil: missing).
func checkOpen(e *entry, flag int) error {
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	switch {
	case e == nil:
		return errNotExist
	case e.isSymlink():
		return syscall.ELOOP // only with O_NOFOLLOW
	case layer.IsWhiteout(e.mode):
		return syscall.ENXIO // as for the 0/0 character device it stands for
	case e.isDir():
		if acc != os.O_RDONLY || flag&(os.O_CREATE|os.O_TRUNC) != 0 {
			return errIsDir
		}
	case flag&syscall.O_DIRECTORY != 0:
		return errNotDir
	}
	return nil
}

// open creates or truncates name as flag asks and returns its entry.
func (f *FS) open(root *entry, name string, flag int, perm fs.FileMode, now int64) (*entry, error) {
	excl := flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0
	w, err := walk(root, name, !excl && flag&syscall.O_NOFOLLOW == 0)
	if err != nil {
		return nil, err
	}
	if w.e == nil {
		if flag&os.O_CREATE == 0 {
			return nil, errNotExist
		}
		if flag&syscall.O_DIRECTORY != 0 {
			return nil, errInvalid
		}
		e := newEntry(perm&fileModeMask, now)
		f.link(w.dir, strings.Clone(w.base), e, now)
		return e, nil
	}
	if excl {
		return nil, errExist
	}
	if err := checkOpen(w.e, flag); err != nil {
		return nil, err
	}
	e := w.e
	if flag&os.O_TRUNC != 0 && e.isRegular() {
		e = e.with()
		e.data = nil
		e.mtime = now
		f.commit(e)
	}
	return e, nil
}

// Create creates or truncates name with mode 0666, as [os.Create] does.
func (f *FS) Create(name string) (layer.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// WriteFile writes data to name, creating it with perm or truncating it, as
// [os.WriteFile] does, in one step: readers see the old or the new file.
func (f *FS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	c := newContent(append([]byte(nil), data...))
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, name, true)
		if err != nil {
			return err
		}
		if w.e == nil {
			e := newEntry(perm&fileModeMask, now)
			e.data = c
			f.link(w.dir, strings.Clone(w.base), e, now)
			return nil
		}
		if err := checkOpen(w.e, os.O_WRONLY|os.O_CREATE|os.O_TRUNC); err != nil {
			return err
		}
		e := w.e.with()
		e.data = c
		e.mtime = now
		f.commit(e)
		return nil
	})
	if err != nil {
		return layer.PathError("open", name, err)
	}
	return nil
}

// Mkdir creates the directory name with mode perm; the parent must exist.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, name, false)
		if err != nil {
			return err
		}
		if w.e != nil {
			return errExist
		}
		f.link(w.dir, strings.Clone(w.base), newEntry(fs.ModeDir|perm&dirModeMask, now), now)
		return nil
	})
	if err != nil {
		return layer.PathError("mkdir", name, err)
	}
	return nil
}

// MkdirAll creates name and any missing parents, as [os.MkdirAll] does.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	if fi, err := f.Stat(name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return layer.PathError("mkdir", name, errNotDir)
	}
	if !fs.ValidPath(name) {
		return layer.PathError("mkdir", name, fs.ErrInvalid)
	}
	if i := lastSlash(name); i > 0 {
		if err := f.MkdirAll(name[:i], perm); err != nil {
			return err
		}
	}
	err := f.Mkdir(name, perm)
	if err != nil {
		if fi, lerr := f.Lstat(name); lerr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// Remove removes the file, symlink, whiteout or empty directory name.
func (f *FS) Remove(name string) error {
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, name, false)
		switch {
		case err != nil:
			return err
		case w.dir == nil:
			return errInvalid
		case w.e == nil:
			return errNotExist
		case w.e.isDir() && w.e.kids.Len() > 0:
			return errNotEmpty
		}
		f.unlink(w.dir, w.base, w.e, now)
		return nil
	})
	if err != nil {
		return layer.PathError("remove", name, err)
	}
	return nil
}

// RemoveAll removes name and everything below it, as [os.RemoveAll] does.
// A directory goes in one step, whatever its size: its subtree is dropped,
// not walked.
func (f *FS) RemoveAll(name string) error {
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, name, false)
		switch {
		case err == fs.ErrInvalid || err == nil && w.dir == nil:
			return errInvalid
		case err == errNotExist || err == nil && w.e == nil:
			return nil
		case err != nil:
			return err
		}
		f.unlink(w.dir, w.base, w.e, now)
		return nil
	})
	switch {
	case err == nil:
		return nil
	case err == errInvalid:
		return layer.PathError("RemoveAll", name, err)
	}
	return layer.PathError("unlinkat", name, err)
}

// Rename renames oldname to newname, replacing a file, or an empty
// directory when oldname is a directory, as rename(2) does. Renaming a
// directory costs the same whatever it holds.
func (f *FS) Rename(oldname, newname string) error {
	err := f.update(func(root *entry, now int64) error {
		return f.rename(root, oldname, newname, now)
	})
	if err != nil {
		return layer.LinkError("rename", oldname, newname, err)
	}
	return nil
}

// rename checks in the order os and Linux do, so that the error is theirs.
func (f *FS) rename(root *entry, oldname, newname string, now int64) error {
	nw, nerr := walk(root, newname, false)
	ow, err := walk(root, oldname, false)
	if nerr == nil && nw.e != nil && nw.e.isDir() {
		// os.Rename refuses to replace a directory, before asking the
		// kernel: the error of Lstat(oldname), or else EEXIST.
		switch {
		case err != nil:
			return err
		case ow.e == nil:
			return errNotExist
		case oldname == newname || ow.e.ino != nw.e.ino:
			return errExist
		}
	}
	if err != nil {
		return err
	}
	if nerr != nil {
		return nerr
	}
	if ow.dir == nil || nw.dir == nil {
		return errBusy
	}
	src, dst := ow.e, nw.e
	if src == nil {
		return errNotExist
	}
	for p := nw.dir.ino; p != nil; p = p.parent.Load() {
		if p == src.ino {
			return errInvalid // into its own subtree
		}
	}
	if dst != nil {
		for p := ow.dir.ino; p != nil; p = p.parent.Load() {
			if p == dst.ino {
				return errNotEmpty // over one of its own ancestors
			}
		}
		if dst.ino == src.ino {
			return nil
		}
		if src.isDir() {
			if !dst.isDir() {
				return errNotDir
			}
			if dst.kids.Len() > 0 {
				return errNotEmpty
			}
		} else if dst.isDir() {
			return errIsDir
		}
	}
	nw.base = strings.Clone(nw.base)
	f.unlink(ow.dir, ow.base, src, now)
	f.link(nw.dir.ino.cur.Load(), nw.base, src, now)
	if dst != nil {
		dst.ino.parent.Store(nil)
	}
	return nil
}

// Whiteout records a whiteout at name (see [layer.WhiteoutFS]).
func (f *FS) Whiteout(name string) error {
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, name, false)
		switch {
		case err != nil:
			return err
		case w.dir == nil:
			return errInvalid
		case w.e != nil && w.e.isDir() && w.e.kids.Len() > 0:
			return errNotEmpty
		}
		if w.e != nil {
			w.e.ino.parent.Store(nil)
		}
		f.link(w.dir, strings.Clone(w.base), newEntry(layer.ModeWhiteout, now), now)
		return nil
	})
	if err != nil {
		return layer.PathError("whiteout", name, err)
	}
	return nil
}

// Symlink creates newname as a symbolic link to oldname. The target is
// stored as given; it resolves inside the layer (see the package doc).
func (f *FS) Symlink(oldname, newname string) error {
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, newname, false)
		switch {
		case err != nil:
			return err
		case w.e != nil || w.dir == nil:
			return errExist
		case oldname == "":
			return errNotExist
		case strings.IndexByte(oldname, 0) >= 0:
			return errInvalid
		}
		e := newEntry(fs.ModeSymlink|0o777, now)
		e.data = newContent([]byte(oldname))
		f.link(w.dir, strings.Clone(w.base), e, now)
		return nil
	})
	if err != nil {
		return layer.LinkError("symlink", oldname, newname, err)
	}
	return nil
}

// change applies fn to a new version of the entry name resolves to.
func (f *FS) change(op, name string, follow bool, fn func(e *entry)) error {
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, name, follow)
		if err != nil {
			return err
		}
		if w.e == nil {
			return errNotExist
		}
		if fn != nil {
			e := w.e.with()
			fn(e)
			f.commit(e)
		}
		return nil
	})
	if err != nil {
		return layer.PathError(op, name, err)
	}
	return nil
}

// Chmod changes the mode of name, following symlinks. Mode bits are kept,
// not enforced: the layer has no calling user, as for root on Linux.
func (f *FS) Chmod(name string, mode fs.FileMode) error {
	return f.change("chmod", name, true, func(e *entry) {
		e.mode = e.mode&^fileModeMask | mode&fileModeMask
	})
}

// Chown checks that name exists. Ownership is not kept by this layer.
func (f *FS) Chown(name string, uid, gid int) error {
	return f.change("chown", name, true, nil)
}

// Lchown checks that name exists, without following a final symlink.
// Ownership is not kept by this layer.
func (f *FS) Lchown(name string, uid, gid int) error {
	return f.change("lchown", name, false, nil)
}

// Chtimes sets the modification time of name, following symlinks; a zero
// mtime leaves it unchanged. Access times are not kept.
func (f *FS) Chtimes(name string, atime, mtime time.Time) error {
	return f.change("chtimes", name, true, func(e *entry) {
		if !mtime.IsZero() {
			e.mtime = mtime.UnixNano()
		}
	})
}
