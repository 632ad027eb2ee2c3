package packfs

import (
	"errors"
	"io"
	"io/fs"
	"iter"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/wal"
)

// storeFile is an open file of a Store. Its writes are logged under the
// file's current name in the union, which the store keeps right across
// renames; a file whose name is gone (removed, or renamed over) is
// written in memory only, as on Linux such a file's data is lost at
// close. A checkpoint moves it to the new union by that name, so that it
// goes on seeing what is written to the file.
type storeFile struct {
	s    *Store
	name string
	flag int
	f    atomic.Pointer[fileRef] // a checkpoint moves the file to the new union
	path string                  // guarded by s.wmu; "" once nameless
	// mu is held for reading by each read, seek and stat, and for
	// writing by a move, which closes the file they use and takes its
	// offset: a read beside a checkpoint neither fails on the closed
	// file nor moves the offset after it was taken. Writes need not take
	// it: they and moves both hold s.wmu.
	mu sync.RWMutex
	// listed: a directory that has begun its listing, which it keeps
	// wherever the store moves (a move opens the directory again).
	listed atomic.Bool
	// prev and next thread the store's open files (see handleList);
	// inList says whether the file is on it. Guarded by s.hmu.
	prev, next *storeFile
	inList     bool
	// in is the union the file is open in; before, for a file opened
	// from the state before a running transaction, its name in that
	// state, which an undone transaction gives back. Guarded by s.hmu.
	in     *FS
	before string
}

type fileRef struct{ layer.File }

// newHandle returns a handle of s on f, which the union in opened as
// name, not yet one of s's open files (see join). The handle and its
// first reference to f come in one allocation: most handles never move.
func (s *Store) newHandle(name string, flag int, f layer.File, in *FS) *storeFile {
	n := &struct {
		h   storeFile
		ref fileRef
	}{h: storeFile{s: s, name: name, flag: flag, path: ownPath(f, name), in: in}, ref: fileRef{f}}
	h := &n.h
	h.f.Store(&n.ref)
	return h
}

// join adds h to s's open files and reports true, or reports false,
// having added nothing, when a change that can make its name stale came
// since s.names was gen. s.hmu is held.
//
// A file opened from the state before a running transaction (h.in is
// s.txFrozen) has the name it had then: the transaction's moves so far
// give it its name in the live union, and the transaction's end moves it
// there (see Store.endTx).
func (s *Store) join(h *storeFile, gen uint64) bool {
	if s.names.Load() != gen {
		return false
	}
	if h.in != nil && h.in == s.txFrozen {
		h.before = h.path
		for _, m := range s.txMoves {
			h.path = nameAfter(h.path, m.kind, m.from, m.to)
		}
	}
	s.handles.add(h)
	return true
}

// handleList is a store's open files, a list threaded through them: an
// open and a close cost a few pointer stores under s.hmu and no
// allocation, where a map's insert and delete cost as much as the rest
// of a small file's open and read. Its order means nothing.
type handleList struct {
	head *storeFile
	n    int
}

func (l *handleList) add(h *storeFile) {
	h.prev, h.next, h.inList = nil, l.head, true
	if l.head != nil {
		l.head.prev = h
	}
	l.head = h
	l.n++
}

// remove takes h off the list; a file closed twice is taken off once.
func (l *handleList) remove(h *storeFile) {
	if !h.inList {
		return
	}
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		l.head = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	}
	h.prev, h.next, h.inList = nil, nil, false
	l.n--
}

func (l *handleList) len() int { return l.n }

// all yields every open file; the caller holds s.hmu and neither adds
// nor removes files meanwhile.
func (l *handleList) all() iter.Seq[*storeFile] {
	return func(yield func(*storeFile) bool) {
		for h := l.head; h != nil; h = h.next {
			if !yield(h) {
				return
			}
		}
	}
}

const noFollow = syscall.O_NOFOLLOW

func (h *storeFile) file() layer.File { return h.f.Load().File }

// openView opens name for reading in the union readers see, as readView
// reads it: an open of the live union that a transaction began or ended
// beside may have walked part of it (a directory renamed away, a file it
// made), so that file is closed and the name opened again.
func (s *Store) openView(name string, flag int, perm fs.FileMode) (layer.File, *FS, error) {
	var f layer.File
	var in *FS
	_, err := readView(s, "open", name, func(u *FS) (struct{}, error) {
		if f != nil {
			f.Close() // opened beside a transaction: again
			f = nil
		}
		var err error
		f, err = u.OpenFile(name, flag, perm)
		in = u
		return struct{}{}, err
	})
	return f, in, err
}

