package aferoadapter

import (
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/packfs/packfs/layer"
)

// errEscapes is the error of a path whose ".." elements climb above the
// root. It matches fs.ErrNotExist, as afero.BasePathFs reports such a path:
// nothing exists outside the root.
var errEscapes error = escapeError{}

type escapeError struct{}

func (escapeError) Error() string        { return "path escapes from the root" }
func (escapeError) Is(target error) bool { return target == fs.ErrNotExist }

// ioPath translates a name as an afero user passes it ("/a/b", "a/b",
// "./a", "a/", "", "/") into an io/fs path, lexically as afero.BasePathFs
// does: leading slashes name the root, "." and empty elements and trailing
// slashes go, ".." removes the element before it. It reports false for a
// name whose ".." climbs above the root. A name that is already a valid
// io/fs path, with or without one leading slash, costs no allocation.
func ioPath(name string) (string, bool) {
	if fs.ValidPath(name) {
		return name, true
	}
	rest := strings.TrimLeft(name, "/")
	if rest == "" {
		return ".", true
	}
	if fs.ValidPath(rest) {
		return rest, true
	}
	c := path.Clean(rest)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
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

// escapes returns the error of op on a name that climbs above the root.
func escapes(op, name string) error { return layer.PathError(op, name, errEscapes) }
