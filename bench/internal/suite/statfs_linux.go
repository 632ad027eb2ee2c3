package suite

import (
	"fmt"
	"syscall"
)

// Magic numbers of statfs(2)'s f_type (linux/magic.h).
var fsMagic = map[int64]string{
	0xEF53:     "ext4",
	0x01021994: "tmpfs",
	0x794c7630: "overlayfs",
	0x9123683E: "btrfs",
	0x58465342: "xfs",
	0x2FC12FC1: "zfs",
	0x6969:     "nfs",
	0x65735546: "fuse",
	0x858458f6: "ramfs",
	0xF2F52010: "f2fs",
}

// FSType names the file system holding dir, from statfs's magic number.
func FSType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	if name, ok := fsMagic[int64(st.Type)]; ok {
		return name
	}
	return fmt.Sprintf("0x%x", st.Type)
}
