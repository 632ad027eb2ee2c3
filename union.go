package packfs

import (
	"errors"
	"hash/maphash"
	"io/fs"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// FS is a union of layers: one writable upper layer over read-only lower
// layers. It behaves as one directory on Linux does through package os.
// The zero FS is not usable; call [New].
type FS struct {
	// layers[0] is the upper layer (nil for a read-only union, such as a
	// snapshot); layers[1:] are the lowers, top first.
	layers []fs.FS
	upper  layer.FS
	// mu serializes writers: a copy-up is several steps. Every change of
	// the upper layer's names happens under it, and its Unlock moves
	// mu.gen on, which tells the read fast path (see fastLower) that what it
	// learned of the upper layer may be out of date.
	mu writeLock

	// watched holds the open read-only handles of lower files, so that a
	// copy-up moves them to the copy: on one filesystem, a handle sees the
	// chmod or write that a copy-up makes possible. Made at the first.
	watched atomic.Pointer[watchTable]
	// copyUps counts the copy-ups that moved handles, added to before a
	// copy-up takes its bucket's lock, so that an open racing one can
	// tell (see file.watch).
	copyUps atomic.Uint64

	// dirs holds the open handles of merged directories, which list
	// their directory at the first ReadDir: a rename or removal of it
	// before then moves or ends them, as an open directory follows its
	// inode on Linux.
	dirsMu sync.Mutex
	dirs   map[*dir]struct{}

	rootOnce sync.Once
	rootDirs []int          // the layers merged at the root, top first
	rootAt   []pathwalk.Dir // their handles on their roots: all nil

	mounts atomic.Pointer[mounts] // nil: none

	// shareFrom is set only while the durable store's checkpoint builds
	// the union, before it publishes it (see sharedContent).
	shareFrom *mem.Snapshot

	// What the read fast path learned: lowerDirs maps a directory of the
	// union to a *lowerDir, and lastDir is the one last looked up; tops
	// maps a first path element to an *atomic.Uint64 stamp of whether the
	// upper layer holds it.
	lowerDirs sync.Map
	lastDir   atomic.Pointer[lowerDir]
	tops      sync.Map
	// dcache is the directory cache of reads (see peek), made at the
	// first read that needs it.
	dcache atomic.Pointer[dirCache]
	// rootSlot is the cache's slot of the root, the directory of every
	// name without a slash, which needs no hash.
	rootSlot atomic.Pointer[cachedDir]
}

// writeLock is the writers' mutex, with a generation that each Unlock
// moves on, and one of the union's directories, which moves on at each
// Unlock unless the writer said its change left every directory's
// layers as they were (keepDirs, see walkWrite).
type writeLock struct {
	sync.Mutex
	gen      atomic.Uint64
	dirGen   atomic.Uint64
	seq      atomic.Uint64 // odd while a writer holds the lock (see raced)
	keepDirs bool          // guarded by the Mutex
}

// Unlock moves the generations on and unlocks: readers that load them
// after Unlock see every change made under the lock.
func (l *writeLock) Unlock() {
	l.gen.Add(1)
	if !l.keepDirs {
		l.dirGen.Add(1)
	}
	l.keepDirs = false
	l.seq.Add(1)
	l.Mutex.Unlock()
}

// Lock takes the lock for a writer and makes seq odd until Unlock.
func (l *writeLock) Lock() {
	l.Mutex.Lock()
	l.seq.Add(1)
}

// raced reports whether a writer held the lock at any moment since seq
// read s: a read that resolved a name and then reached into the upper
// layer's file the resolution named may have met the writer's change in
// between. A Remove, RemoveAll or Rename leaves a whiteout (a device) or
// nothing where the resolution saw a file or a directory, and the read
// then fails with ENXIO or ENOTDIR, a state the union never had: such a
// read waits for the writer (see wait) and is made again. A read that
// fails with no writer beside it, or in a lower layer, which no writer
// changes, fails for good, at once.
func (l *writeLock) raced(s uint64) bool { return s&1 != 0 || l.seq.Load() != s }

// wait returns once the writer holding the lock, if any, let it go. It
// holds the lock for no time and changes nothing, so it leaves the
// generations alone.
func (l *writeLock) wait() {
	l.Mutex.Lock()
	//lint:ignore SA2001 an empty critical section: waiting is the point
	l.Mutex.Unlock()
}

// rereads bounds the tries of a read that writers raced (see raced): the
// last holds the lock from the resolution to the upper layer's read, so
// that a reader raced by writer after writer still reads a state the
// union had. The upper layer is read under it only (memory, for the
// store and the usual union); a lower layer, which may be slow, never.
const rereads = 3

// racedReads schedules the tries of a slow-path read (ReadFile, openRead)
// that resolves a name and then reads the file the resolution named.
type racedReads struct {
	l      *writeLock
	waited int    // the tries that writers raced so far
	locked bool   // this try holds the lock
	seq    uint64 // l.seq when this try began
}

// start begins a try: under the lock when the tries before it were all
// raced (see rereads).
func (r *racedReads) start() {
	if r.waited == rereads-1 {
		r.l.Mutex.Lock()
		r.locked = true
	}
	r.seq = r.l.seq.Load()
}

// release lets the lock go if this try holds it: before a lower layer's
// read, and once the upper layer's is done.
func (r *racedReads) release() {
	if r.locked {
		r.locked = false
		r.l.Mutex.Unlock()
	}
}

// again reports, after this try's read of the upper layer failed and
// release, whether to try again: a writer raced it, and it was not the
// last try. It waits for that writer first.
func (r *racedReads) again() bool {
	if r.waited == rereads-1 || !r.l.raced(r.seq) {
		return false
	}
	r.waited++
	r.l.wait()
	return true
}

// watchTable holds the open handles of lower files in buckets chained by
// the hash of their paths, each with its own lock: a handle costs one hash
// and one short critical section to open and none to close, and readers
// of different files seldom meet on a lock. A copy-up scans one bucket,
// whose chain holds the open handles of its files and of the few whose
// paths share its hash.
type watchTable [watchBuckets]watchBucket

const watchBuckets = 256

type watchBucket struct {
	mu   sync.Mutex
	head *file
}

var watchSeed = maphash.MakeSeed()

// watchBucket returns the bucket of the lower file path, making the table
// when create is set; nil when there is none.
func (u *FS) watchBucket(path string, create bool) *watchBucket {
	t := u.watched.Load()
	if t == nil {
		if !create {
			return nil
		}
		t = new(watchTable)
		if !u.watched.CompareAndSwap(nil, t) {
			t = u.watched.Load()
		}
	}
	return &t[maphash.String(watchSeed, path)%watchBuckets]
}

// New returns the union of upper over lowers, the first lower on top.
// Reads fall through the upper and then the lowers in order; writes go to
// the upper, copying a lower file up first. upper must record whiteouts
// ([layer.WhiteoutFS]) to remove names of the lowers. A nil upper makes a
// read-only union, whose writes fail with EROFS.
//
// The layers must not change except through the union, as with Linux
// overlayfs: lowers are read-only, and the upper is the union's own.
func New(upper layer.FS, lowers ...fs.FS) *FS {
	layers := make([]fs.FS, 0, 1+len(lowers))
	if upper != nil {
		layers = append(layers, upper)
	} else if len(lowers) == 0 {
		layers = append(layers, mem.New().Snapshot()) // an empty root
	}
	for _, l := range lowers {
		if l != nil {
			layers = append(layers, l)
		}
	}
	return &FS{layers: layers, upper: upper}
}

var (
	_ layer.FS      = (*FS)(nil)
	_ layer.WatchFS = (*FS)(nil)
)

// Watch reports the changes of the union's upper layer, which are the
// union's own (see [layer.WatchFS]), when that layer reports them, as
// layer/mem does. Beside the union's visible changes, it reports those
// of its upper layer that show nothing new through the union: a copy-up
// reports the entries it copies as made, and a removal that hides a
// lower entry a whiteout made. Changes inside a file system mounted in
// the union (see Mount) are not reported.
func (u *FS) Watch(filter func(layer.Change) bool) (*layer.Watcher, error) {
	if w, ok := u.upper.(layer.WatchFS); ok {
		return w.Watch(filter)
	}
	return nil, layer.Unsupported("watch", ".")
}

// Snapshot returns the union's current state as an immutable fs.FS, in
// O(1) plus O(1) a mount: a snapshot of the upper layer over the same
// lowers, with each mount's snapshot mounted. The upper layer must offer
// Snapshot (as layer/mem does); otherwise Snapshot returns an error
// wrapping errors.ErrUnsupported. A mounted file system that offers none
// is mounted as it is, and stays live.
func (u *FS) Snapshot() (*FS, error) {
	s := &FS{layers: u.layers}
	if u.upper != nil {
		top, ok := snapshotOf(u.upper)
		if !ok {
			return nil, layer.Unsupported("snapshot", ".")
		}
		s.layers = slices.Clone(u.layers)
		s.layers[0] = top
	}
	if t := u.mounts.Load(); t != nil {
		b := t.Clear().Builder()
		for p, m := range t.All() {
			if snap, ok := snapshotOf(m); ok {
				m = snap
			}
			b.Set(p, m)
		}
		table := b.Map()
		s.mounts.Store(&table)
	}
	return s, nil
}

// snapshotOf calls fsys's Snapshot method, whatever concrete fs.FS type it
// returns (layer/mem's returns *mem.Snapshot, a union's (*FS, error)).
func snapshotOf(fsys fs.FS) (fs.FS, bool) {
	m := reflect.ValueOf(fsys).MethodByName("Snapshot")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() < 1 || m.Type().NumOut() > 2 {
		return nil, false
	}
	out := m.Call(nil)
	if len(out) == 2 {
		if err, _ := out[1].Interface().(error); err != nil {
			return nil, false
		}
	}
	s, ok := out[0].Interface().(fs.FS)
	return s, ok
}

// errReadOnly is what a write to a snapshot gives, as on a read-only mount.
var errReadOnly error = syscall.EROFS

// writable returns the upper layer, or the error a read-only union gives.
func (u *FS) writable(op, name string) (layer.FS, error) {
	if u.upper == nil {
		return nil, layer.PathError(op, name, errReadOnly)
	}
	return u.upper, nil
}

func isNotExist(err error) bool {
	if err == syscall.ENOENT || err == syscall.ENOTDIR {
		return true // the layers' bare errno, which errors.Is takes 20 ns to match
	}
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
