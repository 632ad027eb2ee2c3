package mem

import (
	"io/fs"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
)

// where is the result of resolving a path: the directory holding the final
// element, the element's name, and its entry, nil when it does not exist.
// The writer, which alone changes states, may read them through it.
// When the path names a directory by "." (the root, or a symlink target
// ending in "." or ".."), dir is nil and base is ".".
type where struct {
	dir  *entry
	base string
	e    *entry
}

// walk resolves name from root, following symlinks in every element and in
// the last one too when follow is set, by the rules of package pathwalk.
// The error is a bare errno or fs sentinel; callers wrap it with their Op.
func walk(root *entry, name string, follow bool) (where, error) {
	if !fs.ValidPath(name) {
		return where{}, fs.ErrInvalid
	}
	if name == "." {
		return where{base: ".", e: root}, nil
	}
	w, err := pathwalk.New(name)
	if err != nil {
		return where{}, err
	}
	var buf [16]*entry
	stack := append(buf[:0], root)
	for {
		elem, step, last := w.Next()
		dir := stack[len(stack)-1]
		switch step {
		case pathwalk.Stay:
			if last {
				return where{base: ".", e: dir}, nil
			}
			continue
		case pathwalk.Up:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			if last {
				return where{base: ".", e: stack[len(stack)-1]}, nil
			}
			continue
		}
		child, ok := dir.state().kids.Get(elem)
		if !ok {
			if last {
				return where{dir: dir, base: elem}, nil
			}
			return where{}, syscall.ENOENT
		}
		cs := child.state()
		if cs.isSymlink() && (follow || !last) {
			if pathwalk.TooLong(cs.data.Size()) {
				return where{}, syscall.ENAMETOOLONG // refused before it is copied
			}
			target, _ := w.Target(cs.data, func() (string, error) { return cs.target(), nil })
			abs, err := w.Follow(target, last)
			if err != nil {
				return where{}, err
			}
			if abs {
				stack = stack[:1]
			}
			continue
		}
		if last {
			return where{dir: dir, base: elem, e: child}, nil
		}
		if !cs.isDir() {
			return where{}, syscall.ENOTDIR
		}
		stack = append(stack, child)
	}
}
