package dirfs

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/packfs/packfs/layer"
)

// ErrEscapes is wrapped by the error of any operation whose path would leave
// the root: an absolute path, a ".." that climbs above the root, or a symlink
// whose target is absolute or climbs out.
var ErrEscapes = errors.New("dirfs: path escapes from root")

// escapeInvalid is the error of a name that is not an io/fs path because it
// climbs out ("..", "../x") or is absolute ("/etc"): it is both an escape and
// an invalid argument, so callers testing either sentinel see it.
type escapeInvalid struct{}

func (escapeInvalid) Error() string { return ErrEscapes.Error() }

func (escapeInvalid) Is(target error) bool {
	return target == ErrEscapes || target == fs.ErrInvalid
}

// checkPath validates name as an io/fs path. It returns the error os-style
// callers see for a path the layer refuses to resolve, nil when name is valid.
// Past that, it applies Linux's checks on a whole path (layer.CheckPath: a
// NUL byte is EINVAL, PATH_MAX bytes or more ENAMETOOLONG), which os.Root
// and a parent resolved apart from its last element would not see.
func checkPath(op, name string) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: op, Path: name, Err: invalidErr(name)}
	}
	if err := layer.CheckPath(name); err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}

// invalidErr tells an escaping name from a merely malformed one.
func invalidErr(name string) error {
	if strings.HasPrefix(name, "/") {
		return escapeInvalid{}
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return escapeInvalid{}
		}
	}
	return fs.ErrInvalid
}

func checkLink(op, oldname, newname string) error {
	if !fs.ValidPath(oldname) {
		return &os.LinkError{Op: op, Old: oldname, New: newname, Err: invalidErr(oldname)}
	}
	if !fs.ValidPath(newname) {
		return &os.LinkError{Op: op, Old: oldname, New: newname, Err: invalidErr(newname)}
	}
	err := layer.CheckPath(oldname)
	if err == nil {
		err = layer.CheckPath(newname)
	}
	if err != nil {
		return &os.LinkError{Op: op, Old: oldname, New: newname, Err: err}
	}
	return nil
}

// rootEscapeMsg is the text of os.Root's unexported escape error, which the
// fallback translates to ErrEscapes.
const rootEscapeMsg = "path escapes from parent"

// escaped replaces an escape reported by os.Root or by openat2 (EXDEV under
// RESOLVE_BENEATH) inside err with ErrEscapes.
func escaped(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		if isEscape(pe.Err) {
			pe.Err = ErrEscapes
		}
	case errors.As(err, &le):
		if isEscape(le.Err) {
			le.Err = ErrEscapes
		}
	}
	return err
}

func isEscape(err error) bool {
	return err != nil && err.Error() == rootEscapeMsg
}

// readOnlyErr is the error of a write to a read-only FS: what os gives on a
// read-only mount.
func readOnlyErr(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: syscall.EROFS}
}
