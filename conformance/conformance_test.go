package conformance

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/testsize"

	"github.com/packfs/packfs/layer"
)

// The suite checks itself against the systems whose behaviour it encodes:
// plain os (hostFS, the differential test's reference side) and a thin
// layer over *os.Root. Both must pass with no divergence, which validates
// the suite's expectations.

func newHostFS(t *testing.T) layer.FS {
	return &hostFS{dir: fastTempDir(t)}
}

// fastTempDir returns a new directory on tmpfs where there is one.
func fastTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "conformance-self-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// quickWide keeps the quick run's wide tree at 500 entries on the host,
// whose every call is a system call; the full run has 20,000.
func quickWide() []Option {
	if testsize.Short() {
		return []Option{WithWideEntries(500)}
	}
	return nil
}

func TestHost(t *testing.T) {
	Run(t, newHostFS, quickWide()...)
}

func TestRoot(t *testing.T) {
	Run(t, newRootFS,
		Skip("SymlinkChain", "os.Root follows at most 8 symlinks (Linux: 40)"),
		Skip("TestFS", "the read checks on os are TestHost's and TestReadOnly's; os.Root adds nothing to them but minutes"),
		Skip("NameLimits", "os.Root resolves a name element by element, so a path past PATH_MAX is ENOENT at its first missing element"),
		Skip("SymlinkEmptyTarget", "os.Root resolves newname's parent before symlinkat sees the empty target"),
		Skip("SetgidMkdir", "os.Root.Mkdir refuses mode bits other than the permission bits"),
		Skip("OpenDirectoryFlag", "os.Root opens a final symlink to a directory under O_NOFOLLOW|O_DIRECTORY (Linux: ENOTDIR)"))
}

func TestReadOnly(t *testing.T) {
	withUmask0(t)
	RunReadOnly(t, func(t *testing.T, tree Tree) fs.FS {
		dir := t.TempDir()
		if err := Populate(&hostFS{dir: dir}, tree); err != nil {
			t.Fatal(err)
		}
		return os.DirFS(dir)
	}, quickWide()...)
}

// rootFS is a layer.FS over *os.Root. It renames the Ops of os.Root's
// errors ("mkdirat", "statat", ...) to those of the os functions, and
// implements MkdirAll as os.MkdirAll does (os.Root's follows a dangling
// symlink and creates its target).
type rootFS struct {
	root *os.Root
}

func newRootFS(t *testing.T) layer.FS {
	root, err := os.OpenRoot(fastTempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &rootFS{root: root}
}

var _ layer.FS = (*rootFS)(nil)

// osOp gives err the Op of the os function, for errors that os.Root names
// by its system calls.
func osOp(err error, op string) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe) && strings.HasSuffix(pe.Op, "at"):
		pe.Op = op
	case errors.As(err, &le) && strings.HasSuffix(le.Op, "at"):
		le.Op = op
	}
	return err
}

func (r *rootFS) file(f *os.File, name string) layer.File {
	return &hostFile{f: f, h: &hostFS{dir: r.root.Name()}, name: name}
}

func (r *rootFS) Open(name string) (fs.File, error) { return r.OpenFile(name, os.O_RDONLY, 0) }

func (r *rootFS) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("open", name)
	}
	f, err := r.root.OpenFile(name, flag, perm)
	if err != nil {
		return nil, osOp(err, "open")
	}
	return r.file(f, name), nil
}

func (r *rootFS) Create(name string) (layer.File, error) {
	return r.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (r *rootFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("open", name)
	}
	data, err := r.root.ReadFile(name)
	return data, (&hostFS{dir: r.root.Name()}).strip(osOp(err, "open"))
}

func (r *rootFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if !fs.ValidPath(name) {
		return invalid("open", name)
	}
	return (&hostFS{dir: r.root.Name()}).strip(osOp(r.root.WriteFile(name, data, perm), "open"))
}

