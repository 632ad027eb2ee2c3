package conformance

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/packfs/packfs/layer"
)

// hostFS is a layer.FS over a host directory through plain package os: the
// reference side of the differential test. It joins io/fs paths to its
// directory without cleaning them (so "." stays "dir/."), refuses paths that
// are not fs.ValidPath with fs.ErrInvalid, and strips its directory from the
// paths of the errors os returns, so they read as the backend's should.
// Symlinks are not contained: the differential test only creates relative
// targets and skips operations whose resolution would leave the directory
// (see escapes).
type hostFS struct {
	dir string
}

var _ layer.FS = (*hostFS)(nil)

func (h *hostFS) join(name string) string { return h.dir + "/" + name }

// strip removes h.dir from the paths of err.
func (h *hostFS) strip(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		pe.Path = h.rel(pe.Path)
	case errors.As(err, &le):
		le.Old, le.New = h.rel(le.Old), h.rel(le.New)
	}
	return err
}

func (h *hostFS) rel(p string) string {
	if p == h.dir {
		return "."
	}
	if rest, ok := strings.CutPrefix(p, h.dir+"/"); ok {
		return rest
	}
	return p
}

func invalid(op, name string) error { return layer.PathError(op, name, fs.ErrInvalid) }

func (h *hostFS) Open(name string) (fs.File, error) {
	return h.OpenFile(name, os.O_RDONLY, 0)
}

func (h *hostFS) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("open", name)
	}
	f, err := os.OpenFile(h.join(name), flag, perm)
	if err != nil {
		return nil, h.strip(err)
	}
	return &hostFile{f: f, h: h, name: name}, nil
}

func (h *hostFS) Create(name string) (layer.File, error) {
	return h.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (h *hostFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("open", name)
	}
	data, err := os.ReadFile(h.join(name))
	return data, h.strip(err)
}

func (h *hostFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if !fs.ValidPath(name) {
		return invalid("open", name)
	}
	return h.strip(os.WriteFile(h.join(name), data, perm))
}

func (h *hostFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("open", name)
	}
	list, err := os.ReadDir(h.join(name))
	return list, h.strip(err)
}

func (h *hostFS) Stat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("stat", name)
	}
	fi, err := os.Stat(h.join(name))
	return fi, h.strip(err)
}

func (h *hostFS) Lstat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, invalid("lstat", name)
	}
	fi, err := os.Lstat(h.join(name))
	return fi, h.strip(err)
}

func (h *hostFS) ReadLink(name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", invalid("readlink", name)
	}
	target, err := os.Readlink(h.join(name))
	return target, h.strip(err)
}

func (h *hostFS) Readlink(name string) (string, error) { return h.ReadLink(name) }

func (h *hostFS) Mkdir(name string, perm fs.FileMode) error {
	if !fs.ValidPath(name) {
		return invalid("mkdir", name)
	}
	return h.strip(os.Mkdir(h.join(name), perm))
}

func (h *hostFS) MkdirAll(name string, perm fs.FileMode) error {
	if !fs.ValidPath(name) {
		return invalid("mkdir", name)
	}
	return h.strip(os.MkdirAll(h.join(name), perm))
}

func (h *hostFS) Remove(name string) error {
	if !fs.ValidPath(name) {
		return invalid("remove", name)
	}
	return h.strip(os.Remove(h.join(name)))
}

func (h *hostFS) RemoveAll(name string) error {
	if !fs.ValidPath(name) {
		return invalid("RemoveAll", name)
	}
	return h.strip(os.RemoveAll(h.join(name)))
}

func (h *hostFS) Rename(oldname, newname string) error {
	if !fs.ValidPath(oldname) || !fs.ValidPath(newname) {
		return layer.LinkError("rename", oldname, newname, fs.ErrInvalid)
	}
	return h.strip(os.Rename(h.join(oldname), h.join(newname)))
}

func (h *hostFS) Chmod(name string, mode fs.FileMode) error {
	if !fs.ValidPath(name) {
		return invalid("chmod", name)
	}
	return h.strip(os.Chmod(h.join(name), mode))
}

func (h *hostFS) Chown(name string, uid, gid int) error {
	if !fs.ValidPath(name) {
		return invalid("chown", name)
	}
	return h.strip(os.Chown(h.join(name), uid, gid))
}

func (h *hostFS) Lchown(name string, uid, gid int) error {
	if !fs.ValidPath(name) {
		return invalid("lchown", name)
	}
	return h.strip(os.Lchown(h.join(name), uid, gid))
}

