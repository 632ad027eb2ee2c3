package layer

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"syscall"
)

// ReadOnly presents f, opened as name, as a [File] that refuses every write
// with syscall.EBADF, as a file opened O_RDONLY does. ReadAt, Seek and
// ReadDir use f's own methods when it has them.
func ReadOnly(f fs.File, name string) File {
	return ReadOnlyFile{f, name}
}

// ReadOnlyFile is the File that ReadOnly returns, for a caller that keeps
// one inside its own handle rather than pay an allocation for it.
type ReadOnlyFile struct {
	fs.File
	name string
}

// MakeReadOnly returns what ReadOnly(f, name) returns, as a value.
func MakeReadOnly(f fs.File, name string) ReadOnlyFile { return ReadOnlyFile{f, name} }

func (f ReadOnlyFile) Name() string { return f.name }

// ReadAt reads with f's ReadAt after os's checks of the offset: a negative
// one is os's "negative offset", and one whose end passes math.MaxInt64 is
// EINVAL, as Linux gives.
func (f ReadOnlyFile) ReadAt(p []byte, off int64) (int, error) {
	switch {
	case off < 0:
		return 0, PathError("readat", f.name, errors.New("negative offset"))
	case off > math.MaxInt64-int64(len(p)):
		return 0, PathError("read", f.name, syscall.EINVAL)
	}
	if r, ok := f.File.(io.ReaderAt); ok {
		return r.ReadAt(p, off)
	}
	return 0, PathError("read", f.name, errors.ErrUnsupported)
}

func (f ReadOnlyFile) Seek(offset int64, whence int) (int64, error) {
	if s, ok := f.File.(io.Seeker); ok {
		return s.Seek(offset, whence)
	}
	return 0, PathError("seek", f.name, errors.ErrUnsupported)
}

func (f ReadOnlyFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if d, ok := f.File.(fs.ReadDirFile); ok {
		return d.ReadDir(n)
	}
	return nil, PathError("readdirent", f.name, syscall.ENOTDIR)
}

func (f ReadOnlyFile) Write([]byte) (int, error) {
	return 0, PathError("write", f.name, syscall.EBADF)
}

func (f ReadOnlyFile) WriteAt(p []byte, off int64) (int, error) {
	switch {
	case off < 0:
		return 0, PathError("writeat", f.name, errors.New("negative offset"))
	case len(p) == 0:
		return 0, nil // as os: no system call, so no EBADF
	}
	return 0, PathError("write", f.name, syscall.EBADF)
}

func (f ReadOnlyFile) WriteString(string) (int, error) {
	return 0, PathError("write", f.name, syscall.EBADF)
}

func (f ReadOnlyFile) Truncate(int64) error {
	return PathError("truncate", f.name, syscall.EINVAL)
}

func (f ReadOnlyFile) Sync() error { return nil }
