// Package pathwalk holds the path-resolution rules every PackFS layer
// shares, so that they agree: how a path splits into elements, how a
// symlink's target splices in, and when resolution gives up. Each layer
// keeps its own stack of directories; a Walker tells it what to do next.
//
// Symlinks resolve inside the layer: an absolute target starts again at
// the layer's root, and ".." stops at the root, as in a chroot.
//
// Linux's limits bound the work: a path or a symlink target of MaxPath
// bytes or more fails with ENAMETOOLONG, and a resolution that follows more
// than MaxSymlinks links fails with ELOOP. Within them a resolution costs
// time linear in the bytes it reads: a followed target is pushed on a
// stack of pending strings, never joined to what is left of the path, so
// each byte of the path and of every target is read once.
package pathwalk

import (
	"io/fs"
	"strings"
	"syscall"
)

// MaxSymlinks is how many symlinks one resolution may follow (Linux's
// MAXSYMLINKS).
const MaxSymlinks = 40

// MaxPath is Linux's PATH_MAX: the size of a path buffer, its NUL
// included. A path or symlink target must be shorter.
const MaxPath = 4096

// MaxName is Linux's NAME_MAX: the most bytes of one element.
const MaxName = 255

// CheckElem returns ENAMETOOLONG for an element longer than MaxName. A
// walk calls it on each element it is about to look up, a symlink
// target's too: the kernel's lookup refuses such a name there, after the
// elements before it resolved, so that "missing/" + a long name is ENOENT.
func CheckElem(elem string) error {
	if len(elem) > MaxName {
		return syscall.ENAMETOOLONG
	}
	return nil
}

// Step says what an element asks of the walk.
type Step int

const (
	Stay Step = iota // "" or ".": the same directory
	Up               // "..": the parent, or the root at the root
	Down             // a name to look up
)

// Walker yields the elements of an io/fs path, one at a time.
type Walker struct {
	rest string // what is left of the string being read
	// pending holds what is left of the strings below it, the path's own
	// last: a followed target is read before what came after the link.
	pending []string
	// nameAt is where the rest of the path itself is: -1 in rest, -2 gone
	// (a final link replaced it), else its index in pending.
	nameAt int
	size   int // the path's length
	hops   int
	slash  bool // the element Next returned last was followed by a slash
	// read holds the targets read so far, so that hops through one link
	// copy its target once.
	read []target
}

type target struct {
	key any
	s   string
}

// New returns a Walker over name, a valid io/fs path other than ".". It
// fails with ENAMETOOLONG when name is MaxPath bytes or longer.
func New(name string) (Walker, error) {
	if len(name) >= MaxPath {
		return Walker{}, syscall.ENAMETOOLONG
	}
	return Walker{rest: name, nameAt: -1, size: len(name)}, nil
}

// Depth returns how deep name reaches when no symlink takes it elsewhere:
// the room a walk's stack of directories needs, the root included.
func Depth(name string) int { return strings.Count(name, "/") + 2 }

// CheckPath returns ENAMETOOLONG for a path of MaxPath bytes or more, as
// Linux does for any path given to a system call.
func CheckPath(name string) error {
	if len(name) >= MaxPath {
		return syscall.ENAMETOOLONG
	}
	return nil
}

// Next returns the next element, what it asks, and whether it is the last.
func (w *Walker) Next() (elem string, step Step, last bool) {
	i := strings.IndexByte(w.rest, '/')
	if i >= 0 {
		elem, w.rest = w.rest[:i], w.rest[i+1:]
	} else {
		elem, w.rest = w.rest, ""
	}
	for w.rest == "" && len(w.pending) > 0 {
		n := len(w.pending) - 1
		w.rest, w.pending[n] = w.pending[n], ""
		w.pending = w.pending[:n]
		if w.nameAt == n {
			w.nameAt = -1
		}
	}
	last = w.rest == ""
	w.slash = last && i >= 0
	switch elem {
	case "", ".":
		return elem, Stay, last
	case "..":
		return elem, Up, last
	}
	return elem, Down, last
}

// Slash reports whether the last element, as Next just returned it, was
// followed by a slash: it came from a symlink target such as "x/", and as
// on Linux it must then be a directory, a symlink there is followed
// whatever the caller asked, and a missing one cannot be created as a
// file (EISDIR).
func (w *Walker) Slash() bool { return w.slash }

