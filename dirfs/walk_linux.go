package dirfs

import (
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// raceTries bounds the tries of an openat2 that fails with EAGAIN before
// the name is walked one element at a time instead. The kernel gives EAGAIN
// to a RESOLVE_BENEATH lookup that crossed ".." while a rename or a mount
// happened anywhere on the system, not only beneath the root: on a machine
// that renames all the time, a lookup through a symlink such as "../d/x"
// fails on most tries, and a chain of them on every try (seen: 387 in a
// row beside one process renaming a file back and forth).
const raceTries = 8

// walks counts the lookups walked, for tests.
var walks atomic.Int64

// maxLinks is Linux's limit on the symlinks followed in one lookup.
const maxLinks = 40

// walk resolves name beneath the root and opens it with flags, as openat2
// with resolveFlags does, but one element at a time, so that no rename
// elsewhere can fail it. Each step opens a single name with O_NOFOLLOW in
// the directory reached; a symlink's target is read and walked in its
// place; ".." goes back to the directory the walk came from (deeper than
// heldDirs, opened again by the name the walk came down by), never to a
// parent found on disk, and climbing above the root is EXDEV. So every step
// is taken from a directory that was beneath the root when the walk reached
// it, as openat2's steps down are. A magic link (/proc/self/fd/N) is walked
// as its text, which is absolute (an escape) or names nothing there.
//
// The flags and mode are openat2's (how): openat2 checks them before it
// looks anything up, refusing with EINVAL some that openat takes (O_CREAT
// with O_DIRECTORY, bits it does not know), so an openat2 of the empty
// name, which then fails with ENOENT, checks them first.
func (a *atImpl) walk(name string, how *unix.OpenHow) (int, error) {
	if fd, err := unix.Openat2(a.fd, "", how); err == unix.EINVAL {
		return -1, err
	} else if err == nil {
		unix.Close(fd)
	}
	flags, mode := int(how.Flags), uint32(how.Mode)
	stack := walkStack{fds: []int{a.fd}, names: []string{""}}
	defer stack.close()
	follow := flags&unix.O_NOFOLLOW == 0
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	links := 0
	// searched: a name was looked up in the top directory, which took
	// search permission on it.
	searched := false
	rest := name
	for {
		elem, tail, more := strings.Cut(rest, "/")
		rest = tail
		switch elem {
		case "", ".":
			if more {
				continue
			}
			elem = "."
		case "..":
			// Linux looks ".." up in the directory, which takes
			// search permission on it, as "." does: a directory
			// the walk looked nothing up in yet is checked so.
			if !searched {
				fd, err := openOne(stack.top(), ".", unix.O_PATH|unix.O_CLOEXEC, 0)
				if err != nil {
					return -1, err
				}
				unix.Close(fd)
			}
			if len(stack.fds) == 1 {
				return -1, unix.EXDEV
			}
			if err := stack.pop(); err != nil {
				return -1, err
			}
			searched = true
			if more {
				continue
			}
			elem = "."
		default:
			if more && strings.TrimLeft(rest, "/") == "" {
				// The last element, followed by a slash: Linux
				// follows it even under O_NOFOLLOW and demands a
				// directory (it does not search it, as "elem/."
				// would), but fails O_CREAT with EISDIR before
				// looking it up.
				if flags&unix.O_CREAT != 0 {
					return -1, unix.EISDIR
				}
				more, rest = false, ""
				follow = true
				flags |= unix.O_DIRECTORY
			}
		}
		top := stack.top()
		if !more {
			fd, err := openOne(top, elem, flags, mode)
			if !follow || !maybeLink(fd, err, flags) {
				return fd, err
			}
			target, lerr := readlinkAt(top, elem)
			if lerr != nil {
				// Not a symlink after all (EINVAL), or gone.
				return fd, err
			}
			if fd >= 0 {
				unix.Close(fd)
			}
			searched = true
			if rest, err = a.through(target, "", &links); err != nil {
				return -1, err
			}
			continue
		}
		fd, err := openOne(top, elem, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		searched = true
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			stack.push(fd, elem)
			searched = false
		case unix.S_IFLNK:
			target, err := readlinkAt(fd, "")
			unix.Close(fd)
			if err != nil {
				return -1, err
			}
			if rest, err = a.through(target, rest, &links); err != nil {
				return -1, err
			}
		default:
			unix.Close(fd)
			return -1, unix.ENOTDIR
		}
	}
}

// heldDirs bounds the descriptors a walk holds of the directories it came
// down through, which ".." goes back to: Linux walks a name of any depth
// holding none, and one of PATH_MAX bytes can be 2,047 directories deep
// (through symlinks, up to 40 times that), more descriptors than a process
// may have open. The walk keeps the last heldDirs directories open, and
// every heldDirs-th one below them; a ".." into a directory closed
// meanwhile opens it again by the name the walk came down by, from the
// nearest one kept (under 64 + depth/64 descriptors, at most 64 opens per
// 64 ".."s).
const heldDirs = 64

// walkStack is the directories a walk came down through: fds[0] is the
// root, fds[i] was opened as names[i] in fds[i-1], and is -1 once closed.
// The top is always open.
type walkStack struct {
	fds   []int
	names []string
}

func (s *walkStack) top() int { return s.fds[len(s.fds)-1] }

func (s *walkStack) push(fd int, name string) {
	s.fds = append(s.fds, fd)
	s.names = append(s.names, name)
	if i := len(s.fds) - 1 - heldDirs; i > 0 && i%heldDirs != 0 && s.fds[i] >= 0 {
		unix.Close(s.fds[i])
		s.fds[i] = -1
	}
}

// pop closes the top directory, and opens the one below it again if it
// was closed.
func (s *walkStack) pop() error {
	n := len(s.fds) - 1
	unix.Close(s.fds[n])
	s.fds, s.names = s.fds[:n], s.names[:n]
	j := n - 1
	for s.fds[j] < 0 {
		j--
	}
	for i := j + 1; i < n; i++ {
		fd, err := openOne(s.fds[i-1], s.names[i], unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		s.fds[i] = fd
	}
	return nil
}

func (s *walkStack) close() {
	for _, fd := range s.fds[1:] {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// through counts one more symlink followed and returns what is left to
// walk: its target, then rest.
func (a *atImpl) through(target, rest string, links *int) (string, error) {
	*links++
	switch {
	case *links > maxLinks:
		return "", unix.ELOOP
	case target == "":
		return "", unix.ENOENT
	case target[0] == '/':
		return "", unix.EXDEV
	case rest == "":
		return target, nil
	}
	return target + "/" + rest, nil
}

// maybeLink reports whether the result of opening a last element with
// O_NOFOLLOW may be a symlink to follow: Linux fails such an open with
// ELOOP, or ENOTDIR under O_DIRECTORY, and an O_PATH open returns the link.
func maybeLink(fd int, err error, flags int) bool {
	switch {
	case err == unix.ELOOP || err == unix.ENOTDIR:
		return true
	case err != nil || flags&unix.O_PATH == 0:
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

func openOne(dir int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readlinkAt reads the target of the symlink name in dir ("" for dir
// itself, an O_PATH descriptor of the link).
func readlinkAt(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return "", err
		case n < size:
			return string(buf[:n]), nil
		}
	}
}
