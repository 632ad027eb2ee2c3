package aferoadapter

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

// Linux's limits on names and paths.
const (
	maxName = 255  // NAME_MAX: bytes in one element
	maxPath = 4096 // PATH_MAX: bytes in a path, counting its NUL
)

// plain returns the io/fs path of name when name needs no resolution: past
// its leading slashes, a path whose elements are names (no "", "." or
// "..", no trailing slash) within NAME_MAX and without NUL. That is name
// itself past the slashes, so a plain name costs no allocation; the layer
// follows any symlinks in it as the kernel would. Anything else goes
// through resolve.
func plain(name string) (string, bool) {
	i := 0
	for i < len(name) && name[i] == '/' {
		i++
	}
	rest := name[i:]
	if rest == "" || len(name) >= maxPath {
		return "", false
	}
	start := 0
	for j := 0; j <= len(rest); j++ {
		if j < len(rest) {
			switch rest[j] {
			case 0:
				return "", false
			case '/':
			default:
				continue
			}
		}
		switch n := j - start; {
		case n == 0, n > maxName,
			n == 1 && rest[start] == '.',
			n == 2 && rest[start] == '.' && rest[start+1] == '.':
			return "", false
		}
		start = j + 1
	}
	return rest, true
}

// last is the kind of a name's last element, as namei names it.
type last uint8

const (
	lastNorm   last = iota // a name
	lastDot                // "."
	lastDotDot             // ".."
	lastRoot               // no element at all: "/", "//"
)

// resolved is a name walked up to its last element, as the kernel's
// namei leaves it for the operation to finish.
type resolved struct {
	dir   string // the directory of the last element: an io/fs path without symlinks
	name  string // the last element, for lastNorm
	last  last
	slash bool // slashes follow the last element: it must be a directory
	hops  int  // symlinks followed so far
	// long is set when the last element is over NAME_MAX: the kernel
	// refuses it at its lookup, after any lookup an operation makes first.
	long bool
}

// path returns the io/fs path of what r names, without following a final
// symlink: dir/name, dir for ".", its parent for "..".
func (r *resolved) path() string {
	switch r.last {
	case lastNorm:
		return join(r.dir, r.name)
	case lastDotDot:
		return parent(r.dir)
	}
	return r.dir
}

