package packfs

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// maxName is Linux's NAME_MAX, the longest name of one element.
const maxName = 255

// mkdirAll is MkdirAll in one walk, for the common case: the path's
// elements resolve to directories up to one that is missing, which comes
// from name itself rather than a symlink's target. It makes that one with
// Mkdir (an opaque one where a lower layer's entry was removed) and the
// rest below it, which no lower layer can hold, in one step of the upper
// layer where it offers CopyIn. It reports false, having changed nothing,
// for every other case, which MkdirAll's recursion serves with the errors
// os.MkdirAll gives.
func (u *FS) mkdirAll(name string, perm fs.FileMode) (bool, error) {
	if len(name) >= pathwalk.MaxPath {
		// Fail whole, before making anything: os.MkdirAll would make the
		// parents that fit, but a failed operation here changes nothing,
		// so that the store, which logs only what succeeds, never holds
		// changes its log lacks.
		return true, layer.PathError("mkdir", name, syscall.ENAMETOOLONG)
	}
	if u.upper == nil || u.mounts.Load() != nil {
		return false, nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	root, err := u.root()
	if err != nil {
		return false, nil
	}
	dir, n, from, err := u.walkTo(root, name, true, false)
	switch {
	case err == nil && n.exists():
		if n.isDir() {
			return true, nil
		}
		return true, layer.PathError("mkdir", name, syscall.ENOTDIR)
	case err != nil && !errors.Is(err, syscall.ENOENT), from < 0, dir == nil:
		return false, nil
	}
	for e := range strings.SplitSeq(name[from:], "/") {
		if len(e) > maxName {
			// As for PATH_MAX: refused before anything is made.
			return true, layer.PathError("mkdir", name, syscall.ENAMETOOLONG)
		}
	}
	first, more, _ := strings.Cut(name[from:], "/")
	c, err := u.lookup(dir, first)
	if err == nil {
		err = u.mkdirAt(dir, c, perm)
	}
	if err == nil && more != "" {
		if ci, ok := u.upper.(copyInFS); ok {
			// The rest inherit setgid from the one Mkdir made, as Mkdir
			// would have given it to each.
			mode := fs.ModeDir | perm&^fs.ModeSetgid
			if fi, err := fs.Stat(u.upper, c.path); err == nil {
				mode |= fi.Mode() & fs.ModeSetgid
			}
			elems := strings.Split(more, "/")
			chain := make([]mem.Copy, len(elems))
			for i, e := range elems {
				chain[i] = mem.Copy{Name: e, Mode: mode}
			}
			err = ci.CopyIn(c.path, chain)
		} else {
			err = layer.MkdirAll(u.upper, c.path+"/"+more, perm)
		}
	}
	if err != nil {
		return true, layer.PathError("mkdir", name, bare(err))
	}
	return true, nil
}
