//go:build unix

package packwriter

import (
	"syscall"

	"github.com/packfs/packfs/internal/packformat"
)

// hostOwner reads the owner and inode of a host file's Stat_t.
func hostOwner(sys any) (packformat.Attr, srcInode, bool) {
	st, ok := sys.(*syscall.Stat_t)
	if !ok {
		return packformat.Attr{}, srcInode{}, false
	}
	a := packformat.Attr{Uid: st.Uid, Gid: st.Gid}
	var src srcInode
	if st.Nlink > 1 {
		src = srcInode{dev: uint64(st.Dev), ino: uint64(st.Ino)}
	}
	return a, src, true
}
