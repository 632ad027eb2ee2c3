package layer

import "io/fs"

// IsWhiteoutInfo reports whether fi describes a whiteout entry: of type
// [ModeWhiteout] and, where fi carries a device number (a host file's
// syscall.Stat_t), of device 0/0, as overlayfs stores one. A character
// device of any other number, such as a copy of /dev/null, is a device,
// not a whiteout.
func IsWhiteoutInfo(fi fs.FileInfo) bool {
	return IsWhiteout(fi.Mode()) && deviceNumber(fi) == 0
}
