package packfs

import (
	"os"
	"strings"
	"syscall"

	"github.com/packfs/packfs/layer"
)

// Linux's limits on names, which the store applies before it logs a
// change: a change the log holds must be one every checkpoint can write
// and every replay can apply.
const (
	nameMax = 255  // bytes in one element (NAME_MAX)
	pathMax = 4096 // bytes in a path with its terminating NUL (PATH_MAX)
)

// checkName returns the error Linux gives for a path that no file can
// have: EINVAL for a NUL byte, ENAMETOOLONG for an element of more than
// 255 bytes or a path of 4,096 bytes or more.
func checkName(op, name string) error {
	if err := nameErr(name); err != nil {
		return layer.PathError(op, name, err)
	}
	return nil
}

func nameErr(name string) error {
	if strings.IndexByte(name, 0) >= 0 {
		return syscall.EINVAL
	}
	if len(name) >= pathMax {
		return syscall.ENAMETOOLONG
	}
	for len(name) > nameMax {
		i := strings.IndexByte(name, '/')
		if i < 0 || i > nameMax {
			return syscall.ENAMETOOLONG
		}
		name = name[i+1:]
	}
	return nil
}

// checkOp checks every name of a change before it applies: a rename's
// error is an *os.LinkError, as os gives. A symlink's target is only
// bound by the length of a path, as on Linux.
func checkOp(o op, opName string) error {
	switch o.kind {
	case opRename:
		err := nameErr(o.path)
		if err == nil {
			err = nameErr(o.path2)
		}
		if err != nil {
			return &os.LinkError{Op: opName, Old: o.path, New: o.path2, Err: err}
		}
		return nil
	case opSymlink:
		if strings.IndexByte(o.path, 0) >= 0 {
			return &os.LinkError{Op: opName, Old: o.path, New: o.path2, Err: syscall.EINVAL}
		}
		err := nameErr(o.path2)
		if err == nil && len(o.path) >= pathMax {
			err = syscall.ENAMETOOLONG
		}
		if err != nil {
			return &os.LinkError{Op: opName, Old: o.path, New: o.path2, Err: err}
		}
		return nil
	}
	return checkName(opName, o.path)
}
