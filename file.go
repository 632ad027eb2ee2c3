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
	name string
	path string // the layer's name for it

	// mu guards f, which a copy-up may replace, and closed.
	mu sync.Mutex
	// The small fields sit together, so that a pack's file and the
	// union's handle of it fit one 320-byte allocation (see packFile).
	closed    bool
	appending bool // opened with O_APPEND, which refuses WriteAt
	// hideWhiteouts drops whiteouts from a directory's listing.
	hideWhiteouts bool
	// listed, prev and next are guarded by bucket.mu: listed is cleared
	// when f leaves the list.
	listed bool
	// bucket is the watch list that took f, a handle of the file path of
	// the lower layer lower (see watch), set before f is handed out.
	lower      int32
	bucket     *watchBucket
	prev, next *file
	f          layer.File
	// ro is f for a handle of a lower layer without OpenFile, kept in
	// the handle's own allocation.
	ro layer.ReadOnlyFile
}

// openLower opens the file p of the lower layer i (or a snapshot's top)
// for reading, as the caller's name.
func (u *FS) openLower(i int, p, name string, flag int) (*file, error) {
	l := u.layers[i]
	if _, ok := l.(layer.OpenFileFS); ok {
		f, err := layer.OpenFile(l, p, os.O_RDONLY, 0)
		if err != nil {
			return nil, err
		}
		return &file{f: f, name: name, path: p, appending: flag&os.O_APPEND != 0}, nil
	}
	f, err := l.Open(p)
	if err != nil {
		return nil, err
	}
	return u.lowerFile(f, p, name, flag), nil
}

// lowerFile presents f, a file of a lower layer opened for reading, as
// openLower does.
func (u *FS) lowerFile(f fs.File, p, name string, flag int) *file {
	lf := new(file)
	lf.init(f, p, name, flag)
	return lf
}

// init makes lf, new, the handle lowerFile returns.
func (lf *file) init(f fs.File, p, name string, flag int) {
	lf.name, lf.path, lf.appending = name, p, flag&os.O_APPEND != 0
	lf.ro = layer.MakeReadOnly(f, p)
	lf.f = &lf.ro
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

// sharedWriter is a layer's file that writes without copying what it
// can (the in-memory layer's; see storeFile.write).
type sharedWriter interface {
	WriteShared(p []byte, off int64, advance bool, log func() ([]byte, any, error)) (int, error)
}

// WriteShared is the layer's WriteShared, where its file has one; else it
// fails with errors.ErrUnsupported, having done nothing.
func (f *file) WriteShared(p []byte, off int64, advance bool, log func() ([]byte, any, error)) (int, error) {
	cf := f.cur()
	defer f.mu.Unlock()
	w, ok := cf.(sharedWriter)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	n, err := w.WriteShared(p, off, advance, log)
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

// SeeksHoles reports whether the file beneath, to which Seek passes its
// whence, takes layer.SeekData and layer.SeekHole.
func (f *file) SeeksHoles() bool {
	cf := f.cur()
	defer f.mu.Unlock()
	h, ok := cf.(layer.HoleSeeker)
	return ok && h.SeeksHoles()
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

// Chown changes the owner through the handle, as fchown(2) does, where
// the layer's file can (a file of the upper layer); a file still of a
// lower layer gives errors.ErrUnsupported.
func (f *file) Chown(uid, gid int) error {
	cf := f.cur()
	defer f.mu.Unlock()
	c, ok := cf.(layer.ChownFile)
	if !ok {
		return layer.PathError("chown", f.name, errors.ErrUnsupported)
	}
	return f.rename(c.Chown(uid, gid))
}

// Chmod changes the mode through the handle, as Chown does the owner.
func (f *file) Chmod(mode fs.FileMode) error {
	cf := f.cur()
	defer f.mu.Unlock()
	c, ok := cf.(layer.ChmodFile)
	if !ok {
		return layer.PathError("chmod", f.name, errors.ErrUnsupported)
	}
	return f.rename(c.Chmod(mode))
}

func (f *file) Sync() error {
	cf := f.cur()
	defer f.mu.Unlock()
	return f.rename(cf.Sync())
}

func (f *file) Close() error {
	f.mu.Lock()
	b := f.bucket
	f.closed = true
	err := f.f.Close()
	f.mu.Unlock()
	if b != nil {
		b.unwatch(f)
	}
	return f.rename(err)
}

// watch registers f, a read-only handle of the file f.path of the lower
// layer, to be moved to the upper copy when it is copied up. The handles
// of a bucket form a list threaded through them, so that opening and
// closing a lower file allocate nothing for it.
//
// seen is u.copyUps as loaded before the walk that found the file. A
// copy-up since then may have moved the file's handles before f was on
// the list, leaving f on a lower file that the union no longer shows:
// then watch registers nothing and reports false, and the caller opens
// again.
func (f *file) watch(u *FS, layer int, seen uint64) bool {
	b := u.watchBucket(f.path, true)
	b.mu.Lock()
	defer b.mu.Unlock()
	if u.copyUps.Load() != seen {
		return false
	}
	f.bucket, f.lower = b, int32(layer)
	f.listed = true
	if b.head != nil {
		f.next, b.head.prev = b.head, f
	}
	b.head = f
	return true
}

// unwatch takes f off the list, if it is still on it.
func (b *watchBucket) unwatch(f *file) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !f.listed {
		return // moved by a copy-up meanwhile
	}
	b.unlink(f)
}

// unlink takes f, listed, off the list. The caller holds b.mu.
func (b *watchBucket) unlink(f *file) {
	f.listed = false
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		b.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	}
	f.prev, f.next = nil, nil
}

// moveHandles points the open handles of the lower file n, just copied up,
// at the copy, at the same offset.
func (u *FS) moveHandles(n *node) {
	// Counted before the bucket is locked (and even when there is none
	// yet): a watch that locks it after this sees the count move.
	u.copyUps.Add(1)
	b := u.watchBucket(n.path, false)
	if b == nil {
		return // no lower file was ever opened
	}
	b.mu.Lock()
	var handles []*file
	for h := b.head; h != nil; {
		next := h.next
		if int(h.lower) == n.layer && h.path == n.path {
			b.unlink(h)
			handles = append(handles, h)
		}
		h = next
	}
	b.mu.Unlock()
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
