package aferoadapter

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// Fs is an afero.Fs over an fs.FS that has the capabilities of package
// layer. Make one with [New].
type Fs struct {
	fsys fs.FS
}

var (
	_ afero.Fs        = (*Fs)(nil)
	_ afero.Lstater   = (*Fs)(nil)
	_ afero.Symlinker = (*Fs)(nil)
)

// New returns an afero.Fs over fsys: a PackFS layer such as *mem.FS, or any
// fs.FS. Each operation uses the capability interface of package layer that
// it needs, through the helper of package layer that falls back when fsys
// lacks it:
//
//   - Open, OpenFile, Create: [layer.OpenFileFS] (without it, read-only
//     opens through fs.FS.Open);
//   - Mkdir: [layer.MkdirFS]; MkdirAll: [layer.MkdirAllFS] or Mkdir;
//   - Remove: [layer.RemoveFS]; RemoveAll: [layer.RemoveAllFS] or Remove;
//   - Rename: [layer.RenameFS]; Chmod: [layer.ChmodFS]; Chown:
//     [layer.ChownFS]; Chtimes: [layer.ChtimesFS]; the extra methods
//     Lchown and Lchtimes: [layer.LchownFS] and [layer.LchtimesFS];
//   - Stat: [fs.StatFS] or Open; LstatIfPossible: [fs.ReadLinkFS] (without
//     it, Stat, reporting false);
//   - SymlinkIfPossible: [layer.SymlinkFS]; ReadlinkIfPossible:
//     [layer.ReadlinkFS] or [fs.ReadLinkFS].
//
// An operation whose capability fsys lacks, with no fallback, returns an
// error wrapping [errors.ErrUnsupported] (symlinks: also
// [afero.ErrNoSymlink] or [afero.ErrNoReadlink]). A nil fsys is an empty,
// read-only file system.
func New(fsys fs.FS) afero.Fs {
	if fsys == nil {
		fsys = emptyFS{}
	}
	return &Fs{fsys: fsys}
}

// emptyFS is the file system of New(nil): an empty root directory.
type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) {
	return nil, layer.PathError("open", name, fs.ErrNotExist)
}

// Name returns "PackFS".
func (a *Fs) Name() string { return "PackFS" }

