package mem

import "syscall"

// The errnos os gives on Linux; each matches its fs.Err* sentinel with
// errors.Is (ENOENT is fs.ErrNotExist, EEXIST fs.ErrExist, EINVAL
// fs.ErrInvalid).
var (
	errNotExist error = syscall.ENOENT
	errExist    error = syscall.EEXIST
	errInvalid  error = syscall.EINVAL
	errNotDir   error = syscall.ENOTDIR
	errIsDir    error = syscall.EISDIR
	errNotEmpty error = syscall.ENOTEMPTY
	errBadFD    error = syscall.EBADF
	errBusy     error = syscall.EBUSY
)