func (r *resolved) setLast(elem string) error {
	switch elem {
	case ".":
		r.last = lastDot
	case "..":
		r.last = lastDotDot
	default:
		if len(elem) > maxName {
			return syscall.ENAMETOOLONG
		}
		r.last, r.name = lastNorm, elem
	}
	return nil
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// parent returns the parent of dir, an io/fs path; the root is its own
// parent, as in a chroot.
func parent(dir string) string {
	i := strings.LastIndexByte(dir, '/')
	if i < 0 {
		return "."
	}
	return dir[:i]
}

// elems returns the non-empty elements of name.
func elems(name string) []string {
	return strings.FieldsFunc(name, func(r rune) bool { return r == '/' })
}

// resolve walks name as the kernel does, element by element from the
// root: each element but the last must be a directory, a symlink there is
// followed (an absolute target restarts at the root, at most
// pathwalk.MaxSymlinks of them), "." stays and ".." goes to the parent of
// the physical directory, the root's being the root. It returns a
// syscall.Errno for a name the kernel refuses: ENOENT for "", EINVAL for a
// NUL, ENAMETOOLONG past Linux's limits.
func (a *Fs) resolve(name string) (resolved, error) {
	r := resolved{dir: "."}
	switch {
	case name == "":
		return r, syscall.ENOENT
	case len(name) >= maxPath:
		return r, syscall.ENAMETOOLONG
	case strings.IndexByte(name, 0) >= 0:
		return r, syscall.EINVAL
	}
	el := elems(name)
	if len(el) == 0 {
		r.last = lastRoot
		return r, nil
	}
	r.slash = name[len(name)-1] == '/'
	if err := a.walk(&r, el[:len(el)-1]); err != nil {
		return r, err
	}
	err := r.setLast(el[len(el)-1])
	r.long = err != nil
	return r, err
}

// walk moves r.dir through el, each a directory or a symlink to one.
func (a *Fs) walk(r *resolved, el []string) error {
	if lf, ok := a.fsys.(pathwalk.LookupFS); ok {
		saved := *r
		err := a.walkAt(lf, r, el)
		if !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		*r = saved // a union with mounts: they are matched on paths
	}
	return a.walkPaths(r, el)
}

// walkAt is walk over a layer that looks one element up in a directory it
// found before: a lookup per element, the directory's path grown in one
// buffer and each followed target pushed on a stack of pending strings,
// so that the walk costs time and allocation linear in what it reads
// (asking the layer for each prefix by its path was quadratic in depth).
func (a *Fs) walkAt(lf pathwalk.LookupFS, r *resolved, el []string) error {
	type level struct {
		dir pathwalk.Dir
		end int // where its path ends in buf
	}
	var stackBuf [16]level // room for a shallow walk without allocating
	stack := append(stackBuf[:0], level{nil, 0})
	buf := make([]byte, 0, len(r.dir)+len(el)*2)
	push := func(e string, dir pathwalk.Dir) {
		if len(buf) > 0 {
			buf = append(buf, '/')
		}
		buf = append(buf, e...)
		stack = append(stack, level{dir, len(buf)})
	}
	setDir := func() {
		if r.dir = string(buf); r.dir == "" {
			r.dir = "."
		}
	}
	if r.dir != "." {
		for _, e := range strings.Split(r.dir, "/") {
			ent, err := lf.LookupAt(stack[len(stack)-1].dir, e)
			if err != nil {
				return cause(err)
			}
			if !ent.Info.IsDir() {
				return syscall.ENOTDIR
			}
			push(e, ent.Dir)
		}
	}
	// pending holds the strings left to read, the latest target on top.
	var pendingBuf [4]string
	pending := append(pendingBuf[:0], strings.Join(el, "/"))
	for {
		n := len(pending) - 1
		for n >= 0 {
			if pending[n] = strings.TrimLeft(pending[n], "/"); pending[n] != "" {
				break
			}
			n--
		}
		if n < 0 {
			break
		}
		pending = pending[:n+1]
		e, rest, _ := strings.Cut(pending[n], "/")
		pending[n] = rest
		switch e {
		case ".":
			continue
		case "..":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
				buf = buf[:stack[len(stack)-1].end]
			}
			continue
		}
		if len(e) > maxName {
			setDir()
			return syscall.ENAMETOOLONG
		}
		cur := stack[len(stack)-1].dir
		ent, err := lf.LookupAt(cur, e)
		switch {
		case err != nil:
			setDir()
			return cause(err)
		case ent.Info.Mode()&fs.ModeSymlink != 0:
			if r.hops++; r.hops > pathwalk.MaxSymlinks {
				setDir()
				return syscall.ELOOP
			}
			target, err := ent.Target, error(nil)
			if target == "" {
				target, err = lf.ReadLinkAt(cur, e)
			}
			switch {
			case err != nil:
				setDir()
				return cause(err)
			case target == "":
				setDir()
				return syscall.ENOENT
			case target[0] == '/':
				stack, buf = stack[:1], buf[:0]
			}
			pending = append(pending, target)
		case ent.Info.IsDir():
			push(e, ent.Dir)
		default:
			setDir()
			return syscall.ENOTDIR
		}
	}
	setDir()
	return nil
}

// walkPaths is walk over a layer asked by paths: an Lstat of each prefix.
func (a *Fs) walkPaths(r *resolved, el []string) error {
	for len(el) > 0 {
		e := el[0]
		el = el[1:]
		switch e {
		case ".":
			continue
		case "..":
			r.dir = parent(r.dir)
			continue
		}
		if len(e) > maxName {
			return syscall.ENAMETOOLONG
		}
		p := join(r.dir, e)
		fi, err := fs.Lstat(a.fsys, p)
		switch {
		case err != nil:
			return cause(err)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _, err := a.link(r, p)
			if err != nil {
				return err
			}
			el = append(target[:len(target):len(target)], el...)
		case fi.IsDir():
			r.dir = p
		default:
			return syscall.ENOTDIR
		}
	}
	return nil
}

// link reads the symlink p for r: its target's elements, whether the
// target ends in a slash, and r.dir moved to the root for an absolute one.
func (a *Fs) link(r *resolved, p string) (el []string, slash bool, err error) {
	if r.hops++; r.hops > pathwalk.MaxSymlinks {
		return nil, false, syscall.ELOOP
	}
	target, err := layer.Readlink(a.fsys, p)
	if err != nil {
		return nil, false, cause(err)
	}
	if target == "" {
		return nil, false, syscall.ENOENT
	}
	if target[0] == '/' {
		r.dir = "."
	}
	return elems(target), target[len(target)-1] == '/', nil
}

