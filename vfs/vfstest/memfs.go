// Package vfstest holds file systems for testing what is written through
// package vfs: [MemFS], an in-memory directory that remembers what has
// been made durable and can return the state a power cut leaves, and
// [Faulty], a wrapper that makes one chosen operation fail.
package vfstest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/packfs/packfs/vfs"
)

// ErrCrashed is what every operation gives once a MemFS has crashed.
var ErrCrashed = errors.New("vfstest: the machine has crashed")

// MemFS is an in-memory flat directory with a disk's durability rules:
//
//   - a file's contents and size become durable at File.Sync;
//   - the names created, renamed and removed become durable at SyncDir.
//
// [MemFS.Recover] returns what a power cut leaves: the durable state, and
// optionally part of what was not yet durable. [MemFS.CrashAt] stops the
// machine at a chosen operation. Every operation is recorded in
// [MemFS.Ops], in order. A MemFS is safe for concurrent use.
type MemFS struct {
	// SyncDelay is how long each File.Sync takes, outside the MemFS's
	// lock, as a disk's flush would: it lets concurrent committers meet.
	SyncDelay time.Duration

	mu sync.Mutex
	// names is the directory as the process sees it; durable is the
	// directory as of the last SyncDir; pending holds the changes since,
	// in order, because a file system journals them in order and a crash
	// may keep any prefix of them.
	names   map[string]*inode
	durable map[string]*inode
	pending []nsChange
	locks   map[string]bool

	n       int // operations so far
	crashAt int // the operation that crashes; -1: none
	crashed bool
	ops     []string
}

// nsChange is one change to the directory: name now refers to ino (nil:
// removed).
type nsChange struct {
	name string
	ino  *inode
}

// inode is a file. data is what the process sees; saved is what is
// durable; dirty is the offset from which data may differ from saved.
type inode struct {
	data  []byte
	saved []byte
	dirty int
}

var (
	_ vfs.FS        = (*MemFS)(nil)
	_ vfs.Allocator = (*memFile)(nil)
)

// NewMemFS returns an empty MemFS.
func NewMemFS() *MemFS {
	return &MemFS{names: map[string]*inode{}, durable: map[string]*inode{}, locks: map[string]bool{}, crashAt: -1}
}

// CrashAt makes operation number k (counting from 0 over the MemFS's
// whole life, file operations included) and every later one fail with
// ErrCrashed, without effect, as if the machine stopped just before it.
func (m *MemFS) CrashAt(k int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.crashAt = k
	if k >= 0 && m.n >= k {
		m.crashed = true
	}
}

// Crashed reports whether the machine has crashed.
func (m *MemFS) Crashed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashed
}

// Count returns how many operations have run or been refused.
func (m *MemFS) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// Ops returns the operations so far, one string each, such as
// "create wal-1", "write wal-1 96", "sync wal-1", "rename a b",
// "remove a" and "syncdir".
func (m *MemFS) Ops() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.ops)
}

// step counts an operation and says whether it may run; m.mu is held.
func (m *MemFS) step(format string, args ...any) error {
	if m.crashAt >= 0 && m.n >= m.crashAt {
		m.crashed = true
	}
	m.n++
	if m.crashed {
		return ErrCrashed
	}
	m.ops = append(m.ops, fmt.Sprintf(format, args...))
	return nil
}

// Torn says what a power cut keeps of what was not durable.
type Torn struct {
	// Keep is the share of each file's non-durable bytes that reach the
	// disk anyway, 512-byte sector by sector, each sector written whole
	// or not at all: the rest read as they were when last durable, zeros
	// past the durable end.
	// 0 drops them all.
	Keep float64
	// Names keeps a random prefix of the directory changes made since
	// the last SyncDir, as a journaling file system may have committed
	// them; without it they are all lost.
	Names bool
	// Rand chooses; nil uses a fixed seed.
	Rand *rand.Rand
}

