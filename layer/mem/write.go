package mem

import (
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

// The mode bits a file keeps; the type bits are the layer's own.
const (
	fileModeMask = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky
	dirModeMask  = fs.ModePerm | fs.ModeSticky
)

// set makes ns the state of ino's file: in place when its entry is of the
// current epoch, and otherwise in a new entry linked into its parent's
// index, in place where the index allows it (treap.SetOwned) and else in a
// new state of the parent, and so on up. The caller holds f.mu. Readers
// see the change when the one in-place store lands.
//
// A file inside a removed directory is reached only through its inode, by
// its handles: set stops there and leaves the removed directories' indexes
// alone, which no later freeze or disown would cover.
func (f *FS) set(ino *inode, ns *state) {
	checked := false
	for {
		e := ino.cur.Load()
		if e.epoch == f.epoch {
			e.st.Store(ns)
			return
		}
		ne := f.newEntry(ino, ns)
		p := ino.parent.Load()
		if p == nil {
			if ino == f.rootIno {
				f.root.Store(ne)
			}
			return
		}
		if !checked {
			if !f.linked(p) {
				return
			}
			checked = true
		}
		pe := p.cur.Load()
		old := pe.state()
		f.openIndexOf(old) // SetOwned may change the published treap in place
		kids := old.children().SetOwned(f.owner, ne.name, ne)
		f.indexRefresh(old, ne)
		if kids == old.children() && pe.epoch == f.epoch {
			return // linked in place: p's index is still the one published
		}
		ps := old.with()
		ps.dir.kids = kids
		ino, ns = p, ps
	}
}

// newEntry makes a new entry of the current epoch for ino, with state s,
// and makes it ino's latest.
func (f *FS) newEntry(ino *inode, s *state) *entry {
	e := &entry{ino: ino, epoch: f.epoch, name: ino.cur.Load().name}
	e.st.Store(s)
	ino.cur.Store(e)
	return e
}

// setBoth makes as the state of directory a and bs the state of directory
// b visible in one step, so that a reader sees both changes or neither:
// below their lowest common ancestor it links new entries, and the
// ancestor's new state goes in with one store.
func (f *FS) setBoth(a *inode, as *state, b *inode, bs *state) {
	type change struct {
		ino   *inode
		s     *state
		depth int
	}
	x, y := change{a, as, f.depth(a)}, change{b, bs, f.depth(b)}
	for x.ino != y.ino {
		if x.depth < y.depth {
			x, y = y, x
		}
		// Lift the deeper change into a new state of its parent, on top of
		// the other change when that is the parent's own.
		p := x.ino.parent.Load()
		ps := p.cur.Load().state()
		if y.ino == p {
			ps = y.s
		}
		ps = ps.with()
		ne := f.newEntry(x.ino, x.s)
		ps.dir.kids = ps.dir.kids.Set(ne.name, ne)
		f.indexRefresh(ps, ne)
		x = change{p, ps, x.depth - 1}
		if y.ino == p {
			y = x
		}
	}
	f.set(x.ino, x.s)
}

// depth is the number of directories above ino.
func (f *FS) depth(ino *inode) int {
	d := 0
	for ino != f.rootIno {
		ino = ino.parent.Load()
		d++
	}
	return d
}

// update runs op under the writer lock. op checks everything that can fail
// before it changes anything.
func (f *FS) update(op func(root *entry, now int64) error) error {
	f.mu.Lock()
	defer f.unlock()
	return op(f.root.Load(), f.now().UnixNano())
}

// unlock ends a writer's operation: it closes the windows of the indexes
// the operation changed and lets go of f.mu.
func (f *FS) unlock() {
	f.endIndexWrites()
	f.mu.Unlock()
}

// create makes a new file with state s, not yet linked. The inode, its
// first entry and, but for a directory, its first state come in one
// allocation: a file that is never changed after a snapshot keeps that
// entry for life.
func (f *FS) create(s state) *entry {
	if s.mode.IsDir() {
		n := &struct {
			ino inode
			e   entry
		}{}
		return f.first(&n.ino, &n.e, newDir(s))
	}
	n := &struct {
		ino inode
		e   entry
		s   state
	}{s: s}
	return f.first(&n.ino, &n.e, &n.s)
}

// first makes e, of the current epoch and state s, ino's first entry.
func (f *FS) first(ino *inode, e *entry, s *state) *entry {
	e.ino, e.epoch = ino, f.epoch
	e.st.Store(s)
	ino.cur.Store(e)
	return e
}

// link adds e, a new file, to directory dir under name, or replaces what
// is there. In a setgid directory the file takes the directory's group,
// as on Linux.
func (f *FS) link(dir *entry, name string, e *entry, now int64) {
	e.ino.parent.Store(dir.ino)
	e.name = name
	ds := dir.ino.cur.Load().state().with()
	inheritGroup(ds, e.state())
	f.openIndexOf(ds)
	ds.dir.kids = ds.dir.kids.SetOwned(f.owner, name, e)
	f.indexPut(ds, name, e)
	ds.mtime = now
	f.set(dir.ino, ds)
	f.note(layer.OpCreate, e.ino)
}

// inheritGroup gives s, a new file's state not yet published, the group
// of its directory ds when ds is setgid.
func inheritGroup(ds, s *state) {
	if ds.mode&fs.ModeSetgid != 0 && !layer.IsWhiteout(s.mode) {
		uid, _ := s.owner()
		_, gid := ds.owner()
		s.setOwner(uid, gid)
	}
}

// unlink removes name from directory dir; the inode lives on for open
// handles.
func (f *FS) unlink(dir *entry, name string, e *entry, now int64) {
	f.note(layer.OpRemove, e.ino)
	ds := dir.ino.cur.Load().state().with()
	f.openIndexOf(ds)
	ds.dir.kids = ds.dir.kids.DeleteOwned(f.owner, name)
	f.indexDelete(ds, name)
	ds.mtime = now
	f.set(dir.ino, ds)
	e.ino.parent.Store(nil)
}

// OpenFile opens name with the flags of [os.OpenFile]: os.O_RDONLY,
// os.O_WRONLY or os.O_RDWR, with os.O_CREATE, os.O_EXCL, os.O_TRUNC and
// os.O_APPEND, and syscall.O_NOFOLLOW and syscall.O_DIRECTORY. perm is the
// mode of a created file; no umask applies.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	return f.OpenFileRoom(nil, name, flag, perm)
}

