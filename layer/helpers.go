package layer

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/packfs/packfs/internal/pathwalk"
)

// writeFlags are the flags that make an open more than a read: without
// them, any fs.FS can serve it through Open (O_EXCL means nothing without
// O_CREATE, and O_APPEND nothing without write access, as on Linux).
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC

// OpenFile opens name with flag and perm. Without [OpenFileFS] it serves
// read-only opens through fsys.Open (the file refuses writes with EBADF) and
// returns an error wrapping errors.ErrUnsupported for the rest.
func OpenFile(fsys fs.FS, name string, flag int, perm fs.FileMode) (File, error) {
	if f, ok := fsys.(OpenFileFS); ok {
		return f.OpenFile(name, flag, perm)
	}
	if flag&writeFlags != 0 {
		return nil, Unsupported("open", name)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	return ReadOnly(f, name), nil
}

// Create creates or truncates name for reading and writing with mode 0666,
// as [os.Create] does, using [CreateFS] or else [OpenFile].
func Create(fsys fs.FS, name string) (File, error) {
	if f, ok := fsys.(CreateFS); ok {
		return f.Create(name)
	}
	return OpenFile(fsys, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Mkdir creates the directory name with mode perm.
func Mkdir(fsys fs.FS, name string, perm fs.FileMode) error {
	if f, ok := fsys.(MkdirFS); ok {
		return f.Mkdir(name, perm)
	}
	return Unsupported("mkdir", name)
}

// MkdirAll creates name and any missing parents with mode perm, as
// [os.MkdirAll] does: an existing directory is not an error, an existing
// non-directory is syscall.ENOTDIR. Without [MkdirAllFS] it calls Mkdir for
// each missing element.
func MkdirAll(fsys fs.FS, name string, perm fs.FileMode) error {
	if f, ok := fsys.(MkdirAllFS); ok {
		return f.MkdirAll(name, perm)
	}
	if fi, err := fs.Stat(fsys, name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return PathError("mkdir", name, syscall.ENOTDIR)
	}
	if !pathwalk.ValidPath(name) {
		return PathError("mkdir", name, fs.ErrInvalid)
	}
	if parent := path.Dir(name); parent != "." {
		if err := MkdirAll(fsys, parent, perm); err != nil {
			return err
		}
	}
	err := Mkdir(fsys, name, perm)
	if err != nil {
		// Someone else may have made it meanwhile, as os.MkdirAll allows.
		if fi, serr := fs.Lstat(fsys, name); serr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// Remove removes the file or empty directory name.
func Remove(fsys fs.FS, name string) error {
	if f, ok := fsys.(RemoveFS); ok {
		return f.Remove(name)
	}
	return Unsupported("remove", name)
}

// RemoveAll removes name and everything below it, as [os.RemoveAll] does: a
// missing name is not an error. Without [RemoveAllFS] it walks the tree and
// calls Remove for each entry, deepest first.
func RemoveAll(fsys fs.FS, name string) error {
	if f, ok := fsys.(RemoveAllFS); ok {
		return f.RemoveAll(name)
	}
	if !pathwalk.ValidPath(name) || name == "." {
		return PathError("RemoveAll", name, syscall.EINVAL)
	}
	if _, ok := fsys.(RemoveFS); !ok {
		return Unsupported("RemoveAll", name)
	}
	return removeAll(fsys, name)
}

func removeAll(fsys fs.FS, name string) error {
	err := Remove(fsys, name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fi, serr := fs.Lstat(fsys, name)
	if serr != nil {
		if errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
		return serr
	}
	if !fi.IsDir() {
		return err
	}
	entries, rerr := fs.ReadDir(fsys, name)
	if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return rerr
	}
	for _, e := range entries {
		if err := removeAll(fsys, path.Join(name, e.Name())); err != nil {
			return err
		}
	}
	err = Remove(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Rename renames oldname to newname.
func Rename(fsys fs.FS, oldname, newname string) error {
	if f, ok := fsys.(RenameFS); ok {
		return f.Rename(oldname, newname)
	}
	return LinkError("rename", oldname, newname, errors.ErrUnsupported)
}

// Link creates newname as a hard link to oldname.
func Link(fsys fs.FS, oldname, newname string) error {
	if f, ok := fsys.(LinkFS); ok {
		return f.Link(oldname, newname)
	}
	return LinkError("link", oldname, newname, errors.ErrUnsupported)
}

// Chmod changes the mode of name, following a final symlink.
func Chmod(fsys fs.FS, name string, mode fs.FileMode) error {
	if f, ok := fsys.(ChmodFS); ok {
		return f.Chmod(name, mode)
	}
	return Unsupported("chmod", name)
}

// Chown changes the owner of name, following a final symlink.
func Chown(fsys fs.FS, name string, uid, gid int) error {
	if f, ok := fsys.(ChownFS); ok {
		return f.Chown(name, uid, gid)
	}
	return Unsupported("chown", name)
}

// Lchown changes the owner of name without following a final symlink.
func Lchown(fsys fs.FS, name string, uid, gid int) error {
	if f, ok := fsys.(LchownFS); ok {
		return f.Lchown(name, uid, gid)
	}
	return Unsupported("lchown", name)
}

// Chtimes changes the access and modification times of name; a zero
// time.Time leaves that time as it was.
func Chtimes(fsys fs.FS, name string, atime, mtime time.Time) error {
	if f, ok := fsys.(ChtimesFS); ok {
		return f.Chtimes(name, atime, mtime)
	}
	return Unsupported("chtimes", name)
}

// Symlink creates newname as a symbolic link to oldname.
func Symlink(fsys fs.FS, oldname, newname string) error {
	if f, ok := fsys.(SymlinkFS); ok {
		return f.Symlink(oldname, newname)
	}
	return LinkError("symlink", oldname, newname, errors.ErrUnsupported)
}

// Readlink returns the target of the symbolic link name, using
// [ReadlinkFS] or [fs.ReadLinkFS].
func Readlink(fsys fs.FS, name string) (string, error) {
	if f, ok := fsys.(ReadlinkFS); ok {
		return f.Readlink(name)
	}
	return fs.ReadLink(fsys, name)
}

// WriteFile writes data to name, creating it with perm if needed and
// truncating it otherwise, as [os.WriteFile] does. Without [WriteFileFS] it
// uses [OpenFile].
func WriteFile(fsys fs.FS, name string, data []byte, perm fs.FileMode) error {
	if f, ok := fsys.(WriteFileFS); ok {
		return f.WriteFile(name, data, perm)
	}
	return WriteFileByOpenFile(fsys, name, data, perm)
}

// WriteFileByOpenFile writes data to name through [OpenFile], Write and
// Close, as [os.WriteFile] does: the WriteFile of a layer that has no
// better way, and WriteFile's fallback.
func WriteFileByOpenFile(fsys fs.FS, name string, data []byte, perm fs.FileMode) error {
	f, err := OpenFile(fsys, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Whiteout records a whiteout at name (see [WhiteoutFS]).
func Whiteout(fsys fs.FS, name string) error {
	if f, ok := fsys.(WhiteoutFS); ok {
		return f.Whiteout(name)
	}
	return Unsupported("whiteout", name)
}
