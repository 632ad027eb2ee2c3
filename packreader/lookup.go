package packreader

import (
	"io/fs"
	"syscall"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/pathwalk"
)

var (
	_ pathwalk.OpenAtFS     = (*Reader)(nil)
	_ pathwalk.ReadFileAtFS = (*Reader)(nil)
)

// dirAt returns the directory a LookupAt handle names: its record index
// (nil: the root) and record. The caller holds r.mu.
func (r *Reader) dirAt(dir pathwalk.Dir) (uint64, packformat.Record, error) {
	i, ok := dir.(uint64)
	if !ok {
		return 0, r.root, nil
	}
	rc, err := r.rec(i)
	if err == nil && rc.Type != packformat.TypeDir {
		err = syscall.ENOTDIR
	}
	return i, rc, err
}

// LookupAt looks name up in a directory found by an earlier LookupAt (nil:
// the root), for a union's resolution: one binary search, whatever the
// directory's depth. The handle of a directory is its record's index.
func (r *Reader) LookupAt(dir pathwalk.Dir, name string) (_ pathwalk.Entry, err error) {
	g, err := r.rlock("lstat", name)
	if err != nil {
		return pathwalk.Entry{}, err
	}
	defer r.runlock("lstat", name, g, &err)
	d, dr, err := r.dirAt(dir)
	if err != nil {
		return pathwalk.Entry{}, err
	}
	ci, cr, ok, err := r.lookup(d, dr, name)
	switch {
	case err != nil:
		return pathwalk.Entry{}, err
	case !ok:
		return pathwalk.Entry{}, syscall.ENOENT
	}
	e := pathwalk.Entry{Info: r.info(name, ci, cr)}
	if cr.Type == packformat.TypeDir {
		e.Dir = ci
		e.Opaque = cr.Flags&packformat.FlagOpaque != 0
	}
	return e, nil
}

// ReadLinkAt returns the target of the symlink name in dir.
func (r *Reader) ReadLinkAt(dir pathwalk.Dir, name string) (_ string, err error) {
	g, err := r.rlock("readlink", name)
	if err != nil {
		return "", err
	}
	defer r.runlock("readlink", name, g, &err)
	d, dr, err := r.dirAt(dir)
	if err != nil {
		return "", err
	}
	_, cr, ok, err := r.lookup(d, dr, name)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", syscall.ENOENT
	case cr.Type != packformat.TypeSymlink:
		return "", syscall.EINVAL
	}
	return r.target(cr)
}

// OpenAt opens the regular file name of dir for reading in one binary
// search, as Open would open path, which names it in the file's Stat and
// errors. Anything else than a regular file opens nothing.
func (r *Reader) OpenAt(dir pathwalk.Dir, name, path string) (fs.File, error) {
	return r.OpenAtIn(nil, dir, name, path)
}

// FileRoom is room for a file of a pack, which a caller embeds in its own
// handle of the file so that OpenAtIn opens both in one allocation. Its
// zero value is empty; it holds the file OpenAtIn returns until that is
// closed.
type FileRoom struct{ f file }

// OpenAtIn is OpenAt opening the file in room (nil: a new one), which it
// leaves as it was on error.
func (r *Reader) OpenAtIn(room *FileRoom, dir pathwalk.Dir, name, path string) (_ fs.File, err error) {
	g, err := r.rlock("open", path)
	if err != nil {
		return nil, err
	}
	defer r.runlock("open", path, g, &err)
	ci, cr, err := r.fileAt(dir, name)
	if err != nil {
		return nil, pathErr("open", path, err)
	}
	if room == nil {
		room = new(FileRoom)
	}
	room.f = file{r: r, name: path, i: ci, rc: cr}
	return &room.f, nil
}

// ReadFileAt returns a copy of the regular file name of dir, as ReadFile
// would return path's, in one binary search (see pathwalk.ReadFileAtFS).
// Anything else than a regular file reads nothing.
func (r *Reader) ReadFileAt(dir pathwalk.Dir, name, path string) (_ []byte, err error) {
	g, err := r.rlock("open", path)
	if err != nil {
		return nil, err
	}
	defer r.runlock("open", path, g, &err)
	ci, cr, err := r.fileAt(dir, name)
	if err != nil {
		return nil, pathErr("open", path, err)
	}
	return r.readRecord(path, ci, cr)
}

// fileAt returns the record of name in dir when it is a regular file.
// The caller holds r.mu.
func (r *Reader) fileAt(dir pathwalk.Dir, name string) (uint64, packformat.Record, error) {
	d, dr, err := r.dirAt(dir)
	if err != nil {
		return 0, packformat.Record{}, err
	}
	ci, cr, ok, err := r.lookup(d, dr, name)
	switch {
	case err != nil:
		return 0, packformat.Record{}, err
	case !ok:
		return 0, packformat.Record{}, syscall.ENOENT
	case cr.Type == packformat.TypeDir:
		return 0, packformat.Record{}, syscall.EISDIR
	case cr.Type == packformat.TypeSymlink:
		return 0, packformat.Record{}, syscall.ELOOP
	case cr.Type != packformat.TypeFile:
		return 0, packformat.Record{}, syscall.EINVAL
	}
	return ci, cr, nil
}
