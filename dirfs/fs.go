package dirfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs/layer"
)

// FS is a host directory as a layer: every path it is given is resolved
// beneath its root. It is safe for concurrent use; its methods are the
// system calls, so what concurrent callers see is what the kernel does.
type FS struct {
	impl     impl
	dir      string
	readOnly bool
	viaRoot  bool
}

var (
	_ layer.FS      = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.ReadFileFS = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
	_ fs.ReadLinkFS = (*FS)(nil)
)

// impl is one way of resolving names beneath the root: openat2 (at_linux.go)
// or os.Root (root.go). Names it receives are valid io/fs paths; the errors
// it returns already carry os's Op and the caller's name.
type impl interface {
	openFile(name string, flag int, perm fs.FileMode) (*file, error)
	stat(name string, follow bool) (fs.FileInfo, error)
	readDir(name string) ([]fs.DirEntry, error)
	mkdir(name string, perm fs.FileMode) error
	remove(name string) error
	removeAll(name string) error
	rename(oldname, newname string) error
	chmod(name string, mode fs.FileMode) error
	chown(name string, uid, gid int, follow bool) error
	chtimes(name string, atime, mtime time.Time) error
	lchtimes(name string, atime, mtime time.Time) error
	symlink(oldname, newname string) error
	readlink(name string) (string, error)
	whiteout(name string) error
	close() error
}

// Option configures [New].
type Option func(*options)

type options struct {
	forceRoot  bool
	readOnly   bool
	walkAlways bool // for tests: see atImpl.walkAlways
}

// ForceRoot makes New resolve names through [os.Root] even where openat2 is
// available, as it does where openat2 is missing. The build tag
// dirfs_forceroot sets it for every FS.
func ForceRoot() Option { return func(o *options) { o.forceRoot = true } }

// ReadOnly makes every write fail with syscall.EROFS, as on a read-only
// mount, and opens files for reading only: an FS for use as a union's lower
// layer.
func ReadOnly() Option { return func(o *options) { o.readOnly = true } }

// New returns the directory root as an FS. root is a host path; it must name
// a directory, which the FS keeps open until Close.
func New(root string, opts ...Option) (*FS, error) {
	o := options{forceRoot: forceRootTag}
	for _, opt := range opts {
		opt(&o)
	}
	f := &FS{dir: root, readOnly: o.readOnly}
	if !o.forceRoot {
		a, err := newAt(root, f, o)
		if err != nil && err != errNoOpenat2 {
			return nil, err
		}
		if err == nil {
			f.impl = a
			return f, nil
		}
	}
	r, err := newRoot(root)
	if err != nil {
		return nil, err
	}
	f.impl, f.viaRoot = r, true
	return f, nil
}

// Close releases the root directory; calls in progress finish first, later
// calls fail with fs.ErrClosed, and a second Close does nothing. Files opened
// from f stay usable.
func (f *FS) Close() error { return f.impl.close() }

// ViaRoot reports whether f resolves names through os.Root rather than
// openat2.
func (f *FS) ViaRoot() bool { return f.viaRoot }

// Dir returns the host path f was created with.
func (f *FS) Dir() string { return f.dir }

func (f *FS) Open(name string) (fs.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

// writeFlags are the flags of OpenFile that modify the file system.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND

func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	if err := layer.CheckOpenFlag(flag); err != nil {
		return nil, layer.PathError("open", name, err)
	}
	if err := checkPath("open", name); err != nil {
		return nil, err
	}
	if f.readOnly && flag&writeFlags != 0 {
		return nil, readOnlyErr("open", name)
	}
	file, err := f.impl.openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	file.fsys = f
	return file, nil
}

func (f *FS) Create(name string) (layer.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (f *FS) ReadFile(name string) ([]byte, error) {
	fl, err := f.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	return readAll(fl.(*file))
}

// readAll reads f to its end as os.ReadFile does, sizing the buffer from
// fstat.
func readAll(f *file) ([]byte, error) {
	size := 0
	if fi, err := f.f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = int(fi.Size())
	}
	data := make([]byte, 0, max(size+1, 512))
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			if err == io.EOF {
				return data, nil
			}
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

func (f *FS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return layer.WriteFileByOpenFile(f, name, data, perm)
}

// ReadDir returns the entries of the directory name sorted by name, as
// os.ReadDir does: the entries' types come from the directory itself, and
// Info lstats each entry when called.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := checkPath("open", name); err != nil {
		return nil, err
	}
	return f.impl.readDir(name)
}

// byName orders directory entries as os.ReadDir does.
func byName(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }

func (f *FS) Stat(name string) (fs.FileInfo, error) {
	if err := checkPath("stat", name); err != nil {
		return nil, err
	}
	return f.impl.stat(name, true)
}

func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	if err := checkPath("lstat", name); err != nil {
		return nil, err
	}
	return f.impl.stat(name, false)
}

func (f *FS) ReadLink(name string) (string, error) {
	if err := checkPath("readlink", name); err != nil {
		return "", err
	}
	return f.impl.readlink(name)
}

