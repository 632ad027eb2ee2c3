package mem

import (
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/packfs/packfs/treap"
)

// inode is a file's identity across versions. Entries are immutable
// versions; an inode ties together the versions of one file, so that an
// open handle keeps reaching its file after a rename or an unlink.
type inode struct {
	// cur is the latest version; handles load it without locking.
	cur atomic.Pointer[entry]
	// parent and name locate the file; only the writer changes them, under
	// FS.mu. parent is nil for the root and for an unlinked file; a reader
	// may load it to learn whether a directory is still linked.
	parent atomic.Pointer[inode]
	name   string
}

// entry is one immutable version of a file, directory, symlink or whiteout.
type entry struct {
	ino   *inode
	mode  fs.FileMode
	mtime int64                     // Unix nanoseconds
	data  *content                  // regular file: bytes; symlink: target
	kids  treap.Map[string, *entry] // directory: entries by name
}

// emptyDir is every new directory's index. Its NewOrdered order compares
// names as strings.Compare does, byte by byte, which is the order
// fs.ReadDir promises.
var emptyDir = treap.NewOrdered[string, *entry]()

func (e *entry) isDir() bool     { return e.mode.IsDir() }
func (e *entry) isSymlink() bool { return e.mode&fs.ModeSymlink != 0 }
func (e *entry) isRegular() bool { return e.mode.IsRegular() }

func (e *entry) size() int64 {
	if e.isDir() {
		return 0
	}
	return e.data.Size()
}

func (e *entry) target() string { return string(e.data.bytes()) }

// with returns a copy of e: the start of every new version.
func (e *entry) with() *entry {
	n := *e
	return &n
}

// fileInfo describes one version of an entry as fs.FileInfo and fs.DirEntry.
type fileInfo struct {
	name string
	e    *entry
}

func (fi *fileInfo) Name() string               { return fi.name }
func (fi *fileInfo) Size() int64                { return fi.e.size() }
func (fi *fileInfo) Mode() fs.FileMode          { return fi.e.mode }
func (fi *fileInfo) ModTime() time.Time         { return time.Unix(0, fi.e.mtime) }
func (fi *fileInfo) IsDir() bool                { return fi.e.isDir() }
func (fi *fileInfo) Sys() any                   { return nil }
func (fi *fileInfo) Type() fs.FileMode          { return fi.e.mode.Type() }
func (fi *fileInfo) Info() (fs.FileInfo, error) { return fi, nil }
func (fi *fileInfo) String() string             { return fs.FormatDirEntry(fi) }

// list returns up to n entries of dir after name after (all when n <= 0,
// from the start when first).
func list(kids treap.Map[string, *entry], after string, first bool, n int) []fs.DirEntry {
	size := kids.Len()
	if n > 0 && n < size {
		size = n
	}
	infos := make([]fileInfo, 0, size)
	seq := kids.All()
	if !first {
		seq = kids.After(after)
	}
	for name, e := range seq {
		if n > 0 && len(infos) == n {
			break
		}
		infos = append(infos, fileInfo{name, e})
	}
	out := make([]fs.DirEntry, len(infos))
	for i := range infos {
		out[i] = &infos[i]
	}
	return out
}
