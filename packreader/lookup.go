package packreader

import (
	"syscall"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/pathwalk"
)

var _ pathwalk.LookupFS = (*Reader)(nil)

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