// Readlink is ReadLink with os.Root's spelling.
func (f *FS) Readlink(name string) (string, error) { return f.ReadLink(name) }

func (f *FS) Mkdir(name string, perm fs.FileMode) error {
	if err := checkPath("mkdir", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("mkdir", name)
	}
	return f.impl.mkdir(name, perm)
}

// MkdirAll creates name and any missing parents as os.MkdirAll does: an
// existing directory (or a symlink to one) is success, anything else at
// name is ENOTDIR.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	if err := checkPath("mkdir", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("mkdir", name)
	}
	return f.mkdirAll(name, perm)
}

func (f *FS) mkdirAll(name string, perm fs.FileMode) error {
	if fi, err := f.impl.stat(name, true); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.ENOTDIR}
	}
	if parent := path.Dir(name); parent != "." {
		if err := f.mkdirAll(parent, perm); err != nil {
			return err
		}
	}
	err := f.impl.mkdir(name, perm)
	if err != nil {
		if fi, lerr := f.impl.stat(name, false); lerr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

func (f *FS) Remove(name string) error {
	if err := checkPath("remove", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("remove", name)
	}
	return f.impl.remove(name)
}

// RemoveAll removes name and what it contains, as os.RemoveAll does: a
// missing name is not an error, and "." is EINVAL.
func (f *FS) RemoveAll(name string) error {
	if err := checkPath("RemoveAll", name); err != nil {
		return err
	}
	if name == "." {
		return &fs.PathError{Op: "RemoveAll", Path: name, Err: syscall.EINVAL}
	}
	if f.readOnly {
		return readOnlyErr("RemoveAll", name)
	}
	return f.impl.removeAll(name)
}

func (f *FS) Rename(oldname, newname string) error {
	if err := checkLink("rename", oldname, newname); err != nil {
		return err
	}
	if f.readOnly {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: syscall.EROFS}
	}
	// os.Rename refuses to replace a directory unless it is oldname's own
	// file under another name (a case-only rename), and reports a bad
	// oldname first.
	if nfi, err := f.impl.stat(newname, false); err == nil && nfi.IsDir() {
		ofi, err := f.impl.stat(oldname, false)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
		}
		if newname == oldname || !sameFile(ofi, nfi) {
			return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: syscall.EEXIST}
		}
		// The same directory under two names (through a symlink): the
		// kernel's rename does nothing, but os.Root compares the last
		// elements only and refuses; do nothing for both.
		return nil
	}
	return f.impl.rename(oldname, newname)
}

func (f *FS) Chmod(name string, mode fs.FileMode) error {
	if err := checkPath("chmod", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("chmod", name)
	}
	return f.impl.chmod(name, mode)
}

func (f *FS) Chown(name string, uid, gid int) error {
	if err := checkPath("chown", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("chown", name)
	}
	return f.impl.chown(name, uid, gid, true)
}

func (f *FS) Lchown(name string, uid, gid int) error {
	if err := checkPath("lchown", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("lchown", name)
	}
	return f.impl.chown(name, uid, gid, false)
}

func (f *FS) Chtimes(name string, atime, mtime time.Time) error {
	if err := checkPath("chtimes", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("chtimes", name)
	}
	return f.impl.chtimes(name, atime, mtime)
}

// Lchtimes is Chtimes without following a final symlink: it sets a
// symlink's own times, as utimensat with AT_SYMLINK_NOFOLLOW does.
func (f *FS) Lchtimes(name string, atime, mtime time.Time) error {
	if err := checkPath("lchtimes", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("lchtimes", name)
	}
	return f.impl.lchtimes(name, atime, mtime)
}

// Symlink creates newname as a symlink to oldname. The target is stored
// verbatim, whatever it is, as os.Symlink stores it: an absolute or
// escaping target is harmless until followed, and following it is an error
// wrapping ErrEscapes.
func (f *FS) Symlink(oldname, newname string) error {
	if !fs.ValidPath(newname) {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: invalidErr(newname)}
	}
	// The target's checks come before newname is resolved, as in
	// symlink(2): an empty target is ENOENT whatever newname is.
	if err := layer.CheckSymlink(oldname, newname); err != nil {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: err}
	}
	if f.readOnly {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: syscall.EROFS}
	}
	return f.impl.symlink(oldname, newname)
}

// Whiteout records a whiteout at name as overlayfs does: a 0/0 character
// device. Making one needs CAP_MKNOD; without it the error wraps
// errors.ErrUnsupported, as it does through the os.Root fallback.
func (f *FS) Whiteout(name string) error {
	if err := checkPath("whiteout", name); err != nil {
		return err
	}
	if f.readOnly {
		return readOnlyErr("whiteout", name)
	}
	return f.impl.whiteout(name)
}

// syscallMode converts a FileMode to the mode bits of the system calls, as
// os does.
func syscallMode(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		o |= syscall.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		o |= syscall.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		o |= syscall.S_ISVTX
	}
	return o
}
