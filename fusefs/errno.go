package fusefs

import (
	"errors"
	"io/fs"
	"syscall"
)

// errno is the errno the kernel passes on for err: the one err wraps, or
// the one os would give for the sentinel it wraps, or EIO.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL
	case errors.Is(err, fs.ErrClosed):
		return syscall.EBADF
	case errors.Is(err, errors.ErrUnsupported):
		return syscall.EOPNOTSUPP
	}
	return syscall.EIO
}
