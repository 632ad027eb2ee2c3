package dirfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

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

func (f *file) Seek(off int64, whence int) (int64, error) {
	n, err := f.f.Seek(off, whence)
	return n, f.fix(err)
}

func (f *file) Truncate(size int64) error { return f.fix(f.f.Truncate(size)) }
func (f *file) Sync() error               { return f.fix(f.f.Sync()) }
func (f *file) Close() error              { return f.fix(f.f.Close()) }

// ReadDir reads the directory's entries as os.File.ReadDir does.
func (f *file) ReadDir(n int) ([]fs.DirEntry, error) {
	list, err := f.f.ReadDir(n)
	if f.host == "" {
		list = wrapEntries(list, f.fsys, f.name)
	}
	return list, f.fix(err)
}

// dirEntry is an entry of a directory read through a descriptor: its Info
// lstats the entry through the FS, lazily, as os.ReadDir's entries do by
// path.
type dirEntry struct {
	fs.DirEntry
	fsys *FS
	dir  string
}

func (d *dirEntry) Info() (fs.FileInfo, error) {
	return d.fsys.Lstat(path.Join(d.dir, d.Name()))
}

func (d *dirEntry) String() string { return fs.FormatDirEntry(d) }

// wrapEntries wraps list in place with one allocation for all entries.
func wrapEntries(list []fs.DirEntry, fsys *FS, dir string) []fs.DirEntry {
	if fsys == nil || len(list) == 0 {
		return list
	}
	wrapped := make([]dirEntry, len(list))
	for i, e := range list {
		wrapped[i] = dirEntry{DirEntry: e, fsys: fsys, dir: dir}
		list[i] = &wrapped[i]
	}
	return list
}
