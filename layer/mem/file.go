package mem

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/treap"
)

// errWriteAtInAppendMode is what os returns for WriteAt on an O_APPEND file.
var errWriteAtInAppendMode = errors.New("os: invalid use of WriteAt on file opened with O_APPEND")

// file is an open file. A file opened from the live layer follows its inode,
// so it keeps working after a rename or an unlink and sees other handles'
// writes; a file opened from a snapshot reads one frozen version.
type file struct {
	fsys   *FS    // nil when frozen
	ino    *inode // live files
	frozen *state // snapshot files
	name   string
	flag   int

	// closed is set once, by Close under mu; Stat reads it without mu,
	// as it reads nothing else that changes.
	closed atomic.Bool
	// aliased: name may not be the file's own path (the open resolved a
	// symlink, "." or ".." on the way, or may have); see LiveName.
	aliased bool

	// off is the offset of the next Read or Write. Every change to it is
	// made under mu, except that Read on a handle that cannot write moves
	// it without mu, by compare-and-swap from the offset it read at (see
	// Read): so Seek moves it by compare-and-swap too.
	off atomic.Int64

	mu  sync.Mutex // guards what follows
	dir *listing   // a directory's listing, from its first ReadDir on
}

// listing is what a directory handle lists: the entries the directory held
// at the first ReadDir, in pages after the last name returned.
type listing struct {
	kids    treap.Map[string, *entry]
	after   string
	started bool
}

var _ layer.File = (*file)(nil)

// cur returns the file's current state.
func (h *file) cur() *state {
	if h.frozen != nil {
		return h.frozen
	}
	return h.ino.cur.Load().state()
}

func (h *file) readable() bool { return h.flag&(os.O_WRONLY|os.O_RDWR) != os.O_WRONLY }
func (h *file) writable() bool {
	return h.fsys != nil && h.flag&(os.O_WRONLY|os.O_RDWR) != os.O_RDONLY
}

// check returns the error an operation op on h gives before it starts.
func (h *file) check(op string) error {
	if h.closed.Load() {
		return layer.PathError(op, h.name, fs.ErrClosed)
	}
	return nil
}

func (h *file) Name() string { return h.name }

// LiveName returns the file's own path in the live layer: the name it
// was opened by when that was a plain path to it, and else the path that
// leads to it now. ok is false for a file of a snapshot and for one no
// name reaches (unlinked, or in a removed directory). A union that hands
// out the layer's handles asks it where a handle opened through a
// symlink keeps its name.
func (h *file) LiveName() (name string, ok bool) {
	f := h.fsys
	if f == nil {
		return "", false
	}
	if !h.aliased {
		return h.name, true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pathOf(h.ino)
}

func (h *file) Stat() (fs.FileInfo, error) {
	if err := h.check("stat"); err != nil {
		return nil, err
	}
	if h.frozen != nil {
		return &fileInfo{name: baseName(h.name), s: h.frozen}, nil
	}
	e := h.ino.cur.Load()
	return e.info(baseName(h.name), e.state()), nil
}

// Read reads from the offset and moves it past what it read. On a handle
// that can write, it holds mu, so that it and Write serialize as on Linux.
// On one that cannot, only Read and Seek move the offset, and Read takes no
// lock: it reads at the offset it loaded and moves it only if no other Read
// or Seek moved it meanwhile, else reads again at the new one. Each Read
// then reads what it would have read had the Reads and Seeks run one after
// another.
func (h *file) Read(p []byte) (int, error) {
	if len(p) == 0 {
		// As os does: no system call, only the check that h is open.
		return 0, h.check("read")
	}
	if h.writable() {
		h.mu.Lock()
		defer h.mu.Unlock()
	}
	for {
		off := h.off.Load()
		n, err := h.readAt("read", p, off)
		if n > 0 && !h.off.CompareAndSwap(off, off+int64(n)) {
			continue
		}
		if err == io.EOF && n > 0 {
			err = nil
		}
		return n, err
	}
}

// ReadAt reads len(p) bytes at off without moving the offset; fewer bytes
// come with io.EOF.
// It takes no lock: it reads only what does not change and the file's
// current state, as Read does.
func (h *file) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, layer.PathError("readat", h.name, errors.New("negative offset"))
	}
	if len(p) == 0 {
		return 0, nil // as os does, even on a closed file
	}
	return h.readAt("read", p, off)
}

func (h *file) readAt(op string, p []byte, off int64) (int, error) {
	if err := h.check(op); err != nil {
		return 0, err
	}
	if !h.readable() {
		return 0, layer.PathError(op, h.name, errBadFD)
	}
	e := h.cur()
	if e.isDir() {
		return 0, layer.PathError(op, h.name, errIsDir)
	}
	if pastMax(off, len(p)) {
		return 0, layer.PathError(op, h.name, errInvalid)
	}
	n := e.data.readAt(p, off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *file) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, err := h.writeAt("write", p, h.off.Load(), h.flag&os.O_APPEND != 0)
	h.off.Add(int64(n))
	return n, err
}

func (h *file) WriteString(s string) (int, error) { return h.Write([]byte(s)) }