func (r *rootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("open", name)
	}
	// os.ReadDir opens with O_DIRECTORY: a file is ENOTDIR at "open".
	f, err := r.root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, osOp(err, "open")
	}
	defer f.Close()
	list, err := r.file(f, name).ReadDir(-1)
	slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return list, err
}

func (r *rootFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("stat", name)
	}
	fi, err := r.root.Stat(name)
	return fi, osOp(err, "stat")
}

func (r *rootFS) Lstat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("lstat", name)
	}
	fi, err := r.root.Lstat(name)
	return fi, osOp(err, "lstat")
}

func (r *rootFS) ReadLink(name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", invalid("readlink", name)
	}
	target, err := r.root.Readlink(name)
	return target, osOp(err, "readlink")
}

func (r *rootFS) Readlink(name string) (string, error) { return r.ReadLink(name) }

func (r *rootFS) Mkdir(name string, perm fs.FileMode) error {
	if !fs.ValidPath(name) {
		return invalid("mkdir", name)
	}
	return osOp(r.root.Mkdir(name, perm), "mkdir")
}

func (r *rootFS) MkdirAll(name string, perm fs.FileMode) error {
	if !fs.ValidPath(name) {
		return invalid("mkdir", name)
	}
	fi, err := r.root.Stat(name)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return layer.PathError("mkdir", name, syscall.ENOTDIR)
	}
	if parent := path.Dir(name); parent != "." {
		if err := r.MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := r.root.Mkdir(name, perm); err != nil {
		if fi, lerr := r.root.Lstat(name); lerr == nil && fi.IsDir() {
			return nil
		}
		return osOp(err, "mkdir")
	}
	return nil
}

func (r *rootFS) Remove(name string) error {
	if !fs.ValidPath(name) {
		return invalid("remove", name)
	}
	return osOp(r.root.Remove(name), "remove")
}

func (r *rootFS) RemoveAll(name string) error {
	if !fs.ValidPath(name) {
		return invalid("RemoveAll", name)
	}
	return r.root.RemoveAll(name)
}

func (r *rootFS) Rename(oldname, newname string) error {
	if !fs.ValidPath(oldname) || !fs.ValidPath(newname) {
		return layer.LinkError("rename", oldname, newname, fs.ErrInvalid)
	}
	// os.Rename refuses an existing directory as newname unless it is
	// oldname's file under another name; os.Root compares only the last
	// elements of the two names.
	if ofi, err := r.root.Lstat(oldname); err == nil && ofi.IsDir() && oldname != newname {
		if nfi, err := r.root.Lstat(newname); err == nil && os.SameFile(ofi, nfi) {
			return nil
		}
	}
	return osOp(r.root.Rename(oldname, newname), "rename")
}

func (r *rootFS) Chmod(name string, mode fs.FileMode) error {
	if !fs.ValidPath(name) {
		return invalid("chmod", name)
	}
	return osOp(r.root.Chmod(name, mode), "chmod")
}

func (r *rootFS) Chown(name string, uid, gid int) error {
	if !fs.ValidPath(name) {
		return invalid("chown", name)
	}
	return osOp(r.root.Chown(name, uid, gid), "chown")
}

func (r *rootFS) Lchown(name string, uid, gid int) error {
	if !fs.ValidPath(name) {
		return invalid("lchown", name)
	}
	return osOp(r.root.Lchown(name, uid, gid), "lchown")
}

func (r *rootFS) Chtimes(name string, atime, mtime time.Time) error {
	if !fs.ValidPath(name) {
		return invalid("chtimes", name)
	}
	return osOp(r.root.Chtimes(name, atime, mtime), "chtimes")
}

func (r *rootFS) Symlink(oldname, newname string) error {
	if !fs.ValidPath(newname) {
		return layer.LinkError("symlink", oldname, newname, fs.ErrInvalid)
	}
	return osOp(r.root.Symlink(oldname, newname), "symlink")
}

func (r *rootFS) Whiteout(name string) error {
	return layer.Unsupported("whiteout", name)
}