// Recover returns a new MemFS holding what a power cut at this instant
// would leave on disk, everything in it durable. m itself is unchanged.
func (m *MemFS) Recover(t Torn) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := t.Rand
	if r == nil {
		r = rand.New(rand.NewPCG(1, 2))
	}
	names := make(map[string]*inode, len(m.durable))
	for n, ino := range m.durable {
		names[n] = ino
	}
	if t.Names && len(m.pending) > 0 {
		for _, c := range m.pending[:r.IntN(len(m.pending)+1)] {
			if c.ino == nil {
				delete(names, c.name)
			} else {
				names[c.name] = c.ino
			}
		}
	}
	out := NewMemFS()
	copies := map[*inode]*inode{}
	for n, ino := range names {
		c, ok := copies[ino]
		if !ok {
			c = &inode{data: ino.afterCut(t.Keep, r)}
			c.saved = slices.Clone(c.data)
			c.dirty = len(c.data)
			copies[ino] = c
		}
		out.names[n] = c
		out.durable[n] = c
	}
	return out
}

// afterCut returns the file's contents after a power cut that keeps each
// non-durable sector with probability keep.
func (ino *inode) afterCut(keep float64, r *rand.Rand) []byte {
	out := slices.Clone(ino.saved)
	if keep <= 0 || ino.dirty >= len(ino.data) && len(ino.data) == len(ino.saved) {
		return out
	}
	// The size reached the disk: the file has its new length, and each
	// sector past the durable point holds the new bytes or, written
	// whole or not at all, the old ones (zeros past the old end).
	from := min(ino.dirty, len(ino.data))
	if len(out) > len(ino.data) {
		out = out[:len(ino.data)]
	}
	out = append(out, make([]byte, len(ino.data)-len(out))...)
	const sector = 512
	for off := from; off < len(ino.data); off = (off/sector + 1) * sector {
		end := min((off/sector+1)*sector, len(ino.data))
		if r.Float64() < keep {
			copy(out[off:end], ino.data[off:end])
		}
	}
	return out
}

// Files returns the directory's names, sorted, as the process sees them.
func (m *MemFS) Files() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.names))
	for n := range m.names {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Contents returns a copy of the file name's contents as the process sees
// them.
func (m *MemFS) Contents(name string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, ok := m.names[name]
	if !ok {
		return nil, false
	}
	return slices.Clone(ino.data), true
}

// SetContents replaces the file name's contents, durably, as damage to
// the disk would (for corruption tests). It is not counted as an
// operation.
func (m *MemFS) SetContents(name string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ino, ok := m.names[name]
	if !ok {
		ino = &inode{}
		m.names[name] = ino
		m.durable[name] = ino
	}
	ino.data = slices.Clone(data)
	ino.saved = slices.Clone(data)
	ino.dirty = len(data)
}

func (m *MemFS) setName(name string, ino *inode) {
	if ino == nil {
		delete(m.names, name)
	} else {
		m.names[name] = ino
	}
	m.pending = append(m.pending, nsChange{name, ino})
}

// OpenFile opens name.
func (m *MemFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !vfs.ValidName(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	ino, ok := m.names[name]
	verb := "open"
	if !ok && flag&os.O_CREATE != 0 {
		verb = "create"
	}
	if err := m.step("%s %s", verb, name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	switch {
	case ok && flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !ok:
		ino = &inode{}
		m.setName(name, ino)
	}
	if flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		ino.truncate(0)
	}
	return &memFile{m: m, ino: ino, name: name, flag: flag}, nil
}

// Rename renames oldname to newname.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !vfs.ValidName(oldname) || !vfs.ValidName(newname) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrInvalid}
	}
	if err := m.step("rename %s %s", oldname, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	ino, ok := m.names[oldname]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if oldname != newname {
		m.setName(newname, ino)
		m.setName(oldname, nil)
	}
	return nil
}

// Remove removes name.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("remove %s", name); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	if _, ok := m.names[name]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	m.setName(name, nil)
	return nil
}

// ReadDir returns the names, sorted.
func (m *MemFS) ReadDir() ([]string, error) {
	m.mu.Lock()
	if err := m.step("readdir"); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.mu.Unlock()
	return m.Files(), nil
}

