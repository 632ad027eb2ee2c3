package dirfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/packfs/packfs/layer"
)

// file is an open file of an FS. It is an *os.File whose Name and errors
// read as the io/fs name the caller gave, never the host path, and whose
// directory entries stat themselves through the FS (an *os.File made from a
// descriptor would lstat its entries by name relative to the working
// directory, outside the root).
type file struct {
	f    *os.File
	name string
	host string // host path f is named by, stripped from errors; "" when f is named name
	fsys *FS

	mu     sync.Mutex // guards what follows
	closed bool
	// dir holds a directory's entries not yet returned, sorted by name,
	// from the first ReadDir until a Seek rewinds it; listed says that
	// the listing was taken.
	dir    []fs.DirEntry
	listed bool
}

var _ layer.File = (*file)(nil)

func (f *file) Name() string { return f.name }

// fix rewrites the path of err, which names f by its host path when f came
// from os.Root, to the caller's name.
func (f *file) fix(err error) error {
	if err == nil || f.host == "" {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && (pe.Path == f.host || strings.HasPrefix(pe.Path, f.host+"/")) {
		pe.Path = f.name + pe.Path[len(f.host):]
	}
	return err
}

func (f *file) Stat() (fs.FileInfo, error) {
	fi, err := f.f.Stat()
	return fi, f.fix(err)
}

func (f *file) Read(p []byte) (int, error) {
	n, err := f.f.Read(p)
	return n, f.fix(err)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, f.fix(err)
}

func (f *file) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, f.fix(err)
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	return n, f.fix(err)
}

func (f *file) WriteString(s string) (int, error) {
	n, err := f.f.WriteString(s)
	return n, f.fix(err)
}

// SeeksHoles reports whether Seek takes layer.SeekData and
// layer.SeekHole, which it passes to lseek(2): on Linux.
func (f *file) SeeksHoles() bool { return runtime.GOOS == "linux" }

func (f *file) Seek(off int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.f.Seek(off, whence)
	if err == nil && n == 0 {
		// Rewinding a directory starts its listing anew. Another seek
		// (say Seek(0, io.SeekCurrent), asking where it is) keeps it.
		f.dir, f.listed = nil, false
	}
	return n, f.fix(err)
}

func (f *file) Truncate(size int64) error { return f.fix(f.f.Truncate(size)) }
func (f *file) Sync() error               { return f.fix(f.f.Sync()) }

func (f *file) Close() error {
	f.mu.Lock()
	f.closed, f.dir = true, nil
	f.mu.Unlock()
	return f.fix(f.f.Close())
}

// ReadDir reads the directory's next n entries as [fs.ReadDirFile]
// specifies, sorted by name as every PackFS backend gives them: the first
// call reads the whole directory and sorts it, later calls page through
// that listing. An entry's Info lstats it relative to the open directory
// while the file is open, as os.File.Readdir does, so that it survives a
// rename of the directory; after Close, by name.
func (f *file) ReadDir(n int) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, &fs.PathError{Op: "readdirent", Path: f.name, Err: fs.ErrClosed}
	}
	if !f.listed {
		list, err := f.f.ReadDir(-1)
		if err != nil {
			return nil, f.fix(err)
		}
		// Sort before wrapping, so that comparisons call os's Name directly.
		slices.SortFunc(list, byName)
		if f.host == "" {
			list = wrapEntries(list, f.fsys, f.name, f)
		}
		f.dir, f.listed = list, true
	} else if len(f.dir) == 0 && removed(f.f) {
		// Listed to the end, and removed since: getdents on a dead
		// directory is ENOENT, as os passes it on.
		return nil, &fs.PathError{Op: "readdirent", Path: f.name, Err: syscall.ENOENT}
	}
	return layer.NextBatch(&f.dir, n)
}

// dirEntry is an entry of a directory read through a descriptor: its Info
// lstats the entry lazily, relative to the directory's open file h when
// there is one and it is still open, and else through the FS by name, as
// os.ReadDir's entries do.
type dirEntry struct {
	fs.DirEntry
	fsys *FS
	dir  string
	h    *file
}

func (d *dirEntry) Info() (fs.FileInfo, error) {
	if d.h != nil {
		if fi, ok, err := d.h.statAt(d.Name()); ok {
			return fi, err
		}
	}
	return d.fsys.Lstat(path.Join(d.dir, d.Name()))
}

func (d *dirEntry) String() string { return fs.FormatDirEntry(d) }

// wrapEntries wraps list in place with one allocation for all entries.
func wrapEntries(list []fs.DirEntry, fsys *FS, dir string, h *file) []fs.DirEntry {
	if fsys == nil || len(list) == 0 {
		return list
	}
	wrapped := make([]dirEntry, len(list))
	for i, e := range list {
		wrapped[i] = dirEntry{DirEntry: e, fsys: fsys, dir: dir, h: h}
		list[i] = &wrapped[i]
	}
	return list
}
