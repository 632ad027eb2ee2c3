package mem

import (
	"io/fs"
	"syscall"
	"unicode/utf8"

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
	// slash: base, missing, came with a trailing slash (a symlink target
	// "x/"), so that it may only be made as a directory.
	slash bool
}

// walk resolves name from root, following symlinks in every element and in
// the last one too when follow is set, by the rules of package pathwalk.
// live is the layer when root is the live layer's, whose large
// directories' indexes may answer (see kidIndex); a snapshot's walk
// passes nil.
// The error is a bare errno or fs sentinel; callers wrap it with their Op.
func walk(root *entry, name string, follow bool, live *FS) (where, error) {
	w, _, err := walkPlain(root, name, follow, live)
	return w, err
}

// walkPlain is walk that also reports whether name was a plain path to
// what it found, with no symlink, "." or ".." on the way (walkNames
// resolved it): then name is the found entry's own path.
func walkPlain(root *entry, name string, follow bool, live *FS) (w where, plain bool, err error) {
	if w, ok := walkNames(root, name, follow, live); ok {
		return w, true, nil
	}
	w, _, err = walkTo(root, name, follow, false)
	return w, false, err
}

// walkNames is walk where that takes no more than looking each element up
// in turn, in one pass over name: every element a name (not "", "." or
// ".."), ASCII and at most pathwalk.MaxName bytes, each but the last a
// directory, no symlink on the way (nor at the end, with follow); the last
// one may be missing. It reports false for anything else, which walkTo then
// resolves from the start with every check in its order, so that the two
// agree: a path walkNames accepts is one walkTo finds the same way.
func walkNames(root *entry, name string, follow bool, live *FS) (where, bool) {
	if len(name) >= pathwalk.MaxPath {
		return where{}, false
	}
	dir, ds := root, root.state()
	for {
		i := 0
		for i < len(name) && name[i] != '/' {
			if name[i] >= utf8.RuneSelf {
				return where{}, false
			}
			i++
		}
		elem := name[:i]
		if i == 0 || i > pathwalk.MaxName || elem == "." || elem == ".." || !ds.isDir() {
			return where{}, false
		}
		child, ok := getKid(live, dir, ds, elem)
		if !ok {
			if i == len(name) {
				// Missing, as most names a union asks its upper
				// layer for are: where it would be.
				return where{dir: dir, base: elem}, true
			}
			return where{}, false
		}
		cs := child.state()
		if i == len(name) {
			if follow && cs.isSymlink() {
				return where{}, false
			}
			return where{dir: dir, base: elem, e: child}, true
		}
		if cs.isSymlink() {
			return where{}, false
		}
		dir, ds, name = child, cs, name[i+1:]
	}
}

// walkTo is walk that, when an element is missing, also returns where in
// name it starts, or -1 when it comes from a symlink's target, and when it
// is not the last, the directory it is missing from as where.dir. With
// create (an open with O_CREAT), a last element that came with a trailing
// slash is not looked up: as on Linux, such an open is EISDIR whatever is
// there, which where.slash tells.
func walkTo(root *entry, name string, follow, create bool) (where, int, error) {
	if !pathwalk.ValidPath(name) {
		return where{}, -1, fs.ErrInvalid
	}
	if name == "." {
		return where{base: ".", e: root}, -1, nil
	}
	w, err := pathwalk.New(name)
	if err != nil {
		return where{}, -1, err
	}
	var buf [16]*entry
	stack := buf[:0]
	if n := pathwalk.Depth(name); n > len(buf) {
		stack = make([]*entry, 0, n) // one allocation for a deep path
	}
	stack = append(stack, root)
	for {
		from := w.Offset()
		elem, step, last := w.Next()
		dir := stack[len(stack)-1]
		switch step {
		case pathwalk.Stay:
			if last {
				return where{base: ".", e: dir}, -1, nil
			}
			continue
		case pathwalk.Up:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			if last {
				return where{base: ".", e: stack[len(stack)-1]}, -1, nil
			}
			continue
		}
		if err := pathwalk.CheckElem(elem); err != nil {
			return where{}, -1, err
		}
		mustDir := last && w.Slash()
		if mustDir && create {
			return where{dir: dir, base: elem, slash: true}, -1, nil
		}
		child, ok := dir.state().children().Get(elem)
		if !ok {
			if last {
				return where{dir: dir, base: elem, slash: mustDir}, from, nil
			}
			return where{dir: dir}, from, syscall.ENOENT
		}
		cs := child.state()
		if cs.isSymlink() && (follow || !last || mustDir) {
			if pathwalk.TooLong(cs.data.Size()) {
				return where{}, -1, syscall.ENAMETOOLONG // refused before it is copied
			}
			target, _ := w.Target(cs.data, func() (string, error) { return cs.target(), nil })
			abs, err := w.Follow(target, last)
			if err != nil {
				return where{}, -1, err
			}
			if abs {
				stack = stack[:1]
			}
			continue
		}
		if last && !(mustDir && !cs.isDir()) {
			return where{dir: dir, base: elem, e: child}, -1, nil
		}
		if !cs.isDir() {
			return where{}, -1, syscall.ENOTDIR
		}
		stack = append(stack, child)
	}
}