// SyncDir makes the names durable.
func (m *MemFS) SyncDir() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("syncdir"); err != nil {
		return err
	}
	for _, c := range m.pending {
		if c.ino == nil {
			delete(m.durable, c.name)
		} else {
			m.durable[c.name] = c.ino
		}
	}
	m.pending = m.pending[:0]
	return nil
}

// Lock takes the lock name.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.step("lock %s", name); err != nil {
		return nil, err
	}
	if m.locks[name] {
		return nil, &fs.PathError{Op: "lock", Path: name, Err: vfs.ErrLocked}
	}
	m.locks[name] = true
	return &memLock{m: m, name: name}, nil
}

type memLock struct {
	m    *MemFS
	name string
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.m.mu.Lock()
		delete(l.m.locks, l.name)
		l.m.mu.Unlock()
	})
	return nil
}

func (ino *inode) truncate(size int) {
	ino.dirty = min(ino.dirty, len(ino.data), size)
	if size < len(ino.data) {
		ino.data = ino.data[:size]
	} else {
		ino.data = append(ino.data, make([]byte, size-len(ino.data))...)
	}
}

type memFile struct {
	m      *MemFS
	ino    *inode
	name   string
	flag   int
	off    int64
	closed bool
}

func (f *memFile) check(op string) error {
	if f.closed {
		return &fs.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	return nil
}

// begin checks that f is open and counts operation op on it, with its
// size if it has one, as a point where the machine may crash. The caller
// holds f.m.mu.
func (f *memFile) begin(op string, size ...int64) error {
	if err := f.check(op); err != nil {
		return err
	}
	format, args := op+" %s", []any{f.name}
	for _, n := range size {
		format, args = format+" %d", append(args, n)
	}
	if err := f.m.step(format, args...); err != nil {
		return &fs.PathError{Op: op, Path: f.name, Err: err}
	}
	return nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("write", int64(len(p))); err != nil {
		return 0, err
	}
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	if f.flag&os.O_APPEND != 0 {
		f.off = int64(len(f.ino.data))
	}
	f.ino.writeAt(p, int(f.off))
	f.off += int64(len(p))
	return len(p), nil
}

// writeAt puts p at off, growing the file, and marks it not durable from
// there.
func (ino *inode) writeAt(p []byte, off int) {
	if end := off + len(p); end > len(ino.data) {
		ino.data = append(ino.data, make([]byte, end-len(ino.data))...)
	}
	copy(ino.data[off:], p)
	ino.dirty = min(ino.dirty, off)
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("write", int64(len(p))); err != nil {
		return 0, err
	}
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 || f.flag&os.O_APPEND != 0 || off < 0 {
		return 0, &fs.PathError{Op: "write", Path: f.name, Err: syscall.EBADF}
	}
	f.ino.writeAt(p, int(off))
	return len(p), nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("read", int64(len(p))); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Sync() error {
	if f.m.SyncDelay > 0 {
		time.Sleep(f.m.SyncDelay)
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("sync"); err != nil {
		return err
	}
	ino := f.ino
	from := min(ino.dirty, len(ino.saved), len(ino.data))
	ino.saved = append(ino.saved[:from], ino.data[from:]...)
	ino.dirty = len(ino.data)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("truncate", size); err != nil {
		return err
	}
	if size < 0 {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	f.ino.truncate(int(size))
	return nil
}

// Allocate extends the file with zeros to off+n bytes, if it is shorter,
// as fallocate(2) does; like a write, the new size is not durable until
// Sync.
func (f *memFile) Allocate(off, n int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("allocate", off+n); err != nil {
		return err
	}
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return &fs.PathError{Op: "allocate", Path: f.name, Err: syscall.EBADF}
	}
	if off < 0 || n <= 0 {
		return &fs.PathError{Op: "allocate", Path: f.name, Err: fs.ErrInvalid}
	}
	if end := int(off + n); end > len(f.ino.data) {
		f.ino.truncate(end)
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.begin("stat"); err != nil {
		return 0, err
	}
	return int64(len(f.ino.data)), nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if err := f.check("close"); err != nil {
		return err
	}
	f.closed = true
	// Closing is not counted: a crash cannot make it fail in a way that
	// matters, and counting it would make every crash point a close.
	return nil
}