// WriteAt writes p at off without moving the offset. As with os, a file
// opened with O_APPEND refuses it.
func (h *file) WriteAt(p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.flag&os.O_APPEND != 0 {
		return 0, errWriteAtInAppendMode
	}
	if off < 0 {
		return 0, layer.PathError("writeat", h.name, errors.New("negative offset"))
	}
	if len(p) == 0 {
		return 0, nil // as os does, even on a closed file
	}
	return h.writeAt("write", p, off, false)
}

// writeAt writes p at off, or at the end of the file when appending, and
// moves h.off to the end of what it wrote. The append position is read
// under the writer lock, so concurrent appends never overlap.
func (h *file) writeAt(op string, p []byte, off int64, appending bool) (int, error) {
	if err := h.check(op); err != nil {
		return 0, err
	}
	if !h.writable() {
		return 0, layer.PathError(op, h.name, errBadFD)
	}
	f := h.fsys
	f.mu.Lock()
	defer f.unlock()
	if len(p) == 0 {
		return 0, nil // Linux moves no offset for an empty write
	}
	s := h.ino.cur.Load().state()
	if appending {
		off = s.size()
		h.off.Store(off)
	}
	if !s.isRegular() || pastMax(off, len(p)) {
		return 0, layer.PathError(op, h.name, errInvalid)
	}
	// The new state, its content and its description in one
	// allocation: a write makes the first two, and the next Stat or
	// lookup would make the third alone. The first write of a small
	// file brings its bytes in the same allocation too, so that a read
	// of it, after the entry, follows one pointer to one object where it
	// followed two to two.
	var ns *state
	var nc *content
	var nfi *fileInfo
	var spare []byte
	var mark *atomic.Int32
	if s.data.Size() == 0 && off+int64(len(p)) <= smallInline {
		// Not a markedContent: its padding would push the struct past
		// 256 bytes.
		n := &struct {
			s    state
			fi   fileInfo // in the state's cache line, for a Stat
			c    content
			mark atomic.Int32
			b    [smallInline]byte
		}{s: *s}
		ns, nc, nfi, mark, spare = &n.s, &n.c, &n.fi, &n.mark, n.b[:]
	} else {
		n := &struct {
			s    state
			fi   fileInfo
			c    content
			mark atomic.Int32
		}{s: *s}
		ns, nc, nfi, mark = &n.s, &n.c, &n.fi, &n.mark
	}
	ns.data = s.data.writeInto(nc, p, off, spare, mark)
	ns.mtime = f.now().UnixNano()
	f.set(h.ino, ns)
	describe(h.ino, ns, nfi)
	f.note(layer.OpWrite, h.ino)
	return len(p), nil
}

// smallInline is the most bytes a file's first write brings in the
// allocation of its state (see writeAt): with the state, its content, its
// tail's mark and its description it fills the 256-byte size class.
const smallInline = 132

// WriteShared writes p at off as WriteAt does, but through log and
// without copying p where it can; when advance is set it moves the
// offset past what it wrote, as Write does (O_APPEND refuses neither:
// the caller found the position). Once the write is known to succeed,
// under the layer's writer lock and before it changes anything, it calls
// log, which returns p's bytes where they stay unchanged and readable
// while pin is reachable; the file keeps those bytes as its chunks where
// p covers chunks whole. A nil shared makes the write copy p. An error
// from log fails the write, which changes nothing.
//
// It is the durable store's large write: log appends p to the store's
// log and returns the log's mapped pages, so that the data is in memory
// once, in the page cache.
func (h *file) WriteShared(p []byte, off int64, advance bool, log func() (shared []byte, pin any, err error)) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off < 0 {
		return 0, layer.PathError("writeat", h.name, errors.New("negative offset"))
	}
	if err := h.check("write"); err != nil {
		return 0, err
	}
	if !h.writable() {
		return 0, layer.PathError("write", h.name, errBadFD)
	}
	f := h.fsys
	f.mu.Lock()
	defer f.unlock()
	if len(p) == 0 {
		return 0, nil
	}
	s := h.ino.cur.Load().state()
	if !s.isRegular() || pastMax(off, len(p)) {
		return 0, layer.PathError("write", h.name, errInvalid)
	}
	shared, pin, err := log()
	if err != nil {
		return 0, err
	}
	ns := s.with()
	if len(shared) == len(p) && pin != nil {
		ns.data = s.data.writeShared(shared, off, pin)
	} else {
		ns.data = s.data.writeAt(p, off)
	}
	ns.mtime = f.now().UnixNano()
	f.set(h.ino, ns)
	f.note(layer.OpWrite, h.ino)
	if advance {
		h.off.Store(off + int64(len(p)))
	}
	return len(p), nil
}

// pastMax reports whether n bytes at off end past math.MaxInt64, the
// largest file size, as on tmpfs: Linux refuses such a read or write with
// EINVAL before it looks at the file.
func pastMax(off int64, n int) bool { return off > math.MaxInt64-int64(n) }

