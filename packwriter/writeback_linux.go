package packwriter

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's bytes in [off,
// off+n) to the disk without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE), so that the fsync at the end finds most of the
// pack on its way. It is a hint: a file system that refuses it loses
// nothing but the head start.
func startWriteback(f *os.File) func(off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return func(off, n int64) {
		rc.Control(func(fd uintptr) { unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE) })
	}
}
