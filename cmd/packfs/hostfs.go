package main

import (
	"errors"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// hostFS is the source tree pack reads: os.DirFS, except that files are
// opened without following symlinks, with O_NONBLOCK, and refused unless
// they are regular files or directories. An entry listed as a regular
// file and replaced by a FIFO before it is opened would otherwise block
// the pack forever, waiting for a writer (tar opens with O_NONBLOCK for
// the same reason); one replaced by a symlink, or below a directory
// replaced by one, would have the pack read what the symlink names,
// outside the tree (a root-run pack of a hostile user's tree, holding
// another user's secret). On Linux 5.6 and later files are opened with
// openat2 beneath the tree's root with no symlink allowed on the way;
// elsewhere with O_NOFOLLOW, which guards the last element only.
// ReadFile goes straight to the system calls, without the poller
// registration and descriptor flag changes of an *os.File: packing a
// tree of small files is mostly opening them.
type hostFS struct {
	os  fs.FS // os.DirFS(dir), for the rest
	dir string

	once sync.Once
	root int // O_PATH descriptor of dir for openat2, or -1
}

// packSource returns the tree pack packs: the host directory dir. Close
// releases it.
func packSource(dir string) *hostFS { return &hostFS{os: os.DirFS(dir), dir: dir, root: -1} }

// Close closes the descriptor of the tree's root, if one was opened.
func (h *hostFS) Close() error {
	h.once.Do(func() {}) // none is opened after Close
	if h.root >= 0 {
		err := unix.Close(h.root)
		h.root = -1
		return err
	}
	return nil
}

func (h *hostFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(h.os, name) }
func (h *hostFS) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(h.os, name) }
func (h *hostFS) Lstat(name string) (fs.FileInfo, error)     { return fs.Lstat(h.os, name) }
func (h *hostFS) ReadLink(name string) (string, error)       { return fs.ReadLink(h.os, name) }

// errNotRegular says an entry listed as a file is not one when opened.
var errNotRegular = errors.New("not a regular file any more (changed while being packed)")

// errSymlinked says a symlink now stands where the entry or a directory
// above it was listed.
var errSymlinked = errors.New("a symlink now stands in its path (changed while being packed)")

// openNoFollow opens the file name of the tree with flags, following no
// symlink on the way where the system allows.
func (h *hostFS) openNoFollow(name string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	h.once.Do(func() {
		fd, err := unix.Open(h.dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		// A kernel before 5.6 (or a sandbox) has no openat2.
		probe, err := unix.Openat2(fd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
		if err != nil {
			unix.Close(fd)
			return
		}
		unix.Close(probe)
		h.root = fd
	})
	how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		var fd int
		var err error
		if h.root >= 0 {
			fd, err = unix.Openat2(h.root, name, &how)
		} else {
			fd, err = unix.Open(h.dir+"/"+name, flags, 0)
		}
		switch err {
		case unix.EINTR:
			continue
		case unix.ELOOP:
			return -1, errSymlinked
		}
		return fd, err
	}
}

// open opens the file name and returns its descriptor and size; a
// directory is accepted only when dirOK.
func (h *hostFS) open(name string, dirOK bool) (int, int64, error) {
	if !fs.ValidPath(name) {
		return -1, 0, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	fd, err := h.openNoFollow(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return -1, 0, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && !(dirOK && t == unix.S_IFDIR) {
		unix.Close(fd)
		return -1, 0, &fs.PathError{Op: "open", Path: name, Err: errNotRegular}
	}
	return fd, st.Size, nil
}

// Open opens a regular file or a directory.
func (h *hostFS) Open(name string) (fs.File, error) {
	fd, _, err := h.open(name, true)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), h.dir+"/"+name), nil
}

// ReadFile reads the whole regular file name.
func (h *hostFS) ReadFile(name string) ([]byte, error) {
	fd, size, err := h.open(name, false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// One byte more than announced, so that the common case ends with
	// one read returning 0.
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

var (
	_ fs.ReadFileFS = (*hostFS)(nil)
	_ fs.ReadDirFS  = (*hostFS)(nil)
	_ fs.StatFS     = (*hostFS)(nil)
	_ fs.ReadLinkFS = (*hostFS)(nil)
)
