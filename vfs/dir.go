package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Dir is a host directory as an FS, through package os.
type Dir struct {
	path string
}

var _ FS = (*Dir)(nil)

// OpenDir returns the host directory path as an FS, creating it (and its
// parents, with mode 0755) if it does not exist.
func OpenDir(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	return &Dir{path: path}, nil
}

// Path returns the host path of the file name in the directory, for
// callers that map files (packs are mmap'd).
func (d *Dir) Path(name string) string { return filepath.Join(d.path, name) }

// OpenFile opens name in the directory.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if err := checkName("open", name); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(d.Path(name), flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Rename renames oldname to newname within the directory.
func (d *Dir) Rename(oldname, newname string) error {
	if err := checkName("rename", oldname); err != nil {
		return err
	}
	if err := checkName("rename", newname); err != nil {
		return err
	}
	return os.Rename(d.Path(oldname), d.Path(newname))
}

// Remove removes name.
func (d *Dir) Remove(name string) error {
	if err := checkName("remove", name); err != nil {
		return err
	}
	return os.Remove(d.Path(name))
}

// ReadDir returns the directory's names, sorted.
func (d *Dir) ReadDir() ([]string, error) {
	f, err := os.Open(d.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// SyncDir fsyncs the directory.
func (d *Dir) SyncDir() error {
	f, err := os.Open(d.path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// held guards against a second Lock of one file within the process:
// flock(2) locks belong to open file descriptions, so a second open of
// the same file in this process would otherwise be granted the lock too.
var held sync.Map // host path → struct{}

// Lock takes flock(2)'s exclusive lock on the file name, creating it.
func (d *Dir) Lock(name string) (io.Closer, error) {
	if err := checkName("lock", name); err != nil {
		return nil, err
	}
	p := d.Path(name)
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if _, loaded := held.LoadOrStore(p, struct{}{}); loaded {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: ErrLocked}
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		held.Delete(p)
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		held.Delete(p)
		if errors.Is(err, unix.EWOULDBLOCK) {
			err = ErrLocked
		}
		return nil, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
	return &lock{f: f, path: p}, nil
}

type lock struct {
	once sync.Once
	f    *os.File
	path string
}

func (l *lock) Close() error {
	err := fs.ErrClosed
	l.once.Do(func() {
		err = l.f.Close() // closing the descriptor releases the flock
		held.Delete(l.path)
	})
	return err
}

// osFile is an *os.File whose Sync is fdatasync(2): a log appends, and
// fdatasync flushes the size change with the data, but skips the inode's
// timestamps, which nothing here reads back.
type osFile struct{ *os.File }

func (f osFile) Sync() error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &fs.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// Allocate is fallocate(2) with no flags: the file's blocks from off for
// n bytes are reserved and its size covers them, reading as zeros, so that
// writes into them need no new blocks and change no size.
func (f osFile) Allocate(off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, off, n)
		if err != unix.EINTR {
			if err != nil {
				return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

func (f osFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