// openRead opens name for reading, as openView finds it, and makes it one
// of the store's open files. The open takes no lock, so a rename, a
// removal or a transaction may come between it and the file's joining
// s.handles, which would then keep a name the change made stale: such an
// open is made again. The third try holds s.hmu from the open to the
// joining, which every such change takes, so that writers that race
// every try do not starve it; it waits for no writer's transaction.
func (s *Store) openRead(name string, flag int, perm fs.FileMode) (layer.File, error) {
	for try := 1; ; try++ {
		locked := try >= 3
		if locked {
			s.hmu.Lock()
		}
		gen := s.names.Load()
		f, in, err := s.openView(name, flag, perm)
		if err != nil {
			if locked {
				s.hmu.Unlock()
			}
			return nil, err
		}
		h := s.newHandle(name, flag, f, in)
		if !locked {
			s.hmu.Lock()
		}
		joined := s.join(h, gen)
		s.hmu.Unlock()
		if joined {
			return h, nil
		}
		f.Close()
	}
}

// OpenFile opens name with os.OpenFile's flags. An open for writing is
// logged when it creates or truncates.
func (s *Store) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	if err := layer.CheckOpenFlag(flag); err != nil {
		return nil, layer.PathError("open", name, err)
	}
	if flag&writeFlags == 0 {
		return s.openRead(name, flag, perm)
	}
	if err := s.lockChange("open", name); err != nil {
		return nil, err
	}
	if err := s.usable("open", name); err != nil {
		s.wmu.Unlock()
		return nil, err
	}
	u := s.live.Load()
	o := op{kind: opOpen, path: name, a: int64(flag&(os.O_CREATE|os.O_EXCL|os.O_TRUNC|noFollow) | os.O_WRONLY), b: int64(perm)}
	o.time = s.tick()
	logged := flag&(os.O_CREATE|os.O_TRUNC) != 0
	var pre undoPoint
	if logged {
		pre = s.undoFor(&o)
	}
	f, err := u.OpenFile(name, flag, perm)
	if err != nil {
		s.wmu.Unlock()
		return nil, err
	}
	h := s.newHandle(name, flag, f, u)
	s.hmu.Lock()
	s.join(h, s.names.Load()) // under s.hmu: it joins
	s.hmu.Unlock()
	var lsn wal.LSN
	if logged {
		lsn, err = s.logOp(&o, pre)
	}
	s.wmu.Unlock()
	if err = s.done(lsn, err); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// ownPath returns the union's own name for the file f it opened as name,
// its symlinks resolved: a *file carries it, and any other handle was
// opened by name itself. Taking it from the handle spares a second walk
// of name before the open.
func ownPath(f layer.File, name string) string {
	switch uf := f.(type) {
	case *file:
		return uf.path
	case *dir:
		uf.mu.Lock()
		defer uf.mu.Unlock()
		return uf.path
	case liveNamer:
		// The upper layer's own handle, which the union hands out for a
		// file the upper resolves by its own walk, symlinks and all.
		if p, ok := uf.LiveName(); ok {
			return p
		}
		return "" // unlinked meanwhile: nameless
	}
	return name
}

// liveNamer is a handle of the upper layer (package mem) that knows the
// path that leads to its file.
type liveNamer interface {
	LiveName() (string, bool)
}

// closed returns fs.ErrClosed once the store is closed: its files fail
// from then on, reads too, whatever layer they read.
func (h *storeFile) closed(op string) error {
	if h.s.shut.Load() {
		return layer.PathError(op, h.name, fs.ErrClosed)
	}
	return nil
}

func (h *storeFile) Name() string { return h.name }