// follow finishes r as a lookup that follows a final symlink does, and
// returns the io/fs path, without symlinks, of what r names, which exists
// (and is a directory if r.slash says so), and its information.
func (a *Fs) follow(r *resolved) (string, fs.FileInfo, error) {
	for {
		p := r.path()
		if r.last != lastNorm {
			fi, err := fs.Stat(a.fsys, p)
			return p, fi, cause(err)
		}
		fi, err := fs.Lstat(a.fsys, p)
		switch {
		case err != nil:
			return "", nil, cause(err)
		case fi.Mode()&fs.ModeSymlink != 0:
			el, slash, err := a.link(r, p)
			if err != nil {
				return "", nil, err
			}
			r.slash = r.slash || slash
			if len(el) == 0 {
				r.last = lastRoot
				continue
			}
			if err := a.walk(r, el[:len(el)-1]); err != nil {
				return "", nil, err
			}
			if err := r.setLast(el[len(el)-1]); err != nil {
				return "", nil, err
			}
		case r.slash && !fi.IsDir():
			return "", nil, syscall.ENOTDIR
		default:
			return p, fi, nil
		}
	}
}

// physical resolves name to what it names, following every symlink.
func (a *Fs) physical(name string) (string, fs.FileInfo, error) {
	r, err := a.resolve(name)
	if err != nil {
		return "", nil, err
	}
	return a.follow(&r)
}

// lookup returns the io/fs path to give the layer for an operation on
// name that follows a final symlink (stat, chmod...), or with lstat set
// does not unless a trailing slash says so: a plain name as it is, which
// the layer resolves; else the resolved path, with a final symlink
// followed here, so that a target's own trailing slash counts.
func (a *Fs) lookup(name string, lstat bool) (string, error) {
	if p, ok := plain(name); ok {
		return p, nil
	}
	r, err := a.resolve(name)
	if err != nil {
		return "", err
	}
	if r.last == lastNorm && (r.slash || !lstat) {
		p, _, err := a.follow(&r)
		return p, err
	}
	return r.path(), nil
}

// cause returns the error an *fs.PathError or *os.LinkError wraps.
func cause(err error) error {
	switch e := err.(type) {
	case *fs.PathError:
		return e.Err
	case *os.LinkError:
		return e.Err
	}
	return err
}

// endsWithDot reports whether name is "." or ends in "/.", which
// os.RemoveAll refuses.
func endsWithDot(name string) bool {
	return name == "." || strings.HasSuffix(name, "/.")
}

// splitPath splits name into a parent and a last element as os.RemoveAll
// does (os/removeall_at.go): trailing slashes go, and the parent of a
// single element is ".".
func splitPath(name string) (dir, base string) {
	dir = "."
	for len(name) > 1 && name[0] == '/' && name[1] == '/' {
		name = name[1:]
	}
	i := len(name) - 1
	for ; i > 0 && name[i] == '/'; i-- {
		name = name[:i]
	}
	base = name
	for i--; i >= 0; i-- {
		if name[i] == '/' {
			if i == 0 {
				dir = name[:1]
			} else {
				dir = name[:i]
			}
			base = name[i+1:]
			break
		}
	}
	return dir, base
}

// userPath returns the name an error should report for p, an io/fs path
// the layer reported, when the caller named clean as user: user itself for
// clean, user followed by the rest for a path below clean (an error of
// RemoveAll names the entry that failed).
func userPath(p, user, clean string) string {
	if p == clean {
		return user
	}
	var rest string
	switch {
	case clean == ".":
		rest = p
	case strings.HasPrefix(p, clean) && len(p) > len(clean) && p[len(clean)] == '/':
		rest = p[len(clean)+1:]
	case strings.HasPrefix(clean, p) && clean[len(p)] == '/':
		// An ancestor of clean (MkdirAll reports the element that
		// failed): spelled from the root if the caller's name was.
		if strings.HasPrefix(user, "/") {
			return "/" + p
		}
		return p
	default:
		return p
	}
	if user == "" {
		return rest
	}
	return strings.TrimRight(user, "/") + "/" + rest
}

// fixErr rewrites the path of err, an error of the layer about clean, into
// what the caller passed, user, as os reports the name it was given. It
// allocates only when the two differ and err names a path.
func fixErr(err error, user, clean string) error {
	if err == nil || user == clean {
		return err
	}
	if pe, ok := err.(*fs.PathError); ok {
		return &fs.PathError{Op: pe.Op, Path: userPath(pe.Path, user, clean), Err: pe.Err}
	}
	return err
}

// fixLinkErr rewrites the paths of err, an error of the layer about
// renaming or linking clean1 to clean2, into the names the caller passed.
func fixLinkErr(err error, user1, clean1, user2, clean2 string) error {
	if err == nil || (user1 == clean1 && user2 == clean2) {
		return err
	}
	switch e := err.(type) {
	case *os.LinkError:
		return &os.LinkError{Op: e.Op, Old: userPath(e.Old, user1, clean1), New: userPath(e.New, user2, clean2), Err: e.Err}
	case *fs.PathError:
		p := userPath(e.Path, user1, clean1)
		if p == e.Path {
			p = userPath(e.Path, user2, clean2)
		}
		return &fs.PathError{Op: e.Op, Path: p, Err: e.Err}
	}
	return err
}
