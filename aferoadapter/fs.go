package aferoadapter

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/packfs/packfs/layer"
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
//     [layer.ChownFS]; Chtimes: [layer.ChtimesFS];
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
	p, ok := ioPath(name)
	if !ok {
		return nil, escapes("open", name)
	}
	f, err := layer.OpenFile(a.fsys, p, flag, perm)
	if err != nil {
		return nil, fixErr(err, name, p)
	}
	return &File{f: f, name: name, path: p}, nil
}

// Mkdir creates the directory name with mode perm.
func (a *Fs) Mkdir(name string, perm os.FileMode) error {
	p, ok := ioPath(name)
	if !ok {
		return escapes("mkdir", name)
	}
	return fixErr(layer.Mkdir(a.fsys, p, perm), name, p)
}

// MkdirAll creates the directory name and any missing parents, as
// os.MkdirAll does.
func (a *Fs) MkdirAll(name string, perm os.FileMode) error {
	p, ok := ioPath(name)
	if !ok {
		return escapes("mkdir", name)
	}
	return fixErr(layer.MkdirAll(a.fsys, p, perm), name, p)
}

// Remove removes the file or empty directory name.
func (a *Fs) Remove(name string) error {
	p, ok := ioPath(name)
	if !ok {
		return escapes("remove", name)
	}
	return fixErr(layer.Remove(a.fsys, p), name, p)
}

// RemoveAll removes name and everything it contains; a missing name is not
// an error. The root cannot be removed: RemoveAll("/") fails with EINVAL,
// as os.RemoveAll does for a path ending in ".".
func (a *Fs) RemoveAll(name string) error {
	p, ok := ioPath(name)
	if !ok {
		return escapes("RemoveAll", name)
	}
	return fixErr(layer.RemoveAll(a.fsys, p), name, p)
}

// Rename renames oldname to newname, as os.Rename does.
func (a *Fs) Rename(oldname, newname string) error {
	p1, ok1 := ioPath(oldname)
	p2, ok2 := ioPath(newname)
	if !ok1 || !ok2 {
		return layer.LinkError("rename", oldname, newname, errEscapes)
	}
	return fixLinkErr(layer.Rename(a.fsys, p1, p2), oldname, p1, newname, p2)
}

// Stat returns a description of name, following symlinks.
func (a *Fs) Stat(name string) (os.FileInfo, error) {
	p, ok := ioPath(name)
	if !ok {
		return nil, escapes("stat", name)
	}
	fi, err := fs.Stat(a.fsys, p)
	if err != nil {
		return nil, fixErr(err, name, p)
	}
	return fi, nil
}

// LstatIfPossible returns a description of name without following a final
// symlink, and true, when the file system has fs.ReadLinkFS; otherwise it
// returns Stat's result and false.
func (a *Fs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	_, can := a.fsys.(fs.ReadLinkFS)
	p, ok := ioPath(name)
	if !ok {
		return nil, can, escapes("lstat", name)
	}
	fi, err := fs.Lstat(a.fsys, p)
	if err != nil {
		return nil, can, fixErr(err, name, p)
	}
	return fi, can, nil
}

// Chmod changes the mode of name, following symlinks.
func (a *Fs) Chmod(name string, mode os.FileMode) error {
	p, ok := ioPath(name)
	if !ok {
		return escapes("chmod", name)
	}
	return fixErr(layer.Chmod(a.fsys, p, mode), name, p)
}

// Chown changes the owner of name, following symlinks.
func (a *Fs) Chown(name string, uid, gid int) error {
	p, ok := ioPath(name)
	if !ok {
		return escapes("chown", name)
	}
	return fixErr(layer.Chown(a.fsys, p, uid, gid), name, p)
}

// Chtimes changes the access and modification times of name; a zero
// time.Time leaves that time as it was, as os.Chtimes does.
func (a *Fs) Chtimes(name string, atime, mtime time.Time) error {
	p, ok := ioPath(name)
	if !ok {
		return escapes("chtimes", name)
	}
	return fixErr(layer.Chtimes(a.fsys, p, atime, mtime), name, p)
}

// SymlinkIfPossible creates newname as a symbolic link to oldname. The
// target oldname is stored as given: a relative target is resolved from
// the link's directory, an absolute one from the root of the file system.
func (a *Fs) SymlinkIfPossible(oldname, newname string) error {
	p, ok := ioPath(newname)
	if !ok {
		return layer.LinkError("symlink", oldname, newname, errEscapes)
	}
	if _, can := a.fsys.(layer.SymlinkFS); !can {
		return layer.LinkError("symlink", oldname, newname, errNoSymlink{afero.ErrNoSymlink})
	}
	return fixLinkErr(layer.Symlink(a.fsys, oldname, p), oldname, oldname, newname, p)
}

// ReadlinkIfPossible returns the target of the symbolic link name.
func (a *Fs) ReadlinkIfPossible(name string) (string, error) {
	p, ok := ioPath(name)
	if !ok {
		return "", escapes("readlink", name)
	}
	_, can1 := a.fsys.(layer.ReadlinkFS)
	_, can2 := a.fsys.(fs.ReadLinkFS)
	if !can1 && !can2 {
		return "", layer.PathError("readlink", name, errNoSymlink{afero.ErrNoReadlink})
	}
	target, err := layer.Readlink(a.fsys, p)
	return target, fixErr(err, name, p)
}

// errNoSymlink is the error of a symlink operation the file system does
// not offer: it matches both errors.ErrUnsupported and afero's own error.
type errNoSymlink struct{ afero error }

func (e errNoSymlink) Error() string { return e.afero.Error() }
func (e errNoSymlink) Is(target error) bool {
	return target == errors.ErrUnsupported || target == e.afero
}
