package packwriter

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	seekData = unix.SEEK_DATA
	seekHole = unix.SEEK_HOLE
)

// dataSeeker returns a seek on f's descriptor, for SEEK_DATA and
// SEEK_HOLE, when f is a host file (*os.File and what else exposes its
// descriptor through syscall.Conn). It moves no file offset that Read
// depends on: readSparse reads with ReadAt.
func dataSeeker(f fs.File) (func(off int64, whence int) (int64, error), bool) {
	sc, ok := f.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	return func(off int64, whence int) (int64, error) {
		var pos int64
		var serr error
		if err := rc.Control(func(fd uintptr) { pos, serr = unix.Seek(int(fd), off, whence) }); err != nil {
			return 0, err
		}
		return pos, serr
	}, true
}
