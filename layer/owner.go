package layer

import (
	"io/fs"
	"os"
	"time"
)

// NoOwner is the uid or gid of a file whose layer records none (an
// in-memory file nobody gave an owner, or a pack made from such a
// layer). It is also (uid_t)-1, the id that chown(2) reads as "leave
// unchanged", so no file can be given it.
const NoOwner = ^uint32(0)

// OwnerSys is what the FileInfo.Sys of a layer that keeps owners
// satisfies: [Sys] for the in-memory layer, the union and the store, and
// packreader's Sys for packs. A host file's Sys is a *syscall.Stat_t;
// [OwnerOf] reads either.
type OwnerSys interface {
	Owner() (uid, gid uint32)
}

// OwnerNamesSys is satisfied by a Sys that also knows the names of its
// owner, as packs made from a host directory record them. An empty name
// is unknown.
type OwnerNamesSys interface {
	OwnerNames() (user, group string)
}

// Sys is the FileInfo.Sys of a file that has an owner in a layer of this
// module other than a pack. A field is NoOwner when unknown.
type Sys struct {
	Uid, Gid uint32
}

// Owner returns the file's uid and gid.
func (s *Sys) Owner() (uid, gid uint32) { return s.Uid, s.Gid }

var _ OwnerSys = (*Sys)(nil)

// OwnerOf returns the owner info's Sys records: through [OwnerSys] or a
// host file's *syscall.Stat_t. ok is false when Sys records none; a field
// may still be NoOwner when ok is true but only the other is known.
func OwnerOf(info fs.FileInfo) (uid, gid uint32, ok bool) {
	switch s := info.Sys().(type) {
	case OwnerSys:
		uid, gid = s.Owner()
		return uid, gid, uid != NoOwner || gid != NoOwner
	}
	return hostOwner(info)
}

// ChownIDs returns the ids a file owned by uid and gid has after a
// chown(2) given newUID and newGID. As the kernel does, an id is taken as
// a uid_t (its low 32 bits), and (uid_t)-1 leaves the field unchanged.
func ChownIDs(uid, gid uint32, newUID, newGID int) (uint32, uint32) {
	if u := uint32(newUID); u != NoOwner {
		uid = u
	}
	if g := uint32(newGID); g != NoOwner {
		gid = g
	}
	return uid, gid
}

// ChownMode returns the mode a file has after a chown(2), even one that
// changes no id: as Linux does for a non-directory, it drops the setuid
// bit, and the setgid bit when the group may execute (a setgid bit
// without group execute marks mandatory locking, which is kept).
func ChownMode(mode fs.FileMode) fs.FileMode {
	if mode.IsDir() {
		return mode
	}
	mode &^= fs.ModeSetuid
	if mode&0o010 != 0 {
		mode &^= fs.ModeSetgid
	}
	return mode
}

// LchtimesFS changes the access and modification times of a file without
// following a final symlink, as utimensat(2) with AT_SYMLINK_NOFOLLOW
// does: a symlink's own times. A zero time.Time leaves that time
// unchanged.
type LchtimesFS interface {
	fs.FS
	Lchtimes(name string, atime, mtime time.Time) error
}

// Lchtimes changes the times of name without following a final symlink;
// a zero time.Time leaves that time as it was.
func Lchtimes(fsys fs.FS, name string, atime, mtime time.Time) error {
	if f, ok := fsys.(LchtimesFS); ok {
		return f.Lchtimes(name, atime, mtime)
	}
	return Unsupported("lchtimes", name)
}

// ChownFile is an open file whose owner can be changed through the
// handle, as fchown(2) does, whatever name it has now, or none after a
// remove: *os.File, and the files of package mem, the union and the
// store.
type ChownFile interface {
	Chown(uid, gid int) error
}

// ChmodFile is an open file whose mode can be changed through the
// handle, as fchmod(2) does.
type ChmodFile interface {
	Chmod(mode fs.FileMode) error
}

var (
	_ ChownFile = (*os.File)(nil)
	_ ChmodFile = (*os.File)(nil)
)
