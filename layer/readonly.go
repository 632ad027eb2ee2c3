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
// ReadDir use f's own methods when it has them. Once f is closed, a call
// that os would make a system call for fails with fs.ErrClosed, as os's
// does, wherever f tells (its Stat fails with fs.ErrClosed after Close,
// as os's and PackFS's files' do); os's checks of offsets still come
// first.
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
		return 0, f.fail("read", PathError("read", f.name, syscall.EINVAL))
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

// SeeksHoles reports whether f's file is a [HoleSeeker] that takes
// SeekData and SeekHole, which Seek passes on.
func (f ReadOnlyFile) SeeksHoles() bool {
	h, ok := f.File.(HoleSeeker)
	return ok && h.SeeksHoles()
}

func (f ReadOnlyFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if d, ok := f.File.(fs.ReadDirFile); ok {
		return d.ReadDir(n)
	}
	return nil, f.fail("readdirent", PathError("readdirent", f.name, syscall.ENOTDIR))
}

func (f ReadOnlyFile) Write([]byte) (int, error) {
	return 0, f.fail("write", PathError("write", f.name, syscall.EBADF))
}

func (f ReadOnlyFile) WriteAt(p []byte, off int64) (int, error) {
	switch {
	case off < 0:
		return 0, PathError("writeat", f.name, errors.New("negative offset"))
	case len(p) == 0:
		return 0, nil // as os: no system call, so no EBADF
	}
	return 0, f.fail("write", PathError("write", f.name, syscall.EBADF))
}

func (f ReadOnlyFile) WriteString(string) (int, error) {
	return 0, f.fail("write", PathError("write", f.name, syscall.EBADF))
}

func (f ReadOnlyFile) Truncate(int64) error {
	return f.fail("truncate", PathError("truncate", f.name, syscall.EINVAL))
}

// Sync has nothing to write: fsync of a file opened O_RDONLY succeeds.
func (f ReadOnlyFile) Sync() error { return f.fail("sync", nil) }

// fail returns err, or the error os gives for op on a closed file when f
// is closed: os's system call would fail with that first. It asks f's
// Stat, on paths that fail or do nothing, never on a read.
func (f ReadOnlyFile) fail(op string, err error) error {
	if _, serr := f.File.Stat(); errors.Is(serr, fs.ErrClosed) {
		return PathError(op, f.name, fs.ErrClosed)
	}
	return err
}