func (h *storeFile) Stat() (fs.FileInfo, error) {
	if err := h.closed("stat"); err != nil {
		return nil, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.file().Stat()
}

func (h *storeFile) Read(p []byte) (int, error) {
	if err := h.closed("read"); err != nil {
		return 0, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.file().Read(p)
}

func (h *storeFile) ReadAt(p []byte, off int64) (int, error) {
	if err := h.closed("read"); err != nil {
		return 0, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.file().ReadAt(p, off)
}

func (h *storeFile) Seek(off int64, whence int) (int64, error) {
	if err := h.closed("seek"); err != nil {
		return 0, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.file().Seek(off, whence)
}

// SeeksHoles reports whether Seek takes layer.SeekData and
// layer.SeekHole, which it passes on to the union's file.
func (h *storeFile) SeeksHoles() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	s, ok := h.file().(layer.HoleSeeker)
	return ok && s.SeeksHoles()
}

func (h *storeFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if err := h.closed("readdirent"); err != nil { // os's name for it
		return nil, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	ents, err := h.file().ReadDir(n)
	if err == nil || err == io.EOF {
		h.listed.Store(true)
	}
	return ents, err
}

func (h *storeFile) WriteString(s string) (int, error)            { return h.Write([]byte(s)) }
func (h *storeFile) Write(p []byte) (int, error)                  { return h.write(p, 0, false) }
func (h *storeFile) WriteAt(p []byte, off int64) (n int, e error) { return h.write(p, off, true) }

// readOnly reports whether the file was opened for reading only: its
// writes fail in the file itself, as os's do.
func (h *storeFile) readOnly() bool { return h.flag&(os.O_WRONLY|os.O_RDWR) == 0 }

// write writes p at off when positioned (WriteAt), or else at the file's
// offset (Write), and logs what was written at the offset it landed at.
func (h *storeFile) write(p []byte, off int64, positioned bool) (int, error) {
	switch {
	case h.readOnly() && positioned:
		return h.file().WriteAt(p, off) // the file refuses it, as os's does
	case h.readOnly():
		return h.file().Write(p)
	case positioned && h.flag&os.O_APPEND != 0:
		return 0, errWriteAtInAppendMode
	case positioned && off < 0:
		return 0, layer.PathError("writeat", h.name, errNegativeOffset)
	}
	s := h.s
	if err := s.lockChange("write", h.name); err != nil {
		return 0, err
	}
	if err := s.usable("write", h.name); err != nil {
		s.wmu.Unlock()
		return 0, err
	}
	f := h.file()
	at := off
	var err error
	switch {
	case positioned:
	case h.flag&os.O_APPEND != 0:
		var fi fs.FileInfo
		if fi, err = f.Stat(); err == nil {
			at = fi.Size()
		}
	default:
		at, err = f.Seek(0, io.SeekCurrent)
	}
	if err != nil {
		// A closed or broken file: let the write give its own error.
		s.wmu.Unlock()
		if n, werr := f.Write(p); werr != nil || n == 0 {
			return n, werr
		}
		return 0, err
	}
	o := op{kind: opWriteAt, time: s.tick(), path: h.path, a: at, data: p}
	pre := s.undoFor(&o)
	if sw, ok := f.(sharedWriter); ok && h.path != "" && len(p) >= sharedMin && !o.split() {
		if n, done, err := h.writeShared(sw, &o, pre, !positioned); done {
			return n, err
		}
	}
	var n int
	if positioned {
		n, err = f.WriteAt(p, off)
	} else {
		n, err = f.Write(p)
	}
	var lsn wal.LSN
	var lerr error
	if n > 0 && h.path != "" {
		o.data = p[:n]
		lsn, lerr = s.logOp(&o, pre)
		if lerr != nil {
			n = 0 // undone
		}
	}
	s.wmu.Unlock()
	if lerr = s.done(lsn, lerr); err == nil {
		err = lerr
	}
	return n, err
}

// sharedMin is the size from which a write through a handle is logged
// before it applies, so that the file's chunks it fills whole can be the
// log's pages (see writeShared): a chunk of the in-memory layer.
const sharedMin = 64 << 10

// writeShared makes the write o, at o.a and of o.data, through sw, the
// union's file of the in-memory layer, as write does but logged first:
// the chunks it fills whole are then the log's mapped pages, not a copy
// of them, so the data is in memory once, in the page cache, and the
// write costs about what a host file system's does. s.wmu is held, and
// released; pre is the state before. done is false when sw cannot (the
// layer beneath is not the in-memory one): nothing was done, and the
// caller writes as ever.
//
// The file checks the write before it calls the log, so a logged write
// always applies; a failed append leaves the file as it was.
func (h *storeFile) writeShared(sw sharedWriter, o *op, pre undoPoint, advance bool) (n int, done bool, err error) {
	s := h.s
	var p wal.LSN
	var lerr error
	appended := false
	n, err = sw.WriteShared(o.data, o.a, advance, func() ([]byte, any, error) {
		appended = true
		var view []byte
		var m *wal.Mapping
		p, view, m, lerr = s.appendOp(o, true)
		if lerr != nil {
			return nil, nil, lerr
		}
		if m == nil {
			return nil, nil, nil // not mapped: the file copies the data
		}
		return view, m, nil
	})
	if !appended && errors.Is(err, errors.ErrUnsupported) {
		return 0, false, nil
	}
	if lerr != nil {
		// Nothing applied: the tree is pre already, and the store
		// fails from now on.
		err = s.fail(lerr, &pre)
	} else if appended {
		_, err = s.logged(o, p, nil, pre)
	}
	s.wmu.Unlock()
	if !appended {
		return n, true, err // the file refused the write
	}
	return n, true, s.done(p, err)
}

func (h *storeFile) Truncate(size int64) error {
	if h.readOnly() {
		return h.file().Truncate(size)
	}
	return h.change("truncate", op{kind: opTruncate, a: size}, func(f layer.File) error { return f.Truncate(size) })
}

// Chown changes the owner through the handle, as fchown(2) does: logged
// as a Chown of its name while it has one; a nameless file's change is
// not logged, since the file itself does not outlive a crash.
func (h *storeFile) Chown(uid, gid int) error {
	return h.change("chown", op{kind: opChown, a: int64(uid), b: int64(gid)}, func(f layer.File) error {
		c, ok := f.(layer.ChownFile)
		if !ok {
			return layer.PathError("chown", h.name, errors.ErrUnsupported)
		}
		return c.Chown(uid, gid)
	})
}

// Chmod changes the mode through the handle, as Chown does the owner.
func (h *storeFile) Chmod(mode fs.FileMode) error {
	return h.change("chmod", op{kind: opChmod, a: int64(mode)}, func(f layer.File) error {
		c, ok := f.(layer.ChmodFile)
		if !ok {
			return layer.PathError("chmod", h.name, errors.ErrUnsupported)
		}
		return c.Chmod(mode)
	})
}

// change applies fn to the file and logs o, given the file's name.
func (h *storeFile) change(opName string, o op, fn func(f layer.File) error) error {
	s := h.s
	if err := s.lockChange(opName, h.name); err != nil {
		return err
	}
	if err := s.usable(opName, h.name); err != nil {
		s.wmu.Unlock()
		return err
	}
	o.time, o.path = s.tick(), h.path
	pre := s.undoFor(&o)
	if err := fn(h.file()); err != nil {
		s.wmu.Unlock()
		return err
	}
	var lsn wal.LSN
	var err error
	if h.path != "" {
		lsn, err = s.logOp(&o, pre)
	}
	s.wmu.Unlock()
	return s.done(lsn, err)
}

// Sync makes the file's writes durable: under any policy but SyncNone,
// the whole log up to now.
func (h *storeFile) Sync() error {
	if err := h.file().Sync(); err != nil {
		return err
	}
	if h.s.opts.Sync == SyncNone || h.s.opts.ReadOnly {
		return nil
	}
	return h.s.Sync()
}

func (h *storeFile) Close() error {
	h.s.hmu.Lock()
	h.s.handles.remove(h)
	h.s.hmu.Unlock()
	return h.file().Close()
}

// moveTo reopens the file in u, at the same offset: a checkpoint replaced
// the union it was open in. It returns the size of the file when it is
// a regular file open for writing, which the next checkpoint writes
// again. s.wmu and s.hmu are held.
func (h *storeFile) moveTo(u *FS) int64 {
	if h.path == "" {
		return 0 // nameless: it stays where it is, unreachable as on Linux
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listed.Load() {
		return 0
	}
	old := h.file()
	nf, err := u.OpenFile(h.path, h.flag&^(os.O_CREATE|os.O_EXCL|os.O_TRUNC), 0)
	if err != nil {
		return 0
	}
	if off, err := old.Seek(0, io.SeekCurrent); err == nil {
		nf.Seek(off, io.SeekStart)
	}
	h.f.Store(&fileRef{nf})
	h.in = u
	old.Close()
	if h.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0
	}
	if fi, err := nf.Stat(); err == nil && fi.Mode().IsRegular() {
		return fi.Size()
	}
	return 0
}

// errNegativeOffset is what os gives for WriteAt at a negative offset.
var errNegativeOffset = errors.New("negative offset")

var _ layer.File = (*storeFile)(nil)
