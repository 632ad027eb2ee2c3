// Package workload holds the file systems the benchmarks compare and the
// workloads they time on them, shared by the benchmark runner and the go
// test benchmarks of memfsbench and aferobench. Every file system, PackFS's
// or an alternative, is wrapped in FS and driven by the same functions,
// each through that file system's own idiomatic API (mem.FS.Create,
// os.Create, afero.Fs.Create, billy.Filesystem.Create, ...), so that the
// timings compare the file systems and not the harness.
package workload

import (
	"errors"
	"io"
)

// FS is one file system under test. Names passed to its methods are made
// by Path beforehand, so that building names stays out of timed code.
type FS interface {
	// Path turns a slash-separated name relative to the root into the
	// name the file system's API takes.
	Path(rel string) string
	// Create creates or truncates name, writes data unless it is empty,
	// and closes the file.
	Create(name string, data []byte) error
	ReadFile(name string) ([]byte, error)
	// WriteFile replaces the contents of name with data.
	WriteFile(name string, data []byte) error
	Stat(name string) error
	// ReadDir lists the directory name and returns how many entries it
	// holds.
	ReadDir(name string) (int, error)
	Mkdir(name string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes name and everything below it; a missing name is
	// not an error.
	RemoveAll(name string) error
	// OpenWrite creates or truncates name for writing.
	OpenWrite(name string) (io.WriteCloser, error)
	OpenRead(name string) (io.ReadCloser, error)
	// Close releases the file system; a host one removes its directory.
	Close() error
}

// ErrReadOnly is returned by the write methods of a read-only FS.
var ErrReadOnly = errors.New("workload: read-only file system")

// Kind names a file system and makes new, empty ones.
type Kind struct {
	// Name is the label in every table: "mem", "os", "memmapfs", ...
	Name string
	// Ours marks PackFS's own backends; the others are alternatives.
	Ours bool
	// Host marks file systems kept in a host directory: they run once per
	// place (the temporary directory, tmpfs).
	Host bool
	// Concurrent marks file systems safe for use by many goroutines.
	Concurrent bool
	// New returns a new, empty file system; dir is a new, empty host
	// directory that it owns (removed by Close) when Host is set, and ""
	// otherwise.
	New func(dir string) (FS, error)
}

// Kinds of every writable file system, PackFS's first.
var (
	KindMem      = Kind{Name: "mem", Ours: true, Concurrent: true, New: newMem}
	KindUnion    = Kind{Name: "union", Ours: true, Concurrent: true, New: newUnion}
	KindDirfs    = Kind{Name: "dirfs", Ours: true, Host: true, Concurrent: true, New: newDirfs}
	KindAdapter  = Kind{Name: "adapter", Ours: true, Concurrent: true, New: newAdapter}
	KindOS       = Kind{Name: "os", Host: true, Concurrent: true, New: newOS}
	KindOSFsync  = Kind{Name: "os+fsync", Host: true, Concurrent: true, New: newOSFsync}
	KindOSRoot   = Kind{Name: "os.Root", Host: true, Concurrent: true, New: newOSRoot}
	KindMemMapFs = Kind{Name: "memmapfs", Concurrent: true, New: newMemMapFs}
	KindOsFs     = Kind{Name: "afero-osfs", Host: true, Concurrent: true, New: newAferoOsFs}
	// billy's memfs keeps its tree in maps without a lock: one goroutine
	// at a time.
	KindBilly = Kind{Name: "billy-memfs", New: newBilly}
)