func (h *file) Seek(offset int64, whence int) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("seek"); err != nil {
		return 0, err
	}
	if whence == layer.SeekData || whence == layer.SeekHole {
		return h.seekExtent(offset, whence == layer.SeekHole)
	}
	var pos int64
	for {
		off := h.off.Load()
		switch whence {
		case io.SeekStart:
			pos = offset
		case io.SeekCurrent:
			pos = off + offset
		case io.SeekEnd:
			pos = h.cur().size() + offset
		default:
			return 0, layer.PathError("seek", h.name, errInvalid)
		}
		if pos < 0 {
			return 0, layer.PathError("seek", h.name, errInvalid)
		}
		// A Read without mu may have moved the offset since the Load.
		if h.off.CompareAndSwap(off, pos) {
			break
		}
	}
	if pos == 0 && h.cur().isDir() {
		h.dir = nil
	}
	return pos, nil
}

// seekExtent is Seek with layer.SeekData or layer.SeekHole, as lseek(2)
// does on tmpfs: a chunk never written is a hole. h.mu is held.
func (h *file) seekExtent(off int64, hole bool) (int64, error) {
	s := h.cur()
	if !s.isRegular() {
		return 0, layer.PathError("seek", h.name, errInvalid)
	}
	if off < 0 {
		return 0, layer.PathError("seek", h.name, errInvalid)
	}
	if off >= s.size() {
		return 0, layer.PathError("seek", h.name, syscall.ENXIO)
	}
	pos := s.data.seekExtent(off, hole)
	if pos >= s.size() && !hole {
		return 0, layer.PathError("seek", h.name, syscall.ENXIO)
	}
	h.off.Store(pos)
	return pos, nil
}

// SeeksHoles reports that Seek takes layer.SeekData and layer.SeekHole
// (see layer.HoleSeeker).
func (h *file) SeeksHoles() bool { return true }

var _ layer.HoleSeeker = (*file)(nil)

func (h *file) Truncate(size int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("truncate"); err != nil {
		return err
	}
	if !h.writable() || size < 0 {
		return layer.PathError("truncate", h.name, errInvalid)
	}
	f := h.fsys
	f.mu.Lock()
	defer f.unlock()
	s := h.ino.cur.Load().state()
	if !s.isRegular() {
		return layer.PathError("truncate", h.name, errInvalid)
	}
	ns := s.with()
	ns.data = s.data.truncate(size)
	ns.mtime = f.now().UnixNano()
	f.set(h.ino, ns)
	f.note(layer.OpWrite, h.ino)
	return nil
}

// Chown changes the file's owner as Chown does (-1 leaves an id), through
// the handle: it reaches the file after a rename or a remove, as fchown(2)
// does. A snapshot's file is read-only (EROFS).
func (h *file) Chown(uid, gid int) error { return h.change("chown", chown(uid, gid)) }

// Chmod changes the file's mode through the handle, as fchmod(2) does.
func (h *file) Chmod(mode fs.FileMode) error {
	return h.change("chmod", func(s *state) {
		s.mode = s.mode&^fileModeMask | mode&fileModeMask
	})
}

// change applies fn to a new state of the handle's file.
func (h *file) change(op string, fn func(s *state)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(op); err != nil {
		return err
	}
	if h.fsys == nil {
		return layer.PathError(op, h.name, syscall.EROFS)
	}
	f := h.fsys
	f.mu.Lock()
	defer f.unlock()
	ns := h.ino.cur.Load().state().with()
	fn(ns)
	f.set(h.ino, ns)
	f.note(layer.OpChattr, h.ino)
	return nil
}

var (
	_ layer.ChownFile = (*file)(nil)
	_ layer.ChmodFile = (*file)(nil)
)

// Sync returns nil: an in-memory layer has nothing to flush.
func (h *file) Sync() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.check("sync")
}

func (h *file) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("close"); err != nil {
		return err
	}
	h.closed.Store(true)
	h.dir = nil
	return nil
}

// ReadDir returns the next n entries of the directory, as
// [fs.ReadDirFile] specifies, from the listing taken at the first call:
// entries added or removed meanwhile neither appear nor repeat.
func (h *file) ReadDir(n int) ([]fs.DirEntry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check("readdirent"); err != nil {
		return nil, err
	}
	if h.dir == nil {
		var e *state
		if h.frozen == nil {
			// The listing must not change under the handle: freeze the
			// index, as a snapshot does, so that writes copy from now on,
			// and take the state before the next writer can make one
			// that the new owner edits in place.
			h.fsys.mu.Lock()
			h.fsys.freeze()
			e = h.cur()
			h.fsys.mu.Unlock()
		} else {
			e = h.cur()
		}
		if !e.isDir() {
			return nil, layer.PathError("readdirent", h.name, syscall.ENOTDIR)
		}
		h.dir = &listing{kids: e.children()}
	}
	if h.frozen == nil && !h.fsys.linked(h.ino) {
		// Linux lists nothing more of a removed directory.
		return nil, layer.PathError("readdirent", h.name, errNotExist)
	}
	out := list(h.dir.kids, h.dir.after, !h.dir.started, n)
	if len(out) > 0 {
		h.dir.after, h.dir.started = out[len(out)-1].Name(), true
	}
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}
