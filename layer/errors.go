package layer

import (
	"errors"
	"io/fs"
	"os"
)

// PathError returns an *fs.PathError for op on name wrapping err, the form
// of every error a layer returns that names one path.
func PathError(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// LinkError returns an *os.LinkError for op from oldname to newname wrapping
// err, the form os gives errors of rename and link.
func LinkError(op, oldname, newname string, err error) error {
	return &os.LinkError{Op: op, Old: oldname, New: newname, Err: err}
}

// Unsupported reports an operation the layer does not offer: an
// *fs.PathError wrapping [errors.ErrUnsupported].
func Unsupported(op, name string) error {
	return PathError(op, name, errors.ErrUnsupported)
}
