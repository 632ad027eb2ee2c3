package main

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// hostFS is the source tree pack reads: os.DirFS, except that files are
// opened with O_NONBLOCK and refused unless they are regular files or
// directories. An entry listed as a regular file and replaced by a FIFO
// before it is opened would otherwise block the pack forever, waiting
// for a writer (tar opens with O_NONBLOCK for the same reason). ReadFile
// goes straight to the system calls, without the poller registration
// and descriptor flag changes of an *os.File: packing a tree of small
// files is mostly opening them.
type hostFS struct {
	os  fs.FS // os.DirFS(dir), for the rest
	dir string
}

// packSource returns the tree pack packs: the host directory dir.
func packSource(dir string) *hostFS { return &hostFS{os: os.DirFS(dir), dir: dir} }

func (h *hostFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(h.os, name) }
func (h *hostFS) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(h.os, name) }
func (h *hostFS) Lstat(name string) (fs.FileInfo, error)     { return fs.Lstat(h.os, name) }
func (h *hostFS) ReadLink(name string) (string, error)       { return fs.ReadLink(h.os, name) }

// errNotRegular says an entry listed as a file is not one when opened.
var errNotRegular = errors.New("not a regular file any more (changed while being packed)")

// open opens the file name and returns its descriptor and size; a
// directory is accepted only when dirOK.
func (h *hostFS) open(name string, dirOK bool) (int, int64, error) {
	if !fs.ValidPath(name) {
		return -1, 0, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	full := h.dir + "/" + name
	var fd int
	var err error
	for {
		fd, err = unix.Open(full, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != unix.EINTR {
			break
		}
	}
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
