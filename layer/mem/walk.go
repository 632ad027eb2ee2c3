package mem

import (
	"io/fs"
	"strings"
	"syscall"
)

// maxSymlinks is how many symlinks one resolution may follow before it
// fails with ELOOP, as on Linux.
const maxSymlinks = 40

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
// the last one too when follow is set. Symlink targets resolve inside the
// layer: an absolute target starts at the root and ".." stops there. The
// error is a bare errno or fs sentinel; callers wrap it with their Op.
func walk(root *entry, name string, follow bool) (where, error) {
	if !fs.ValidPath(name) {
		return where{}, fs.ErrInvalid
	}
	if name == "." {
		return where{base: ".", e: root}, nil
	}
	var buf [16]*entry
	stack := append(buf[:0], root)
	rest := name
	hops := 0
	for {
		var elem string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			elem, rest = rest[:i], rest[i+1:]
		} else {
			elem, rest = rest, ""
		}
		last := rest == ""
		dir := stack[len(stack)-1]
		switch elem {
		case "", ".":
			if last {
				return where{base: ".", e: dir}, nil
			}
			continue
		case "..":
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
			if hops++; hops > maxSymlinks {
				return where{}, syscall.ELOOP
			}
			target := cs.target()
			if target == "" {
				return where{}, syscall.ENOENT
			}
			if target[0] == '/' {
				stack = stack[:1]
				target = strings.TrimLeft(target, "/")
				if target == "" {
					target = "."
				}
			}
			if !last {
				target += "/" + rest
			}
			rest = target
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
