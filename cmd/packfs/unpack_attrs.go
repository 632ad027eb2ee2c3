package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// What unpack restores beyond modes and times: holes, hard links and,
// when it runs as root, owners. A pack's FileInfo.Sys (packreader.Sys)
// gives owner and inode through these methods; a host directory's gives
// a *syscall.Stat_t.

type (
	ownerSys      interface{ Owner() (uid, gid uint32) }
	ownerNamesSys interface {
		OwnerNames() (user, group string)
	}
	inodeSys interface {
		Inode() (ino uint64, nlink uint32)
	}
)

// ownerOf returns info's owner, if its Sys says.
func ownerOf(info fs.FileInfo) (uid, gid int, ok bool) {
	switch s := info.Sys().(type) {
	case ownerSys:
		u, g := s.Owner()
		// ^0 is a pack's "no owner recorded" (packreader.NoOwner).
		return int(u), int(g), u != ^uint32(0) && g != ^uint32(0)
	case *syscall.Stat_t:
		return int(s.Uid), int(s.Gid), true
	}
	return 0, 0, false
}

// ownerOf is ownerOf with the pack's owner names mapped to this
// machine's ids where it knows them, as tar does, unless -numeric-owner:
// a name this machine lacks keeps the pack's id.
func (u *unpacker) ownerOf(info fs.FileInfo) (uid, gid int, ok bool) {
	uid, gid, ok = ownerOf(info)
	if !ok || u.o.numeric {
		return uid, gid, ok
	}
	if s, named := info.Sys().(ownerNamesSys); named {
		user, group := s.OwnerNames()
		if id, found := u.ids.user(user); found && uid != -1 {
			uid = id
		}
		if id, found := u.ids.group(group); found && gid != -1 {
			gid = id
		}
	}
	return uid, gid, ok
}

// idCache looks up names in this machine's user and group databases,
// each name once.
type idCache struct {
	users, groups map[string]int // -1: not found
}

func (c *idCache) user(name string) (int, bool) {
	return c.lookup(&c.users, name, func(n string) (string, error) {
		u, err := user.Lookup(n)
		if err != nil {
			return "", err
		}
		return u.Uid, nil
	})
}

func (c *idCache) group(name string) (int, bool) {
	return c.lookup(&c.groups, name, func(n string) (string, error) {
		g, err := user.LookupGroup(n)
		if err != nil {
			return "", err
		}
		return g.Gid, nil
	})
}

func (c *idCache) lookup(m *map[string]int, name string, find func(string) (string, error)) (int, bool) {
	if name == "" {
		return 0, false
	}
	if *m == nil {
		*m = map[string]int{}
	}
	id, ok := (*m)[name]
	if !ok {
		id = -1
		if s, err := find(name); err == nil {
			if v, err := strconv.ParseUint(s, 10, 32); err == nil && v != 1<<32-1 {
				id = int(v)
			}
		}
		(*m)[name] = id
	}
	return id, id >= 0
}

// linkOf returns the inode of a regular file with more than one link.
func linkOf(info fs.FileInfo) (uint64, bool) {
	if !info.Mode().IsRegular() {
		return 0, false
	}
	switch s := info.Sys().(type) {
	case inodeSys:
		ino, n := s.Inode()
		return ino, n > 1
	case *syscall.Stat_t:
		return s.Ino, s.Nlink > 1
	}
	return 0, false
}

// maxLinkFds bounds the descriptors unpack keeps open on first links; a
// link of an inode past it is written as a copy.
const maxLinkFds = 256

// linkTo makes name in parent a hard link to the file already extracted
// for inode ino, and reports whether there was one. The first file is
// held by an O_PATH descriptor and linked through /proc/self/fd, so no
// path under dst is resolved again (a symlink put there since cannot
// redirect the link).
func (u *unpacker) linkTo(ino uint64, parent int, name string) (bool, error) {
	fd, ok := u.links[ino]
	if !ok {
		return false, nil
	}
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), parent, name, unix.AT_SYMLINK_FOLLOW)
	return err == nil, err
}

// keepLink remembers the file name in parent, just extracted, as the
// first link of inode ino.
func (u *unpacker) keepLink(ino uint64, parent int, name string) {
	if len(u.links) >= maxLinkFds {
		return
	}
	fd, err := unix.Openat(parent, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		u.links[ino] = fd
	}
}

func (u *unpacker) closeLinks() {
	for _, fd := range u.links {
		unix.Close(fd)
	}
}

// chown gives name in parent (not followed) the owner info records,
// when unpack runs as root; otherwise files keep the caller's.
func (u *unpacker) chown(parent int, name string, info fs.FileInfo) error {
	if !u.root {
		return nil
	}
	uid, gid, ok := u.ownerOf(info)
	if !ok {
		return nil
	}
	return unix.Fchownat(parent, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
}

// copySparse copies src to f, leaving a hole wherever a block of zeros
// would go (as cp --sparse=always does): the holes of a pack come back as
// holes, and a file with one extent takes one extent's blocks. A source
// that says where its data is (Seek with SEEK_DATA and SEEK_HOLE, as a
// pack's files and host files do) has its holes skipped unread.
func copySparse(f *os.File, src io.Reader, size int64) error {
	if sk, ok := src.(io.Seeker); ok {
		if ra, ok := src.(io.ReaderAt); ok {
			if _, err := sk.Seek(0, unix.SEEK_DATA); err == nil || errors.Is(err, syscall.ENXIO) {
				return copyExtents(f, ra, sk, size)
			}
		}
	}
	return copyZeros(f, src, 0, size)
}

// copyExtents copies the data extents of src, found with SEEK_DATA and
// SEEK_HOLE, to the same offsets of f, and sets f's size.
func copyExtents(f *os.File, ra io.ReaderAt, sk io.Seeker, size int64) error {
	for off := int64(0); off < size; {
		d, err := sk.Seek(off, unix.SEEK_DATA)
		if errors.Is(err, syscall.ENXIO) {
			break
		}
		if err != nil {
			return err
		}
		h, err := sk.Seek(d, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if h <= d {
			return fmt.Errorf("extent at %d ends at %d", d, h)
		}
		if err := copyZeros(f, io.NewSectionReader(ra, d, h-d), d, -1); err != nil {
			return err
		}
		off = h
	}
	return f.Truncate(size)
}

// copyZeros copies src to f from offset off, skipping blocks of zeros,
// and, unless size is -1, sets f's size to what was copied.
func copyZeros(f *os.File, src io.Reader, off int64, size int64) error {
	const block, page = 64 << 10, 4 << 10
	buf := make([]byte, block)
	for {
		n, err := io.ReadFull(src, buf)
		// Zeros are skipped a page at a time, the unit of a hole.
		for b := buf[:n]; len(b) > 0; {
			k := min(len(b), page)
			if !isZero(b[:k]) {
				if _, werr := f.WriteAt(b[:k], off); werr != nil {
					return werr
				}
			}
			off += int64(k)
			b = b[k:]
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if size == -1 {
		return nil
	}
	return f.Truncate(off)
}

func isZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