func (h *hostFS) Chtimes(name string, atime, mtime time.Time) error {
	if !fs.ValidPath(name) {
		return invalid("chtimes", name)
	}
	return h.strip(os.Chtimes(h.join(name), atime, mtime))
}

// Lchtimes sets the times of name itself, a final symlink not followed.
func (h *hostFS) Lchtimes(name string, atime, mtime time.Time) error {
	if !fs.ValidPath(name) {
		return invalid("lchtimes", name)
	}
	return h.strip(lchtimes(h.join(name), atime, mtime))
}

func (h *hostFS) Symlink(oldname, newname string) error {
	if !fs.ValidPath(newname) {
		return layer.LinkError("symlink", oldname, newname, fs.ErrInvalid)
	}
	err := os.Symlink(oldname, h.join(newname))
	var le *os.LinkError
	if errors.As(err, &le) {
		le.New = h.rel(le.New) // Old is the target, given as is
		return err
	}
	return err
}

func (h *hostFS) Whiteout(name string) error {
	return layer.Unsupported("whiteout", name)
}

// escapes reports whether resolving name on the host, following symlinks
// (the last one too when followLast is set), would climb above h.dir, where
// the backend's root would stay at its root instead.
func (h *hostFS) escapes(name string, followLast bool) bool {
	var stack []string // resolved components below h.dir, none a symlink
	rest := strings.Split(name, "/")
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return true
			}
			stack = stack[:len(stack)-1]
			continue
		}
		p := h.dir + "/" + strings.Join(append(stack, c), "/")
		fi, err := os.Lstat(p)
		if err != nil {
			return false
		}
		if fi.Mode()&fs.ModeSymlink != 0 && (len(rest) > 0 || followLast) {
			if hops++; hops > 40 {
				return false
			}
			target, err := os.Readlink(p)
			if err != nil {
				return false
			}
			if strings.HasPrefix(target, "/") {
				return true
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		if !fi.IsDir() && len(rest) > 0 {
			return false
		}
		stack = append(stack, c)
	}
	return false
}

// hostFile is an *os.File of a hostFS whose errors and Name read as the
// backend's.
type hostFile struct {
	f    *os.File
	h    *hostFS
	name string
	// dir holds a directory's entries not yet returned, sorted, from the
	// first ReadDir until a rewind.
	dir    []fs.DirEntry
	listed bool
}

var _ layer.File = (*hostFile)(nil)

func (f *hostFile) Name() string { return f.name }

func (f *hostFile) Stat() (fs.FileInfo, error) {
	fi, err := f.f.Stat()
	return fi, f.h.strip(err)
}

func (f *hostFile) Read(p []byte) (int, error) {
	n, err := f.f.Read(p)
	return n, f.h.strip(err)
}

func (f *hostFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, f.h.strip(err)
}

func (f *hostFile) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, f.h.strip(err)
}

func (f *hostFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	return n, f.h.strip(err)
}

func (f *hostFile) WriteString(s string) (int, error) {
	n, err := f.f.WriteString(s)
	return n, f.h.strip(err)
}

// SeeksHoles reports that Seek takes SEEK_DATA and SEEK_HOLE, as lseek(2)
// does on Linux.
func (f *hostFile) SeeksHoles() bool { return runtime.GOOS == "linux" }

func (f *hostFile) Seek(off int64, whence int) (int64, error) {
	n, err := f.f.Seek(off, whence)
	if err == nil && n == 0 {
		f.dir, f.listed = nil, false // a rewound directory lists anew
	}
	return n, f.h.strip(err)
}

func (f *hostFile) Truncate(size int64) error { return f.h.strip(f.f.Truncate(size)) }
func (f *hostFile) Sync() error               { return f.h.strip(f.f.Sync()) }

func (f *hostFile) Close() error {
	f.dir, f.listed = nil, false // ReadDir asks the closed file again
	return f.h.strip(f.f.Close())
}

// ReadDir gives the batches in name order, the rule of every PackFS
// backend, and its entries' infos as os.File.Readdir takes them: relative
// to the open directory, so that they survive its rename.
func (f *hostFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if !f.listed {
		infos, err := f.f.Readdir(-1)
		if err != nil {
			return nil, f.h.strip(err)
		}
		f.dir, f.listed = layer.SortedEntries(infos), true
	}
	return layer.NextBatch(&f.dir, n)
}

// isRoot reports whether the process runs as root, which permission bits do
// not restrict.
func isRoot() bool { return os.Geteuid() == 0 }
