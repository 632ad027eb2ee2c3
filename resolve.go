package packfs

import (
	"errors"
	"io/fs"
	"path"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

// node is a name as the union sees it: the topmost entry that stands for
// it, and, for a directory, every layer whose directory of the same name
// merges into it.
type node struct {
	path  string      // the union path, "." for the root
	info  fs.FileInfo // the topmost entry; nil when the name does not exist
	layer int         // the layer holding info
	dirs  []int       // a directory: the layers merged, top first
	// below reports that some lower layer holds the name, visibly or
	// hidden by a whiteout in the upper: removing or replacing it must
	// leave a whiteout, and a directory made there must be opaque.
	below bool
	// upperWhiteout reports that the upper layer holds a whiteout here.
	upperWhiteout bool
}

func (n *node) exists() bool { return n.info != nil }
func (n *node) isDir() bool  { return n.info != nil && n.info.IsDir() }

func (n *node) isSymlink() bool {
	return n.info != nil && n.info.Mode()&fs.ModeSymlink != 0
}

// root returns the node of the union's root directory. Which layers merge
// there is found once: the lowers never change, and the union never marks
// the upper's root opaque. Its info is the top layer's root, read each
// time, since writes change it.
func (u *FS) root() (*node, error) {
	u.rootOnce.Do(func() {
		for i, l := range u.layers {
			u.rootDirs = append(u.rootDirs, i)
			if i < len(u.layers)-1 && layer.IsOpaque(l, ".") {
				break
			}
		}
	})
	fi, err := fs.Stat(u.layers[0], ".")
	if err != nil {
		return nil, err
	}
	return &node{path: ".", info: fi, dirs: u.rootDirs}, nil
}

// lookup returns the node of name in the directory dir.
func (u *FS) lookup(dir *node, name string) (*node, error) {
	p := path.Join(dir.path, name)
	n := &node{path: p}
	for _, i := range dir.dirs {
		fi, err := fs.Lstat(u.layers[i], p)
		if err != nil {
			if isNotExist(err) {
				continue
			}
			return nil, err
		}
		if i > 0 {
			n.below = true
		}
		if layer.IsWhiteout(fi.Mode()) {
			if i == 0 {
				n.upperWhiteout = true
				// Keep looking only to learn whether a lower holds it.
				n.below = n.below || u.lowerHas(dir, p)
			}
			break
		}
		if n.info == nil {
			n.info, n.layer = fi, i
		} else if !fi.IsDir() || !n.info.IsDir() {
			break // only directories merge
		}
		if !fi.IsDir() {
			if i == 0 {
				n.below = u.lowerHas(dir, p)
			}
			break
		}
		n.dirs = append(n.dirs, i)
		// The bottom layer's opacity hides nothing.
		if i < len(u.layers)-1 && layer.IsOpaque(u.layers[i], p) {
			if i == 0 {
				n.below = u.lowerHas(dir, p)
			}
			break
		}
	}
	return n, nil
}

// lowerHas reports whether a lower layer merged into dir holds p.
func (u *FS) lowerHas(dir *node, p string) bool {
	for _, i := range dir.dirs {
		if i == 0 {
			continue
		}
		if _, err := fs.Lstat(u.layers[i], p); err == nil {
			return true
		}
	}
	return false
}

// walk resolves name, following symlinks in every element and in the last
// one too when follow is set, by the rules of package pathwalk applied to
// the union: a symlink of any layer resolves in the whole union. It
// returns the directory holding the last element and its node, which may
// not exist.
// The error is a bare errno or fs sentinel; callers wrap it.
func (u *FS) walk(name string, follow bool) (dir, n *node, err error) {
	if !fs.ValidPath(name) {
		return nil, nil, fs.ErrInvalid
	}
	root, err := u.root()
	if err != nil {
		return nil, nil, err
	}
	if name == "." {
		return nil, root, nil
	}
	stack := []*node{root}
	w := pathwalk.New(name)
	for {
		elem, step, last := w.Next()
		cur := stack[len(stack)-1]
		switch step {
		case pathwalk.Stay:
			if last {
				return nil, cur, nil
			}
			continue
		case pathwalk.Up:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			if last {
				return nil, stack[len(stack)-1], nil
			}
			continue
		}
		child, err := u.lookup(cur, elem)
		if err != nil {
			return nil, nil, err
		}
		if !child.exists() {
			if last {
				return cur, child, nil
			}
			return nil, nil, syscall.ENOENT
		}
		if child.isSymlink() && (follow || !last) {
			target, err := fs.ReadLink(u.layers[child.layer], child.path)
			if err != nil {
				return nil, nil, err
			}
			abs, err := w.Follow(target, last)
			if err != nil {
				return nil, nil, err
			}
			if abs {
				stack = stack[:1]
			}
			continue
		}
		if last {
			return cur, child, nil
		}
		if !child.isDir() {
			return nil, nil, syscall.ENOTDIR
		}
		stack = append(stack, child)
	}
}

// resolve is walk for names that must exist; errors are wrapped for op.
func (u *FS) resolve(op, name string, follow bool) (*node, error) {
	_, n, err := u.walk(name, follow)
	if err == nil && !n.exists() {
		err = syscall.ENOENT
	}
	if err != nil {
		return nil, layer.PathError(op, name, bare(err))
	}
	return n, nil
}

// bare strips the *fs.PathError a layer wrapped around an errno, so that
// the union's own error names the union's path.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
