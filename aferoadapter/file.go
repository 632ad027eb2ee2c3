package aferoadapter

import (
	"errors"
	"io/fs"
	"os"

	"github.com/packfs/packfs/layer"
	"github.com/spf13/afero"
)

// File is an open file of an [Fs]: an afero.File over a layer.File.
type File struct {
	f    layer.File
	name string // as the caller passed it
	path string // the io/fs path the layer was given
}

var (
	_ afero.File     = (*File)(nil)
	_ fs.ReadDirFile = (*File)(nil)
	_ layer.File     = (*File)(nil)
)

func (f *File) fix(err error) error { return fixErr(err, f.name, f.path) }

// fixDir is fix for the errors of a directory read, where a layer over the
// host (dirfs) passes on what os.File.ReadDir gives after Close: an error
// of internal/poll, "use of closed file", which matches no sentinel. It
// becomes fs.ErrClosed, as every other method of a closed file gives.
func (f *File) fixDir(err error) error {
	if pe, ok := err.(*fs.PathError); ok && pe.Err != nil && pe.Err.Error() == "use of closed file" {
		err = &fs.PathError{Op: pe.Op, Path: pe.Path, Err: fs.ErrClosed}
	}
	return f.fix(err)
}

// Name returns the name as it was passed to Open, OpenFile or Create, as
// os.File.Name does.
func (f *File) Name() string { return f.name }

func (f *File) Close() error { return f.fix(f.f.Close()) }

func (f *File) Read(p []byte) (int, error) {
	n, err := f.f.Read(p)
	return n, f.fix(err)
}

func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, f.fix(err)
}

// Seek sets the offset for the next Read or Write.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	n, err := f.f.Seek(offset, whence)
	return n, f.fix(err)
}

func (f *File) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, f.fix(err)
}

// WriteAt writes p at off without moving the offset, as os does; a file
// opened with O_APPEND refuses it.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	return n, f.fix(err)
}

func (f *File) WriteString(s string) (int, error) {
	n, err := f.f.WriteString(s)
	return n, f.fix(err)
}

// Stat describes the file under the last element of the name it was
// opened by, as os does.
func (f *File) Stat() (os.FileInfo, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return nil, f.fix(err)
	}
	return named(fi, f.name, f.path), nil
}

func (f *File) Sync() error { return f.fix(f.f.Sync()) }

func (f *File) Truncate(size int64) error { return f.fix(f.f.Truncate(size)) }

// ReadDir reads the directory's next n entries, as fs.ReadDirFile
// specifies.
func (f *File) ReadDir(n int) ([]fs.DirEntry, error) {
	list, err := f.f.ReadDir(n)
	return list, f.fixDir(err)
}

// Readdir reads the directory's next n entries as FileInfos, with the
// rules of os.File.Readdir: for n > 0, at most n, and an empty slice with
// io.EOF at the end; for n <= 0, all that remain with a nil error. The
// slice is never nil. An entry removed since the directory was listed is
// left out, as os leaves it out. On a closed file it fails with an error
// wrapping fs.ErrClosed, where os's matches no sentinel.
func (f *File) Readdir(n int) ([]os.FileInfo, error) {
	var infos []os.FileInfo
	for {
		list, err := f.f.ReadDir(n)
		if infos == nil {
			infos = make([]os.FileInfo, 0, len(list))
		}
		for _, e := range list {
			fi, ierr := e.Info()
			if ierr != nil {
				if errors.Is(ierr, fs.ErrNotExist) {
					continue
				}
				return infos, f.fix(ierr)
			}
			infos = append(infos, fi)
		}
		if err != nil || n <= 0 || len(infos) > 0 || len(list) == 0 {
			return infos, f.fixDir(err)
		}
	}
}

// Readdirnames reads the directory's next n names, with the rules of
// os.File.Readdirnames (see Readdir).
func (f *File) Readdirnames(n int) ([]string, error) {
	list, err := f.f.ReadDir(n)
	names := make([]string, len(list))
	for i, e := range list {
		names[i] = e.Name()
	}
	return names, f.fixDir(err)
}
