package layer

import (
	"io"
	"io/fs"
	"os"
	"time"
)

// File is an open file of a writable layer. *os.File satisfies it.
//
// ReadAt and WriteAt do not move the offset. Writes on a file opened without
// write access fail with an error wrapping syscall.EBADF. ReadDir reads a
// directory's entries as [fs.ReadDirFile] specifies, sorted by name (see
// the package documentation).
type File interface {
	fs.ReadDirFile
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.StringWriter
	Truncate(size int64) error
	Sync() error
	Name() string
}

var _ File = (*os.File)(nil)

// OpenFileFS opens files with flags, as [os.OpenFile] does. flag is a
// combination of os.O_RDONLY, os.O_WRONLY or os.O_RDWR with os.O_CREATE,
// os.O_EXCL, os.O_TRUNC, os.O_APPEND and os.O_SYNC; perm is used when the
// file is created.
type OpenFileFS interface {
	fs.FS
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
}

// CreateFS creates or truncates a file, as [os.Create] does.
type CreateFS interface {
	fs.FS
	Create(name string) (File, error)
}

// MkdirFS creates a directory, as [os.Mkdir] does.
type MkdirFS interface {
	fs.FS
	Mkdir(name string, perm fs.FileMode) error
}

// MkdirAllFS creates a directory and any missing parents, as [os.MkdirAll]
// does.
type MkdirAllFS interface {
	fs.FS
	MkdirAll(name string, perm fs.FileMode) error
}

// RemoveFS removes a file or an empty directory, as [os.Remove] does.
type RemoveFS interface {
	fs.FS
	Remove(name string) error
}

// RemoveAllFS removes a name and everything it contains, as [os.RemoveAll]
// does: a missing name is not an error.
type RemoveAllFS interface {
	fs.FS
	RemoveAll(name string) error
}

// RenameFS renames a file or directory, as [os.Rename] does.
type RenameFS interface {
	fs.FS
	Rename(oldname, newname string) error
}

// LinkFS creates a hard link, as [os.Link] does.
type LinkFS interface {
	fs.FS
	Link(oldname, newname string) error
}

// ChmodFS changes a file's mode, as [os.Chmod] does.
type ChmodFS interface {
	fs.FS
	Chmod(name string, mode fs.FileMode) error
}

// ChownFS changes a file's owner, following symlinks, as [os.Chown] does.
type ChownFS interface {
	fs.FS
	Chown(name string, uid, gid int) error
}

// LchownFS changes a file's owner without following a final symlink, as
// [os.Lchown] does.
type LchownFS interface {
	fs.FS
	Lchown(name string, uid, gid int) error
}

// ChtimesFS changes a file's access and modification times, as [os.Chtimes]
// does: a zero time.Time leaves that time unchanged.
type ChtimesFS interface {
	fs.FS
	Chtimes(name string, atime, mtime time.Time) error
}

// SymlinkFS creates newname as a symbolic link to oldname, as [os.Symlink]
// does.
type SymlinkFS interface {
	fs.FS
	Symlink(oldname, newname string) error
}

// ReadlinkFS returns a symbolic link's target, with [os.Root]'s spelling.
// [fs.ReadLinkFS] is the io/fs spelling of the same capability; [Readlink]
// uses either.
type ReadlinkFS interface {
	fs.FS
	Readlink(name string) (string, error)
}

// WriteFileFS writes a whole file, as [os.WriteFile] does.
type WriteFileFS interface {
	fs.FS
	WriteFile(name string, data []byte, perm fs.FileMode) error
}

// WhiteoutFS records a whiteout at name: an entry of type [ModeWhiteout]
// that a union reads as "deleted here, do not look below". It replaces a
// file, symlink, whiteout or empty directory already at name, in one step;
// a non-empty directory gives syscall.ENOTEMPTY. The parent must exist.
type WhiteoutFS interface {
	fs.FS
	Whiteout(name string) error
}

// FS is the whole writable contract: what a layer that can serve as a
// union's upper layer implements.
type FS interface {
	fs.ReadDirFS
	fs.ReadFileFS
	fs.StatFS
	fs.ReadLinkFS
	OpenFileFS
	CreateFS
	MkdirFS
	MkdirAllFS
	RemoveFS
	RemoveAllFS
	RenameFS
	ChmodFS
	ChownFS
	LchownFS
	ChtimesFS
	SymlinkFS
	ReadlinkFS
	WriteFileFS
	WhiteoutFS
}
