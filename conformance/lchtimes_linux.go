package conformance

import (
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// lchtimes sets the times of name itself, as utimensat with
// AT_SYMLINK_NOFOLLOW: a zero time is left as it was.
func lchtimes(name string, atime, mtime time.Time) error {
	ts := make([]unix.Timespec, 2)
	for i, t := range [2]time.Time{atime, mtime} {
		if t.IsZero() {
			ts[i] = unix.Timespec{Sec: unix.UTIME_OMIT, Nsec: unix.UTIME_OMIT}
		} else {
			ts[i] = unix.NsecToTimespec(t.UnixNano())
		}
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "lchtimes", Path: name, Err: err}
	}
	return nil
}
