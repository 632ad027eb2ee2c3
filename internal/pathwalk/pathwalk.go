// Package pathwalk holds the path-resolution rules every PackFS layer
// shares, so that they agree: how a path splits into elements, how a
// symlink's target splices in, and when resolution gives up. Each layer
// keeps its own stack of directories; a Walker tells it what to do next.
//
// Symlinks resolve inside the layer: an absolute target starts again at
// the layer's root, and ".." stops at the root, as in a chroot. A
// resolution that follows more than MaxSymlinks links fails with ELOOP, as
// on Linux.
package pathwalk

import (
	"strings"
	"syscall"
)

// MaxSymlinks is how many symlinks one resolution may follow.
const MaxSymlinks = 40

// Step says what an element asks of the walk.
type Step int

const (
	Stay Step = iota // "" or ".": the same directory
	Up               // "..": the parent, or the root at the root
	Down             // a name to look up
)

// Walker yields the elements of an io/fs path, one at a time.
type Walker struct {
	rest string
	hops int
}

// New returns a Walker over name, a valid io/fs path other than ".".
func New(name string) Walker { return Walker{rest: name} }

// Next returns the next element, what it asks, and whether it is the last.
func (w *Walker) Next() (elem string, step Step, last bool) {
	if i := strings.IndexByte(w.rest, '/'); i >= 0 {
		elem, w.rest = w.rest[:i], w.rest[i+1:]
	} else {
		elem, w.rest = w.rest, ""
	}
	last = w.rest == ""
	switch elem {
	case "", ".":
		return elem, Stay, last
	case "..":
		return elem, Up, last
	}
	return elem, Down, last
}

// Follow puts the symlink target in place of the element Next just
// returned, so that the walk continues through it. It reports whether the
// target is absolute, in which case the caller starts again at its root.
// It fails with ELOOP past MaxSymlinks and with ENOENT for an empty target.
func (w *Walker) Follow(target string, last bool) (abs bool, err error) {
	if w.hops++; w.hops > MaxSymlinks {
		return false, syscall.ELOOP
	}
	if target == "" {
		return false, syscall.ENOENT
	}
	if target[0] == '/' {
		abs = true
		if target = strings.TrimLeft(target, "/"); target == "" {
			target = "."
		}
	}
	if !last {
		target += "/" + w.rest
	}
	w.rest = target
	return abs, nil
}