// Create creates or truncates name for reading and writing, with mode 0666
// if it is new, as os.Create does.
func (a *Fs) Create(name string) (afero.File, error) {
	return a.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open opens name for reading.
func (a *Fs) Open(name string) (afero.File, error) {
	return a.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens name with flag and perm, as os.OpenFile does.
func (a *Fs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if err := layer.CheckOpenFlag(flag); err != nil {
		return nil, layer.PathError("open", name, err)
	}
	p, ok := plain(name)
	if !ok {
		var err error
		if p, err = a.openPath(name, flag); err != nil {
			return nil, layer.PathError("open", name, err)
		}
	}
	if m, ok := a.fsys.(*mem.FS); ok {
		return openMem(m, name, p, flag, perm)
	}
	f, err := layer.OpenFile(a.fsys, p, flag, perm)
	if err != nil {
		return nil, fixErr(err, name, p)
	}
	return &File{f: f, name: name, path: p}, nil
}

// memFile is a File of an in-memory layer with the layer's handle, made
// in one allocation.
type memFile struct {
	File
	room mem.FileRoom
}

// openMem is OpenFile of p in m, known to the caller as name.
func openMem(m *mem.FS, name, p string, flag int, perm os.FileMode) (afero.File, error) {
	mf := new(memFile)
	f, err := m.OpenFileRoom(&mf.room, p, flag, perm)
	if err != nil {
		return nil, fixErr(err, name, p)
	}
	mf.File = File{f: f, name: name, path: p}
	return &mf.File, nil
}

// openPath resolves name for an open with flag, as the kernel's
// open_last_lookups does: O_CREAT on ".", ".." or the root is EEXIST with
// O_EXCL and EISDIR without; O_CREAT with a trailing slash is EISDIR,
// and so is O_CREAT through a symlink whose target ends in one; a final
// symlink is followed here (but not with O_EXCL or O_NOFOLLOW, which
// refuse it, unless a trailing slash demands it).
func (a *Fs) openPath(name string, flag int) (string, error) {
	r, err := a.resolve(name)
	if err != nil {
		return "", err
	}
	creat, excl := flag&os.O_CREATE != 0, flag&os.O_EXCL != 0
	switch {
	case r.last != lastNorm && creat && excl:
		return "", syscall.EEXIST
	case creat && (r.last != lastNorm || r.slash):
		return "", syscall.EISDIR
	case r.last == lastNorm && !r.slash && (creat && excl || flag&syscall.O_NOFOLLOW != 0):
		return r.path(), nil
	case creat:
		return a.createPath(&r)
	}
	p, _, err := a.follow(&r)
	return p, err
}

// createPath follows the symlinks r ends in for an open with O_CREAT and
// returns where the file is or will be created.
func (a *Fs) createPath(r *resolved) (string, error) {
	for {
		p := r.path()
		fi, err := fs.Lstat(a.fsys, p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil // the layer creates or opens it
		}
		el, slash, err := a.link(r, p)
		if err != nil {
			return "", err
		}
		if slash || len(el) == 0 {
			return "", syscall.EISDIR
		}
		if err := a.walk(r, el[:len(el)-1]); err != nil {
			return "", err
		}
		if err := r.setLast(el[len(el)-1]); err != nil {
			return "", err
		}
		if r.last != lastNorm {
			return "", syscall.EISDIR
		}
	}
}

// Mkdir creates the directory name with mode perm.
func (a *Fs) Mkdir(name string, perm os.FileMode) error {
	p, ok := plain(name)
	if !ok {
		r, err := a.resolve(name)
		if err == nil && r.last != lastNorm {
			err = syscall.EEXIST // filename_create
		}
		if err != nil {
			return layer.PathError("mkdir", name, err)
		}
		p = r.path()
	}
	return fixErr(layer.Mkdir(a.fsys, p, perm), name, p)
}

// MkdirAll creates the directory name and any missing parents, as
// os.MkdirAll does: a decorated name is split as os splits it, into the
// string up to its last slash and the rest, over the Fs's own Stat, Mkdir
// and Lstat.
func (a *Fs) MkdirAll(name string, perm os.FileMode) error {
	if p, ok := plain(name); ok {
		return fixErr(layer.MkdirAll(a.fsys, p, perm), name, p)
	}
	if fi, err := a.Stat(name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return layer.PathError("mkdir", name, syscall.ENOTDIR)
	}
	i := len(name) - 1
	for i >= 0 && name[i] == '/' {
		i--
	}
	for i >= 0 && name[i] != '/' {
		i--
	}
	if i > 0 {
		if err := a.MkdirAll(name[:i], perm); err != nil {
			return err
		}
	}
	err := a.Mkdir(name, perm)
	if err != nil {
		// "foo/." exists when Mkdir says so.
		if fi, _, err1 := a.LstatIfPossible(name); err1 == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// Remove removes the file or empty directory name, as os.Remove does
// (unlink, then rmdir, and rmdir's error unless that is ENOTDIR): "." is
// EINVAL, ".." ENOTEMPTY and the root EBUSY, as rmdir gives; with a
// trailing slash name must be a directory (not a symlink to one).
func (a *Fs) Remove(name string) error {
	p, ok := plain(name)
	if !ok {
		var err error
		if p, err = a.removePath(name); err != nil {
			return layer.PathError("remove", name, err)
		}
	}
	return fixErr(layer.Remove(a.fsys, p), name, p)
}

func (a *Fs) removePath(name string) (string, error) {
	r, err := a.resolve(name)
	if err != nil {
		return "", err
	}
	switch r.last {
	case lastDot:
		return "", syscall.EINVAL
	case lastDotDot:
		return "", syscall.ENOTEMPTY
	case lastRoot:
		return "", syscall.EBUSY
	}
	p := r.path()
	if r.slash {
		fi, err := fs.Lstat(a.fsys, p)
		if err != nil {
			return "", cause(err)
		}
		if !fi.IsDir() {
			return "", syscall.ENOTDIR
		}
	}
	return p, nil
}

// RemoveAll removes name and everything it contains; a missing name is not
// an error. It follows os.RemoveAll (os/removeall_at.go) beyond the
// kernel's rules: "" is a no-op, a name ending in "." is EINVAL, and when
// Remove fails the last element is removed with all it holds from its
// parent, so that "f/" removes the file f and "d/.." empties d's parent.
// The root cannot be removed: RemoveAll("/") fails with EINVAL.
func (a *Fs) RemoveAll(name string) error {
	if p, ok := plain(name); ok {
		return fixErr(layer.RemoveAll(a.fsys, p), name, p)
	}
	switch {
	case name == "":
		return nil
	case endsWithDot(name) || strings.Trim(name, "/") == "":
		return layer.PathError("RemoveAll", name, syscall.EINVAL)
	}
	err := a.Remove(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	dir, base := splitPath(name)
	d, fi, err := a.physical(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return layer.PathError("open", dir, err)
	case !fi.IsDir():
		return layer.PathError("unlinkat", dir+"/"+base, syscall.ENOTDIR)
	}
	switch base {
	case ".", "..":
		// os opens the directory base names and removes what it
		// holds, then fails to rmdir it.
		if base == ".." {
			d = parent(d)
		}
		entries, err := fs.ReadDir(a.fsys, d)
		if err != nil {
			return fixErr(err, dir+"/"+base, d)
		}
		for _, e := range entries {
			p := join(d, e.Name())
			if err := layer.RemoveAll(a.fsys, p); err != nil {
				return fixErr(err, dir+"/"+base+"/"+e.Name(), p)
			}
		}
		if base == "." {
			return layer.PathError("unlinkat", dir+"/"+base, syscall.EINVAL)
		}
		return layer.PathError("unlinkat", dir+"/"+base, syscall.ENOTEMPTY)
	}
	p := join(d, base)
	return fixErr(layer.RemoveAll(a.fsys, p), dir+"/"+base, p)
}

// Rename renames oldname to newname, as os.Rename does: when newname is
// a directory, it fails with EEXIST unless oldname names that same
// directory by a different string, and otherwise it does what rename(2)
// does, which leaves a file or directory renamed onto itself alone.
func (a *Fs) Rename(oldname, newname string) error {
	p1, ok1 := plain(oldname)
	p2, ok2 := plain(newname)
	if !ok1 || !ok2 || (p1 == p2 && oldname != newname) {
		var err error
		if p1, p2, err = a.renamePaths(oldname, newname); err != nil || p1 == p2 {
			return err
		}
	}
	return fixLinkErr(layer.Rename(a.fsys, p1, p2), oldname, p1, newname, p2)
}

// renamePaths checks a rename as os.Rename and the kernel's
// do_renameat2 do and returns the two paths to give the layer, equal
// when the rename has nothing to do.
func (a *Fs) renamePaths(oldname, newname string) (p1, p2 string, err error) {
	fail := func(err error) (string, string, error) {
		return "", "", layer.LinkError("rename", oldname, newname, err)
	}
	if np, fi, err := a.lstatPhys(newname); err == nil && fi.IsDir() {
		op, _, err := a.lstatPhys(oldname)
		if err != nil {
			return fail(err)
		}
		if oldname == newname || op != np {
			return fail(syscall.EEXIST)
		}
	}
	r1, err := a.resolve(oldname)
	if err != nil {
		return fail(err)
	}
	// A new name too long is refused at its lookup, after the old one's.
	r2, err2 := a.resolve(newname)
	if err2 != nil && !r2.long {
		return fail(err2)
	}
	if r1.last != lastNorm || r2.last != lastNorm {
		return fail(syscall.EBUSY)
	}
	p1, p2 = r1.path(), r2.path()
	fi, err := fs.Lstat(a.fsys, p1)
	if err != nil {
		return fail(cause(err))
	}
	if err2 != nil {
		return fail(err2)
	}
	if !fi.IsDir() && (r1.slash || r2.slash) {
		return fail(syscall.ENOTDIR)
	}
	return p1, p2, nil
}

// lstatPhys returns what Lstat(name) describes and its io/fs path without
// symlinks, so that two names of one file give the same path.
func (a *Fs) lstatPhys(name string) (string, fs.FileInfo, error) {
	r, err := a.resolve(name)
	if err != nil {
		return "", nil, err
	}
	if r.last == lastNorm && !r.slash {
		p := r.path()
		fi, err := fs.Lstat(a.fsys, p)
		return p, fi, cause(err)
	}
	return a.follow(&r)
}

// Stat returns a description of name, following symlinks. Its Name is
// the last element of name, as os reports it ("." for "a/.").
func (a *Fs) Stat(name string) (os.FileInfo, error) {
	p, ok := plain(name)
	if !ok {
		var err error
		if p, err = a.lookup(name, false); err != nil {
			return nil, layer.PathError("stat", name, err)
		}
	}
	fi, err := fs.Stat(a.fsys, p)
	if err != nil {
		return nil, fixErr(err, name, p)
	}
	if !ok {
		fi = named(fi, name, p)
	}
	return fi, nil
}

// LstatIfPossible returns a description of name without following a final
// symlink, and true, when the file system has fs.ReadLinkFS; otherwise it
// returns Stat's result and false. A trailing slash follows a final
// symlink, as it does on Linux.
func (a *Fs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	_, can := a.fsys.(fs.ReadLinkFS)
	p, ok := plain(name)
	if !ok {
		var err error
		if p, err = a.lookup(name, true); err != nil {
			return nil, can, layer.PathError("lstat", name, err)
		}
	}
	fi, err := fs.Lstat(a.fsys, p)
	if err != nil {
		return nil, can, fixErr(err, name, p)
	}
	if !ok {
		fi = named(fi, name, p)
	}
	return fi, can, nil
}

// Chmod changes the mode of name, following symlinks.
func (a *Fs) Chmod(name string, mode os.FileMode) error {
	p, err := a.lookup(name, false)
	if err != nil {
		return layer.PathError("chmod", name, err)
	}
	return fixErr(layer.Chmod(a.fsys, p, mode), name, p)
}

// Chown changes the owner of name, following symlinks.
func (a *Fs) Chown(name string, uid, gid int) error {
	p, err := a.lookup(name, false)
	if err != nil {
		return layer.PathError("chown", name, err)
	}
	return fixErr(layer.Chown(a.fsys, p, uid, gid), name, p)
}

// Lchown changes the owner of name without following a final symlink, as
// os.Lchown does. afero.Fs has no Lchown; this is one for callers that
// know the type, and for layers that keep owners.
func (a *Fs) Lchown(name string, uid, gid int) error {
	p, err := a.lookup(name, true)
	if err != nil {
		return layer.PathError("lchown", name, err)
	}
	return fixErr(layer.Lchown(a.fsys, p, uid, gid), name, p)
}

// Lchtimes changes the times of name without following a final symlink,
// as utimensat with AT_SYMLINK_NOFOLLOW does, through
// [layer.LchtimesFS]; afero.Fs has no such method.
func (a *Fs) Lchtimes(name string, atime, mtime time.Time) error {
	p, err := a.lookup(name, true)
	if err != nil {
		return layer.PathError("lchtimes", name, err)
	}
	return fixErr(layer.Lchtimes(a.fsys, p, atime, mtime), name, p)
}

// Chtimes changes the access and modification times of name; a zero
// time.Time leaves that time as it was, as os.Chtimes does.
func (a *Fs) Chtimes(name string, atime, mtime time.Time) error {
	p, err := a.lookup(name, false)
	if err != nil {
		return layer.PathError("chtimes", name, err)
	}
	return fixErr(layer.Chtimes(a.fsys, p, atime, mtime), name, p)
}

// SymlinkIfPossible creates newname as a symbolic link to oldname. The
// target oldname is stored as given: a relative target is resolved from
// the link's directory, an absolute one from the root of the file system.
// An empty target is ENOENT whatever newname is, as symlink(2) checks it
// first.
func (a *Fs) SymlinkIfPossible(oldname, newname string) error {
	fail := func(err error) error { return layer.LinkError("symlink", oldname, newname, err) }
	switch {
	case oldname == "":
		return fail(syscall.ENOENT)
	case len(oldname) >= maxPath:
		return fail(syscall.ENAMETOOLONG)
	case strings.IndexByte(oldname, 0) >= 0:
		return fail(syscall.EINVAL)
	}
	if _, can := a.fsys.(layer.SymlinkFS); !can {
		return fail(errNoSymlink{afero.ErrNoSymlink})
	}
	p, ok := plain(newname)
	if !ok {
		r, err := a.resolve(newname)
		switch {
		case err != nil:
			return fail(err)
		case r.last != lastNorm:
			return fail(syscall.EEXIST)
		}
		p = r.path()
		if r.slash {
			// filename_create: an existing name is EEXIST, a
			// missing one ENOENT, as only mkdir may end in a slash.
			if _, err := fs.Lstat(a.fsys, p); err == nil {
				return fail(syscall.EEXIST)
			} else {
				return fail(cause(err))
			}
		}
	}
	return fixLinkErr(layer.Symlink(a.fsys, oldname, p), oldname, oldname, newname, p)
}

// ReadlinkIfPossible returns the target of the symbolic link name. A
// trailing slash follows the link, so that it names what the link points
// to, which is not a link: EINVAL, as on Linux.
func (a *Fs) ReadlinkIfPossible(name string) (string, error) {
	_, can1 := a.fsys.(layer.ReadlinkFS)
	_, can2 := a.fsys.(fs.ReadLinkFS)
	if !can1 && !can2 {
		return "", layer.PathError("readlink", name, errNoSymlink{afero.ErrNoReadlink})
	}
	p, ok := plain(name)
	if !ok {
		r, err := a.resolve(name)
		if err == nil && r.last == lastNorm && r.slash {
			_, _, err = a.follow(&r)
		}
		if err == nil && (r.last != lastNorm || r.slash) {
			err = syscall.EINVAL
		}
		if err != nil {
			return "", layer.PathError("readlink", name, err)
		}
		p = r.path()
	}
	target, err := layer.Readlink(a.fsys, p)
	return target, fixErr(err, name, p)
}

// named returns fi, which describes p, the io/fs path the caller's name
// resolved to, under the name os gives it: the last element of name.
// A plain name is p past its leading slashes, at no cost; a resolved one
// may end otherwise.
func named(fi fs.FileInfo, name, p string) fs.FileInfo {
	if strings.TrimLeft(name, "/") == p {
		return fi
	}
	if base := path.Base(name); fi.Name() != base {
		return namedInfo{fi, base}
	}
	return fi
}

// errNoSymlink is the error of a symlink operation the file system does
// not offer: it matches both errors.ErrUnsupported and afero's own error.
type errNoSymlink struct{ afero error }

func (e errNoSymlink) Error() string { return e.afero.Error() }
func (e errNoSymlink) Is(target error) bool {
	return target == errors.ErrUnsupported || target == e.afero
}