// Offset returns where in the path the element that Next returns next
// starts, or -1 when it comes from a symlink's target.
func (w *Walker) Offset() int {
	if w.nameAt != -1 {
		return -1
	}
	return w.size - len(w.rest)
}

// TooLong reports whether a symlink target of size bytes is past Linux's
// limit, so that a layer can refuse it before reading it.
func TooLong(size int64) bool { return size >= MaxPath }

// Target returns the target of the symlink key names, reading it with
// read only the first time the walk meets that link: each distinct target
// is copied once per resolution however many hops go through it, so that
// a resolution never allocates more than the targets it reads. key must
// be comparable.
func (w *Walker) Target(key any, read func() (string, error)) (string, error) {
	for _, t := range w.read {
		if t.key == key {
			return t.s, nil
		}
	}
	s, err := read()
	if err == nil {
		w.read = append(w.read, target{key, s})
	}
	return s, err
}

// Follow puts the symlink target in place of the element Next just
// returned, so that the walk continues through it. It reports whether the
// target is absolute, in which case the caller starts again at its root.
// It fails with ELOOP past MaxSymlinks, with ENAMETOOLONG for a target of
// MaxPath bytes or more, and with ENOENT for an empty target.
func (w *Walker) Follow(target string, last bool) (abs bool, err error) {
	if w.hops++; w.hops > MaxSymlinks {
		return false, syscall.ELOOP
	}
	if TooLong(int64(len(target))) {
		return false, syscall.ENAMETOOLONG
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
		w.pending = append(w.pending, w.rest)
		if w.nameAt == -1 {
			w.nameAt = len(w.pending) - 1
		}
	} else if w.nameAt == -1 {
		w.nameAt = -2
	}
	w.rest = target
	return abs, nil
}

// Dir is a directory as one layer's LookupAt found it: that layer's own
// handle on it, which means nothing to another layer. The nil Dir is the
// layer's root.
type Dir any

// Entry is what LookupAt finds.
type Entry struct {
	Info fs.FileInfo
	// Dir is a directory's handle, for looking up its entries.
	Dir Dir
	// Opaque reports a directory marked opaque (holding a whiteout named
	// layer.OpaqueName).
	Opaque bool
	// Target is a symlink's target, read with the entry where the layer
	// has it at hand, "" otherwise. A walk follows it rather than calling
	// ReadLinkAt, which looks the name up again and may meet another
	// entry that a writer has put there since.
	Target string
}

// LookupFS is a layer that looks a name up in a directory it found
// earlier, for the cost of one element: a union resolves a path with one
// lookup per element and layer instead of one walk of the whole path per
// element, which would be quadratic in its length.
type LookupFS interface {
	fs.FS
	// LookupAt returns the entry name, one element, of the directory dir,
	// without following a symlink. A missing entry is ENOENT.
	LookupAt(dir Dir, name string) (Entry, error)
	// ReadLinkAt returns the target of the symlink name of dir.
	ReadLinkAt(dir Dir, name string) (string, error)
}

// OpenAtFS is a LookupFS that also opens a regular file of a directory it
// found, for reading, in the same one lookup: a union's read of a small
// file then costs the layer's own open, not a lookup and a walk.
type OpenAtFS interface {
	LookupFS
	// OpenAt opens the entry name, one element, of the directory dir,
	// known as path in the file's Stat and errors, without following a
	// symlink. A missing entry is ENOENT; an entry that is no regular
	// file is an error too (EISDIR, ELOOP or EINVAL), and opens nothing.
	OpenAt(dir Dir, name, path string) (fs.File, error)
}

// ReadFileAtFS is a LookupFS that also reads a regular file of a
// directory it found whole, in the same one lookup: a union's ReadFile of
// a lower file then costs the lookup and the copy, not a lookup to learn
// that the name is a file and a walk of the whole path to read it.
type ReadFileAtFS interface {
	LookupFS
	// ReadFileAt returns the content of the entry name, one element, of
	// the directory dir, known as path in errors, without following a
	// symlink. A missing entry is ENOENT; an entry that is no regular file
	// is an error too (EISDIR, ELOOP or EINVAL).
	ReadFileAt(dir Dir, name, path string) ([]byte, error)
}
