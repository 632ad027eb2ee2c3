package packfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/packfs/packfs/layer"
)

// file is a layer's open file presented under the name the caller opened
// it by, as os reports it, with errors naming that name.
type file struct {
	name      string
	path      string // the layer's name for it
	appending bool   // opened with O_APPEND, which refuses WriteAt
	// hideWhiteouts drops whiteouts from a directory's listing.
	hideWhiteouts bool

	// mu guards f, which a copy-up may replace, and what follows.
	mu      sync.Mutex
	f       layer.File
	closed  bool
	unwatch func() // ends the watch of a lower file's handle
}

// cur locks f and returns the file it stands on now, until the caller's
// deferred f.mu.Unlock: a copy-up waits for an operation in flight.
func (f *file) cur() layer.File {
	f.mu.Lock()
	return f.f
}

// errWriteAtInAppendMode is what os gives for WriteAt with O_APPEND.
var errWriteAtInAppendMode = errors.New("os: invalid use of WriteAt on file opened with O_APPEND")

// wrap returns f under name; the layer knows it as p.
func wrap(f layer.File, name, p string) layer.File {
	if name == p {
		return f
	}
	return &file{f: f, name: name, path: p}
}

// rename gives err, which names the layer's path, the caller's name.
func (f *file) rename(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == f.path {
		return &fs.PathError{Op: pe.Op, Path: f.name, Err: pe.Err}
	}
	return err
}

func (f *file) Name() string { return f.name }

func (f *file) Stat() (fs.FileInfo, error) {
	cf := f.cur()
	defer f.mu.Unlock()
	fi, err := cf.Stat()
	if err != nil {
		return nil, f.rename(err)
	}
	return named(fi, f.name), nil
}

func (f *file) Read(p []byte) (int, error) {
	cf := f.cur()
	defer f.mu.Unlock()
	n, err := cf.Read(p)
	return n, f.rename(err)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	cf := f.cur()
	defer f.mu.Unlock()
	n, err := cf.ReadAt(p, off)
	return n, f.rename(err)
}

func (f *file) Write(p []byte) (int, error) {
	cf := f.cur()
	defer f.mu.Unlock()
	n, err := cf.Write(p)
	return n, f.rename(err)
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if f.appending {
		return 0, errWriteAtInAppendMode
	}
	cf := f.cur()
	defer f.mu.Unlock()
	n, err := cf.WriteAt(p, off)
	return n, f.rename(err)
}

func (f *file) WriteString(s string) (int, error) {
	cf := f.cur()
	defer f.mu.Unlock()
	n, err := cf.WriteString(s)
	return n, f.rename(err)
}

func (f *file) Seek(offset int64, whence int) (int64, error) {
	cf := f.cur()
	defer f.mu.Unlock()
	n, err := cf.Seek(offset, whence)
	return n, f.rename(err)
}

func (f *file) ReadDir(n int) ([]fs.DirEntry, error) {
	cf := f.cur()
	defer f.mu.Unlock()
	for {
		list, err := cf.ReadDir(n)
		if f.hideWhiteouts {
			list = visible(list)
			if len(list) == 0 && err == nil && n > 0 {
				continue // a page of whiteouts only: read on
			}
		}
		return list, f.rename(err)
	}
}

func (f *file) Truncate(size int64) error {
	cf := f.cur()
	defer f.mu.Unlock()
	return f.rename(cf.Truncate(size))
}

func (f *file) Sync() error {
	cf := f.cur()
	defer f.mu.Unlock()
	return f.rename(cf.Sync())
}

func (f *file) Close() error {
	f.mu.Lock()
	unwatch := f.unwatch
	f.unwatch = nil
	f.closed = true
	err := f.f.Close()
	f.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
	return f.rename(err)
}

// watch registers f, a read-only handle of the lower file n, to be moved to
// the upper copy when n is copied up.
func (f *file) watch(u *FS, n *node) {
	k := lowerKey{n.layer, n.path}
	u.watchMu.Lock()
	defer u.watchMu.Unlock()
	if u.watched == nil {
		u.watched = map[lowerKey]map[*file]bool{}
	}
	if u.watched[k] == nil {
		u.watched[k] = map[*file]bool{}
	}
	u.watched[k][f] = true
	f.unwatch = func() {
		u.watchMu.Lock()
		defer u.watchMu.Unlock()
		delete(u.watched[k], f)
		if len(u.watched[k]) == 0 {
			delete(u.watched, k)
		}
	}
}

// moveHandles points the open handles of the lower file n, just copied up,
// at the copy, at the same offset.
func (u *FS) moveHandles(n *node) {
	u.watchMu.Lock()
	handles := u.watched[lowerKey{n.layer, n.path}]
	delete(u.watched, lowerKey{n.layer, n.path})
	u.watchMu.Unlock()
	for h := range handles {
		h.mu.Lock()
		if !h.closed {
			if up, err := u.upper.OpenFile(n.path, os.O_RDONLY, 0); err == nil {
				off, _ := h.f.Seek(0, io.SeekCurrent)
				up.Seek(off, io.SeekStart)
				h.f.Close()
				h.f = up
			}
		}
		h.unwatch = nil
		h.mu.Unlock()
	}
}
