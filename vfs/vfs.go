// Package vfs is the small file-system seam that PackFS's durable store
// writes through: its write-ahead log, its packs and its manifest live in
// one flat directory reached only through [FS]. The production [Dir] is
// the host directory through package os; package vfs/vfstest holds an
// in-memory directory that can lose what a power cut loses, and a wrapper
// that makes any operation fail, so that recovery can be tested at every
// step.
//
// The directory is flat: names are single path elements, never "." or
// "..", and carry no separator.
package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
)

// FS is a flat directory of files.
type FS interface {
	// OpenFile opens name with os.OpenFile's flags and permission.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Rename replaces newname by oldname, atomically, as rename(2) does.
	Rename(oldname, newname string) error
	// Remove removes the file name.
	Remove(name string) error
	// ReadDir returns the names in the directory, sorted.
	ReadDir() ([]string, error)
	// SyncDir makes the directory's entries durable: the names created,
	// renamed and removed before it survive a crash after it returns.
	SyncDir() error
	// Lock takes an exclusive lock named name, without waiting: it fails
	// with ErrLocked while another holder, in this process or another,
	// has it. Closing the result releases the lock.
	Lock(name string) (io.Closer, error)
}

// File is an open file of an FS.
type File interface {
	io.Writer
	io.WriterAt
	io.ReaderAt
	io.Closer
	// Sync makes the file's contents and size durable.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Size returns the file's current size.
	Size() (int64, error)
}

// Allocator is a File that can reserve its blocks ahead of its writes: a
// writer that appends in large steps then writes within the file's size,
// into blocks that exist. Allocate(off, n) extends the file to off+n
// bytes at least, the new bytes reading as zeros; it does not make them
// durable. A failed Allocate may have extended the file part of the way;
// one the file system cannot do wraps errors.ErrUnsupported.
type Allocator interface {
	Allocate(off, n int64) error
}

// ReadFile reads the whole file name of fsys. A file shorter than its
// size when opened gives io.ErrUnexpectedEOF.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if n, err := f.ReadAt(data, 0); n < len(data) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return data, nil
}

// ErrLocked is what Lock gives while another holder has the lock.
var ErrLocked = errors.New("vfs: locked by another holder")

// ValidName reports whether name is a file name of a flat directory.
func ValidName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// checkName wraps fs.ErrInvalid for a name that is not a flat file name.
func checkName(op, name string) error {
	if !ValidName(name) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}
