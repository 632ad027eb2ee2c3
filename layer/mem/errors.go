package mem

import "syscall"

// The errnos os gives on Linux. errors.Is matches ENOENT with
// fs.ErrNotExist and EEXIST and ENOTEMPTY with fs.ErrExist, as for os;
// EINVAL is not fs.ErrInvalid, which is kept for invalid io/fs paths.
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
