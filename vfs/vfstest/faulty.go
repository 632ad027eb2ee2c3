package vfstest

import (
	"errors"
	"io"
	"io/fs"
	"sync"
	"syscall"

	"github.com/packfs/packfs/vfs"
)

// ErrInjected is the error Faulty gives; it wraps syscall.EIO.
var ErrInjected = &injected{}

type injected struct{}

func (*injected) Error() string        { return "vfstest: injected I/O error" }
func (*injected) Unwrap() error        { return syscall.EIO }
func (*injected) Is(target error) bool { return target == syscall.EIO }

// Faulty wraps an FS and makes exactly one operation fail: the one whose
// number, counting from 0 across the FS and the files it opened, is
// FailAt. The failing operation has no effect. Closing a file is counted
// and can fail too, after releasing the file.
type Faulty struct {
	FS     vfs.FS
	FailAt int

	mu     sync.Mutex
	n      int
	failed string // the operation that failed and its name
}

var _ vfs.FS = (*Faulty)(nil)

// NewFaulty returns fsys with operation failAt failing.
func NewFaulty(fsys vfs.FS, failAt int) *Faulty { return &Faulty{FS: fsys, FailAt: failAt} }

// Count returns how many operations have been attempted.
func (f *Faulty) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Failed reports whether the failing operation has been reached.
func (f *Faulty) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n > f.FailAt
}

// Failure returns the operation that was made to fail and the name it
// was on, such as "allocate wal-1" or "sync wal-1"; "" before it.
func (f *Faulty) Failure() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *Faulty) fail(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.n
	f.n++
	if n == f.FailAt {
		f.failed = op + " " + name
		return &fs.PathError{Op: op, Path: name, Err: ErrInjected}
	}
	return nil
}

func (f *Faulty) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if err := f.fail("open", name); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	ff := &faultyFile{File: file, f: f, name: name}
	if _, ok := file.(mappable); ok {
		return &faultyMappable{ff}, nil
	}
	return ff, nil
}

// mappable is a file that can be mapped into memory (an *os.File).
type mappable interface{ Fd() uintptr }

// faultyMappable is a faultyFile whose file can be mapped, as the log maps
// its segments: reading the mapped pages is reading memory, which no
// fault reaches.
type faultyMappable struct{ *faultyFile }

func (fm *faultyMappable) Fd() uintptr { return fm.File.(mappable).Fd() }

func (f *Faulty) Rename(oldname, newname string) error {
	if err := f.fail("rename", oldname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *Faulty) Remove(name string) error {
	if err := f.fail("remove", name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *Faulty) ReadDir() ([]string, error) {
	if err := f.fail("readdir", "."); err != nil {
		return nil, err
	}
	return f.FS.ReadDir()
}

func (f *Faulty) SyncDir() error {
	if err := f.fail("syncdir", "."); err != nil {
		return err
	}
	return f.FS.SyncDir()
}

func (f *Faulty) Lock(name string) (io.Closer, error) {
	if err := f.fail("lock", name); err != nil {
		return nil, err
	}
	return f.FS.Lock(name)
}

type faultyFile struct {
	vfs.File
	f    *Faulty
	name string
}

func (ff *faultyFile) Write(p []byte) (int, error) {
	if err := ff.f.fail("write", ff.name); err != nil {
		return 0, err
	}
	return ff.File.Write(p)
}

func (ff *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if err := ff.f.fail("write", ff.name); err != nil {
		return 0, err
	}
	return ff.File.WriteAt(p, off)
}

func (ff *faultyFile) ReadAt(p []byte, off int64) (int, error) {
	if err := ff.f.fail("read", ff.name); err != nil {
		return 0, err
	}
	return ff.File.ReadAt(p, off)
}

func (ff *faultyFile) Sync() error {
	if err := ff.f.fail("sync", ff.name); err != nil {
		return err
	}
	return ff.File.Sync()
}

func (ff *faultyFile) Truncate(size int64) error {
	if err := ff.f.fail("truncate", ff.name); err != nil {
		return err
	}
	return ff.File.Truncate(size)
}

// Allocate is counted as an operation and can fail like one; a file
// beneath that cannot allocate gives errors.ErrUnsupported.
func (ff *faultyFile) Allocate(off, n int64) error {
	if err := ff.f.fail("allocate", ff.name); err != nil {
		return err
	}
	a, ok := ff.File.(vfs.Allocator)
	if !ok {
		return &fs.PathError{Op: "allocate", Path: ff.name, Err: errors.ErrUnsupported}
	}
	return a.Allocate(off, n)
}

func (ff *faultyFile) Size() (int64, error) {
	if err := ff.f.fail("stat", ff.name); err != nil {
		return 0, err
	}
	return ff.File.Size()
}

func (ff *faultyFile) Close() error {
	err := ff.File.Close()
	if ferr := ff.f.fail("close", ff.name); ferr != nil {
		return errors.Join(ferr, err)
	}
	return err
}
