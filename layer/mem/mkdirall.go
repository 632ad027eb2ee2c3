package mem

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

// mkdirAll is MkdirAll in one walk, for the common case: the path's
// elements resolve to directories up to one that is missing, which comes
// from name itself rather than a symlink's target. It makes that one and
// every one below it in one step. It reports false, having changed
// nothing, for every other case, which MkdirAll's recursion serves with
// the errors os.MkdirAll gives.
func (f *FS) mkdirAll(name string, perm fs.FileMode) (bool, error) {
	done := false
	err := f.update(func(root *entry, now int64) error {
		w, from, err := walkTo(root, name, true, false)
		if errors.Is(err, syscall.ENAMETOOLONG) && len(name) >= pathwalk.MaxPath {
			// Fail whole, before making anything, where os.MkdirAll would
			// make the parents that fit: a failed operation changes
			// nothing.
			done = true
			return err
		}
		if err != nil && !errors.Is(err, syscall.ENOENT) || from < 0 || w.dir == nil {
			return nil
		}
		elems := strings.Split(name[from:], "/")
		for _, e := range elems {
			if len(e) > maxName || strings.IndexByte(e, 0) >= 0 {
				return nil // Mkdir's checks give the error
			}
		}
		// As Mkdir: each new directory is setgid when its parent is, so
		// all of them when the first one's parent is.
		// and they take its group then, as link gives the first.
		parent := w.dir.state()
		mode := fs.ModeDir | perm&dirModeMask | parent.mode&fs.ModeSetgid
		var below *entry
		for i := len(elems) - 1; i >= 0; i-- {
			e := f.create(state{mode: mode, mtime: now})
			if mode&fs.ModeSetgid != 0 {
				inheritGroup(parent, e.state())
			}
			if below != nil {
				n := strings.Clone(elems[i+1])
				below.ino.parent.Store(e.ino)
				below.name = n
				st := e.state()
				st.dir.kids = st.dir.kids.Set(n, below)
			}
			below = e
		}
		f.link(w.dir, strings.Clone(elems[0]), below, now)
		done = true
		return nil
	})
	if err != nil {
		return true, layer.PathError("mkdir", name, err)
	}
	return done, nil
}
