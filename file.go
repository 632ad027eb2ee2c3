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
	mu     sync.Mutex
	f      layer.File
	closed bool
	// watching is the union whose watch list took f, a handle of the
	// lower file key (see watch), set before f is handed out. listed,
	// prev and next are guarded by watching.watchMu: listed is cleared
	// when f leaves the list.
	watching   *FS
	key        lowerKey
	listed     bool
	prev, next *file
	// ro is f for a handle of a lower layer without OpenFile, kept in
	// the handle's own allocation.
	ro layer.ReadOnlyFile
}

// openLower opens the file p of the lower layer i (or a snapshot's top)
// for reading, as the caller's name.
func (u *FS) openLower(i int, p, name string, flag int) (*file, error) {
	lf := &file{name: name, path: p, appending: flag&os.O_APPEND != 0}
	l := u.layers[i]
	if _, ok := l.(layer.OpenFileFS); ok {
		f, err := layer.OpenFile(l, p, os.O_RDONLY, 0)
		if err != nil {
			return nil, err
		}
		lf.f = f
		return lf, nil
	}
	f, err := l.Open(p)
	if err != nil {
		return nil, err
	}
	lf.ro = layer.MakeReadOnly(f, p)
	lf.f = &lf.ro
	return lf, nil
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

// rename gives err, which names the layer's path, the caller's name. The
// layers return *fs.PathError itself, never wrapped, and io.EOF at the end
// of every read: neither costs an errors.As.
func (f *file) rename(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	pe, ok := err.(*fs.PathError)
	if !ok && !errors.As(err, &pe) {
		return err
	}
	if pe.Path == f.path {
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
	u := f.watching
	f.closed = true
	err := f.f.Close()
	f.mu.Unlock()
	if u != nil {
		u.unwatch(f)
	}
	return f.rename(err)
}

// watch registers f, a read-only handle of the lower file n, to be moved to
// the upper copy when n is copied up. The handles of one file form a list
// threaded through them, so that opening and closing a lower file
// allocate nothing for it.
//
// seen is u.copyUps as loaded before the walk that found n. A copy-up
// since then may have moved the handles of n before f was on the list,
// leaving f on a lower file that the union no longer shows: then watch
// registers nothing and reports false, and the caller opens again.
func (f *file) watch(u *FS, n *node, seen uint64) bool {
	u.watchMu.Lock()
	defer u.watchMu.Unlock()
	if u.copyUps.Load() != seen {
		return false
	}
	f.key = lowerKey{n.layer, n.path}
	f.watching = u
	f.listed = true
	if u.watched == nil {
		u.watched = map[lowerKey]*file{}
	}
	if head := u.watched[f.key]; head != nil {
		f.next, head.prev = head, f
	}
	u.watched[f.key] = f
	return true
}

// unwatch takes f off the watch list, if it is still on it.
func (u *FS) unwatch(f *file) {
	u.watchMu.Lock()
	defer u.watchMu.Unlock()
	if !f.listed {
		return // moved by a copy-up meanwhile
	}
	f.listed = false
	switch {
	case f.prev != nil:
		f.prev.next = f.next
	case f.next != nil:
		u.watched[f.key] = f.next
	default:
		delete(u.watched, f.key)
	}
	if f.next != nil {
		f.next.prev = f.prev
	}
	f.prev, f.next = nil, nil
}

// moveHandles points the open handles of the lower file n, just copied up,
// at the copy, at the same offset.
func (u *FS) moveHandles(n *node) {
	k := lowerKey{n.layer, n.path}
	u.watchMu.Lock()
	u.copyUps.Add(1)
	var handles []*file
	for h := u.watched[k]; h != nil; {
		next := h.next
		h.listed, h.prev, h.next = false, nil, nil
		handles = append(handles, h)
		h = next
	}
	delete(u.watched, k)
	u.watchMu.Unlock()
	for _, h := range handles {
		h.mu.Lock()
		if !h.closed {
			if up, err := u.upper.OpenFile(n.path, os.O_RDONLY, 0); err == nil {
				off, _ := h.f.Seek(0, io.SeekCurrent)
				up.Seek(off, io.SeekStart)
				h.f.Close()
				h.f = up
			}
		}
		h.mu.Unlock()
	}
}
