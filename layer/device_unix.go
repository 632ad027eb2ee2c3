//go:build unix

package layer

import (
	"io/fs"
	"syscall"
)

// deviceNumber returns the device number fi carries, or 0.
func deviceNumber(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Rdev)
	}
	return 0
}

// hostOwner returns the owner a host file's Stat_t records.
func hostOwner(fi fs.FileInfo) (uid, gid uint32, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid, st.Gid, true
	}
	return NoOwner, NoOwner, false
}