// FileRoom is room for one file handle, inside an allocation of the
// caller's: OpenFileRoom opens the handle there, so that a caller that
// wraps every handle it hands out (package aferoadapter) makes one
// allocation an open rather than two. A room holds the handle of one
// successful open for good: it must not be given to another open.
type FileRoom struct{ f file }

// OpenFileRoom is OpenFile opening the handle in room (nil: a new one),
// which it leaves untouched when the open fails.
func (f *FS) OpenFileRoom(room *FileRoom, name string, flag int, perm fs.FileMode) (layer.File, error) {
	if err := layer.CheckOpenFlag(flag); err != nil {
		return nil, layer.PathError("open", name, err)
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	if acc == os.O_RDONLY && flag&(os.O_CREATE|os.O_TRUNC) == 0 {
		// Reading needs no lock.
		w, plain, err := walkPlain(f.root.Load(), name, flag&syscall.O_NOFOLLOW == 0, f)
		if err == nil && w.e == nil {
			err = errNotExist
		}
		if err == nil {
			err = checkOpen(w.e.state(), flag)
		}
		if err != nil {
			return nil, layer.PathError("open", name, err)
		}
		return room.handle(f, w.e.ino, name, flag, !plain), nil
	}
	var ino *inode
	err := f.update(func(root *entry, now int64) error {
		e, err := f.open(root, name, flag, perm, now)
		if err == nil {
			ino = e.ino
		}
		return err
	})
	if err != nil {
		return nil, layer.PathError("open", name, err)
	}
	return room.handle(f, ino, name, flag, true), nil
}

// handle returns a new handle of ino, in r (nil: a new allocation).
func (r *FileRoom) handle(fsys *FS, ino *inode, name string, flag int, aliased bool) *file {
	var h *file
	if r != nil {
		h = &r.f
	} else {
		h = new(file)
	}
	h.fsys, h.ino, h.name, h.flag, h.aliased = fsys, ino, name, flag, aliased
	return h
}

// checkOpen applies open's checks to an existing file in state s.
func checkOpen(s *state, flag int) error {
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	switch {
	case flag&syscall.O_DIRECTORY != 0 && !s.isDir():
		// Linux checks O_DIRECTORY before may_open's checks of the type,
		// so a final symlink (O_NOFOLLOW) is ENOTDIR, not ELOOP.
		return errNotDir
	case s.isSymlink():
		return syscall.ELOOP // only with O_NOFOLLOW
	case layer.IsWhiteout(s.mode):
		return syscall.ENXIO // as for the 0/0 character device it stands for
	case s.isDir():
		if acc != os.O_RDONLY || flag&(os.O_CREATE|os.O_TRUNC) != 0 {
			return errIsDir
		}
	}
	return nil
}

// open creates or truncates name as flag asks and returns its entry.
func (f *FS) open(root *entry, name string, flag int, perm fs.FileMode, now int64) (*entry, error) {
	if err := checkCreate(name); err != nil {
		return nil, err
	}
	excl := flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0
	w, _, err := walkTo(root, name, !excl && flag&syscall.O_NOFOLLOW == 0, flag&os.O_CREATE != 0)
	if err != nil {
		return nil, err
	}
	if w.slash && flag&os.O_CREATE != 0 {
		return nil, syscall.EISDIR // Linux's rule for O_CREAT and a trailing slash
	}
	return f.openWhere(w, flag, perm, now)
}

// openWhere is open once name is resolved to w.
func (f *FS) openWhere(w where, flag int, perm fs.FileMode, now int64) (*entry, error) {
	excl := flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0
	if w.e == nil {
		if flag&os.O_CREATE == 0 {
			return nil, errNotExist
		}
		if err := layer.CheckElem(w.base); err != nil {
			return nil, err
		}
		if flag&syscall.O_DIRECTORY != 0 {
			return nil, errInvalid
		}
		e := f.create(state{mode: perm & fileModeMask, mtime: now})
		f.link(w.dir, strings.Clone(w.base), e, now)
		return e, nil
	}
	if excl {
		return nil, errExist
	}
	st := w.e.state()
	if err := checkOpen(st, flag); err != nil {
		return nil, err
	}
	if flag&os.O_TRUNC != 0 && st.isRegular() {
		// Linux truncates, and sets the times, even with O_RDONLY.
		ns := st.with()
		ns.data = nil
		ns.mtime = now
		f.set(w.e.ino, ns)
		f.note(layer.OpWrite, w.e.ino)
	}
	return w.e, nil
}

// Create creates or truncates name with mode 0666, as [os.Create] does.
func (f *FS) Create(name string) (layer.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// WriteFile writes data to name, creating it with perm or truncating it, as
// [os.WriteFile] does, in one step: readers see the old or the new file.
func (f *FS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return f.writeFile(name, data, perm, func(root *entry) (where, error) { return walk(root, name, true, f) })
}

// writeFile is WriteFile of the entry find resolves in root, known as
// name.
func (f *FS) writeFile(name string, data []byte, perm fs.FileMode, find func(root *entry) (where, error)) error {
	c := newContent(append([]byte(nil), data...))
	err := f.update(func(root *entry, now int64) error {
		if err := checkCreate(name); err != nil {
			return err
		}
		w, err := find(root)
		if err != nil {
			return err
		}
		if w.e == nil {
			if err := layer.CheckElem(w.base); err != nil {
				return err
			}
			e := f.create(state{mode: perm & fileModeMask, mtime: now, data: c})
			f.link(w.dir, strings.Clone(w.base), e, now)
			return nil
		}
		st := w.e.state()
		if err := checkOpen(st, os.O_WRONLY|os.O_CREATE|os.O_TRUNC); err != nil {
			return err
		}
		n := &struct {
			s  state
			fi fileInfo
		}{s: *st} // a regular file's state: no dirState to copy
		ns := &n.s
		ns.data = c
		ns.mtime = now
		f.set(w.e.ino, ns)
		describe(w.e.ino, ns, &n.fi)
		f.note(layer.OpWrite, w.e.ino)
		return nil
	})
	if err != nil {
		return layer.PathError("open", name, err)
	}
	return nil
}

// Mkdir creates the directory name with mode perm; the parent must exist.
// As on Linux, perm keeps its permission and sticky bits, and the new
// directory is setgid when its parent is.
func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	err := f.update(func(root *entry, now int64) error {
		if err := checkCreate(name); err != nil {
			return err
		}
		w, err := walk(root, name, false, f)
		if err != nil {
			return err
		}
		if w.e != nil {
			return errExist
		}
		if err := layer.CheckElem(w.base); err != nil {
			return err
		}
		mode := fs.ModeDir | perm&dirModeMask
		if w.dir.state().mode&fs.ModeSetgid != 0 {
			mode |= fs.ModeSetgid
		}
		f.link(w.dir, strings.Clone(w.base), f.create(state{mode: mode, mtime: now}), now)
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
	if !pathwalk.ValidPath(name) {
		return layer.PathError("mkdir", name, fs.ErrInvalid)
	}
	if done, err := f.mkdirAll(name, perm); done {
		return err
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
		w, err := walk(root, name, false, f)
		switch {
		case err != nil:
			return err
		case w.dir == nil:
			return errInvalid
		case w.e == nil:
			return errNotExist
		case w.e.state().isDir() && w.e.state().children().Len() > 0:
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
		w, err := walk(root, name, false, f)
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
		return f.rename(root, oldname, newname, now, nil, false)
	})
	if err != nil {
		return layer.LinkError("rename", oldname, newname, err)
	}
	return nil
}

// rename checks in the order os and Linux do, so that the error is theirs.
// A non-nil left, not yet linked, takes oldname's place in the same step,
// and over set lets anything replace a whiteout (see RenameUnion).
func (f *FS) rename(root *entry, oldname, newname string, now int64, left *entry, over bool) error {
	if err := checkCreate(oldname); err != nil {
		return err
	}
	if err := checkCreate(newname); err != nil {
		return err
	}
	nw, nerr := walk(root, newname, false, f)
	ow, err := walk(root, oldname, false, f)
	if nerr == nil && nw.e != nil && nw.e.state().isDir() {
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
		if nerr == syscall.ENAMETOOLONG && ow.e == nil && layer.CheckName(path.Dir(newname)) == nil {
			// A new last element too long to look up comes after a
			// missing oldname, as in rename(2).
			return errNotExist
		}
		return nerr
	}
	if ow.dir == nil || nw.dir == nil {
		return errBusy
	}
	src, dst := ow.e, nw.e
	if src == nil {
		return errNotExist
	}
	if dst == nil {
		if err := layer.CheckElem(nw.base); err != nil {
			return err
		}
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
		ss, ds := src.state(), dst.state()
		if over && ds.mode.Type() == layer.ModeWhiteout {
			// A union's rename: the whiteout is no entry to it.
		} else if ss.isDir() {
			if !ds.isDir() {
				return errNotDir
			}
			if ds.children().Len() > 0 {
				return errNotEmpty
			}
		} else if ds.isDir() {
			return errIsDir
		}
	}
	base := strings.Clone(nw.base)
	from, to := ow.dir.ino, nw.dir.ino
	var oldPath string
	watched := f.feed.Active()
	if watched {
		oldPath, watched = f.pathOf(src.ino)
	}
	if left != nil {
		left.ino.parent.Store(from)
		left.name = strings.Clone(ow.base)
	}
	// The file goes in under a new entry, which carries the new name.
	moved := &entry{ino: src.ino, epoch: f.epoch, name: base}
	moved.st.Store(src.state())
	src.ino.cur.Store(moved)
	if from == to {
		s := ow.dir.state().with()
		s.dir.kids = leave(s.dir.kids.Delete(ow.base), left).Set(base, moved)
		f.indexMove(s, ow.base, left, base, moved)
		s.mtime = now
		f.set(from, s)
	} else {
		fromS, toS := ow.dir.state().with(), nw.dir.state().with()
		fromS.dir.kids = leave(fromS.dir.kids.Delete(ow.base), left)
		f.indexMove(fromS, ow.base, left, "", nil)
		toS.dir.kids = toS.dir.kids.Set(base, moved)
		f.indexPut(toS, base, moved)
		fromS.mtime, toS.mtime = now, now
		f.setBoth(from, fromS, to, toS)
	}
	if dst != nil {
		dst.ino.parent.Store(nil)
	}
	src.ino.parent.Store(to)
	if watched {
		if newPath, ok := f.pathOf(src.ino); ok {
			f.feed.Publish(layer.Change{Op: layer.OpRename, Name: oldPath, NewName: newPath})
		}
		if left != nil {
			f.note(layer.OpCreate, left.ino)
		}
	}
	return nil
}

// Whiteout records a whiteout at name (see [layer.WhiteoutFS]).
func (f *FS) Whiteout(name string) error { return f.whiteout(name, false) }

// WhiteoutAll is Whiteout that replaces a directory with all it holds:
// a union that removes a name shadowing a lower one hides the lower in
// the same step as it drops its own, so that no reader sees the lower
// entry in between.
func (f *FS) WhiteoutAll(name string) error { return f.whiteout(name, true) }

func (f *FS) whiteout(name string, all bool) error {
	err := f.update(func(root *entry, now int64) error {
		if err := checkCreate(name); err != nil {
			return err
		}
		w, err := walk(root, name, false, f)
		switch {
		case err != nil:
			return err
		case w.dir == nil:
			return errInvalid
		case w.e == nil:
			if err := layer.CheckElem(w.base); err != nil {
				return err
			}
		case !all && w.e.state().isDir() && w.e.state().children().Len() > 0:
			return errNotEmpty
		}
		if w.e != nil {
			f.note(layer.OpRemove, w.e.ino)
			w.e.ino.parent.Store(nil)
		}
		f.link(w.dir, strings.Clone(w.base), f.create(state{mode: layer.ModeWhiteout, mtime: now}), now)
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
		// The target is checked first, before newname is looked at, as
		// symlink(2) through os does.
		if !pathwalk.ValidPath(newname) {
			return fs.ErrInvalid
		}
		if err := layer.CheckSymlink(oldname, newname); err != nil {
			return err
		}
		w, err := walk(root, newname, false, f)
		switch {
		case err != nil:
			return err
		case w.e != nil || w.dir == nil:
			return errExist
		}
		if err := layer.CheckElem(w.base); err != nil {
			return err
		}
		e := f.create(state{mode: fs.ModeSymlink | 0o777, mtime: now, data: newContent([]byte(oldname))})
		f.link(w.dir, strings.Clone(w.base), e, now)
		return nil
	})
	if err != nil {
		return layer.LinkError("symlink", oldname, newname, err)
	}
	return nil
}

// checkCreate applies Linux's checks of a whole path (layer.CheckPath) to
// a name that is an io/fs path; one that is not is fs.ErrInvalid first,
// as in every other operation.
func checkCreate(name string) error {
	if !pathwalk.ValidPath(name) {
		return fs.ErrInvalid
	}
	return layer.CheckPath(name)
}

// change applies fn to a new state of the file name resolves to.
func (f *FS) change(op, name string, follow bool, fn func(s *state)) error {
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, name, follow, f)
		if err != nil {
			return err
		}
		if w.e == nil {
			return errNotExist
		}
		if fn != nil {
			s := w.e.state().with()
			fn(s)
			f.set(w.e.ino, s)
			f.note(layer.OpChattr, w.e.ino)
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
	return f.change("chmod", name, true, func(s *state) {
		s.mode = s.mode&^fileModeMask | mode&fileModeMask
	})
}

// Chown changes the owner of name, following symlinks; an id of -1
// leaves it unchanged. As on Linux, it drops the setuid bit of a
// non-directory, and its setgid bit when the group may execute
// (layer.ChownMode). Any ids may be given: the layer has no calling user,
// as for root on Linux.
func (f *FS) Chown(name string, uid, gid int) error {
	return f.change("chown", name, true, chown(uid, gid))
}

// Lchown is Chown without following a final symlink.
func (f *FS) Lchown(name string, uid, gid int) error {
	return f.change("lchown", name, false, chown(uid, gid))
}

func chown(uid, gid int) func(s *state) {
	return func(s *state) {
		old, oldGid := s.owner()
		s.setOwner(layer.ChownIDs(old, oldGid, uid, gid))
		s.mode = layer.ChownMode(s.mode)
	}
}

// Chtimes sets the modification time of name, following symlinks; a zero
// mtime leaves it unchanged. Access times are not kept.
func (f *FS) Chtimes(name string, atime, mtime time.Time) error {
	return f.change("chtimes", name, true, chtimes(mtime))
}

// Lchtimes is Chtimes without following a final symlink: it sets a
// symlink's own time.
func (f *FS) Lchtimes(name string, atime, mtime time.Time) error {
	return f.change("lchtimes", name, false, chtimes(mtime))
}

func chtimes(mtime time.Time) func(s *state) {
	return func(s *state) {
		if !mtime.IsZero() {
			s.mtime = mtime.UnixNano()
		}
	}
}
