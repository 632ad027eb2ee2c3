package fusefs

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/packfs/packfs/layer"
)

// unixMode converts an io/fs mode to st_mode bits.
func unixMode(m fs.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= syscall.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		mode |= syscall.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		mode |= syscall.S_ISVTX
	}
	switch {
	case m.IsDir():
		mode |= syscall.S_IFDIR
	case m&fs.ModeSymlink != 0:
		mode |= syscall.S_IFLNK
	case m&fs.ModeNamedPipe != 0:
		mode |= syscall.S_IFIFO
	case m&fs.ModeSocket != 0:
		mode |= syscall.S_IFSOCK
	case m&fs.ModeCharDevice != 0:
		mode |= syscall.S_IFCHR
	case m&fs.ModeDevice != 0:
		mode |= syscall.S_IFBLK
	default:
		mode |= syscall.S_IFREG
	}
	return mode
}

// fileMode converts the permission bits of st_mode to an io/fs mode.
func fileMode(mode uint32) fs.FileMode {
	m := fs.FileMode(mode & 0o777)
	if mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// fillAttr describes fi as out. A host file's syscall.Stat_t gives its
// owner, device and times; other layers give their owner through
// layer.OwnerOf, where they have one (else the mount's is shown), and
// only the modification time (shown as all three times).
func (m *mount) fillAttr(fi fs.FileInfo, ino uint64, nlink uint32, out *fuse.Attr) {
	out.Ino = ino
	out.Mode = unixMode(fi.Mode())
	out.Nlink = nlink
	size := fi.Size()
	if size < 0 {
		size = 0
	}
	out.Size = uint64(size)
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = blockSize
	out.Owner = fuse.Owner{Uid: m.uid, Gid: m.gid}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		out.Owner = fuse.Owner{Uid: st.Uid, Gid: st.Gid}
		out.Rdev = uint32(st.Rdev)
		out.Blocks = uint64(st.Blocks)
		setTime(&out.Atime, &out.Atimensec, time.Unix(st.Atim.Unix()))
		setTime(&out.Mtime, &out.Mtimensec, time.Unix(st.Mtim.Unix()))
		setTime(&out.Ctime, &out.Ctimensec, time.Unix(st.Ctim.Unix()))
		return
	}
	if uid, gid, ok := layer.OwnerOf(fi); ok {
		setOwner(&out.Owner, uid, gid)
	}
	t := fi.ModTime()
	setTime(&out.Atime, &out.Atimensec, t)
	setTime(&out.Mtime, &out.Mtimensec, t)
	setTime(&out.Ctime, &out.Ctimensec, t)
}

// setOwner gives out the ids a layer records; one it does not
// (layer.NoOwner) stays the mount's.
func setOwner(out *fuse.Owner, uid, gid uint32) {
	if uid != layer.NoOwner {
		out.Uid = uid
	}
	if gid != layer.NoOwner {
		out.Gid = gid
	}
}

func setTime(sec *uint64, nsec *uint32, t time.Time) {
	if t.IsZero() || t.Unix() < 0 {
		*sec, *nsec = 0, 0
		return
	}
	*sec = uint64(t.Unix())
	*nsec = uint32(t.Nanosecond())
}

const blockSize = 4096
