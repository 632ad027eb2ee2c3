package packfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/wal"
)

// SyncPolicy says when the durable store's changes reach the disk.
type SyncPolicy int

const (
	// SyncOnCommit makes changes durable at File.Sync, Store.Sync, the
	// commit of an Update, and Close, as a POSIX file system does. It is
	// the default.
	SyncOnCommit SyncPolicy = iota
	// SyncAlways makes every change durable before it returns. Changes
	// made at the same moment by several goroutines share one fdatasync.
	SyncAlways
	// SyncNone never waits for the disk: for caches, which can lose
	// their latest changes in a crash. Close still writes them out.
	SyncNone
)

// Options configures Open. The zero Options is the default.
type Options struct {
	// Sync is when changes become durable.
	Sync SyncPolicy
	// CheckpointBytes is the log size past which a checkpoint starts by
	// itself, in the background. 0 means 64 MiB; a negative value turns
	// automatic checkpoints off. After a checkpoint that left files open
	// for writing, the next one also waits until the log holds as many
	// bytes as those files: it writes them whole again, so a large file
	// written through one handle costs packs of about three times its
	// size in all, not one copy of it per CheckpointBytes written.
	CheckpointBytes int64
	// MaxPacks is how many packs an automatic checkpoint lets the store
	// stack up before it flattens them into one. 0 means 8.
	MaxPacks int
	// ReadOnly opens the store for reading only, beside a process that
	// may have it open for writing: the log is replayed but not changed,
	// and every change fails with EROFS. An open that meets a checkpoint
	// in flight starts again.
	ReadOnly bool
	// FS is the directory the store keeps its files in. nil means the
	// host directory given to Open, created if missing. Packs are mapped
	// when FS has a method Path(name string) string giving a host path
	// (as vfs.Dir does), and otherwise read into memory.
	FS vfs.FS
	// Publisher, if set, is given each checkpoint before the manifest
	// names its pack (see Publisher).
	Publisher Publisher
	// Lowers are read-only layers beneath the store's own packs, top
	// first, as overlayfs's lowerdirs are beneath its upperdir: packs
	// (*packreader.Reader), host directories (dirfs), any fs.FS. The
	// store's tree is their union with its changes on top: removing or
	// renaming a name of a lower records a whiteout, replacing a lower
	// directory makes it opaque, and checkpoints write these out in the
	// store's packs, never the lowers' contents. The store records the
	// lowers it was made over, and every open must give the same ones
	// (see ErrLowers). The store neither changes nor closes them. A
	// store with lowers takes no Publisher.
	Lowers []fs.FS
}

// ErrLowers is wrapped by the error Open gives when Options.Lowers are
// not the lowers the store was made over: another count, a pack where
// there was another layer or another pack (by size and sum), or lowers
// given to a store made without them, or none to one made with them.
// The store's log holds changes made over its lowers, which would replay
// into another tree over others.
var ErrLowers = errors.New("packfs: the store's lower layers differ")

// ErrCorrupt is wrapped by the error Open gives when the store's files
// are damaged in a way no crash explains, or miss what was acknowledged.
// The log's own damage wraps wal.ErrCorrupt too, a pack's
// packreader.ErrCorrupt, and a missing file fs.ErrNotExist.
var ErrCorrupt = errors.New("packfs: corrupt store")

// Store is a durable PackFS tree: a union of an in-memory upper layer over
// packs (and over read-only lowers, given Options.Lowers), whose every
// change is written ahead to a log. Open rebuilds it
// from its directory: the packs the manifest lists, then the log replayed
// over them. A checkpoint writes the upper layer out as a new pack and
// drops the log it covers.
//
// A Store has the methods of a writable layer, and is safe for concurrent
// use: changes are serialized, and reads do not wait for them (but for a
// read that a change raced and must make again, see FS).
type Store struct {
	dir   vfs.FS
	opts  Options
	lock  io.Closer
	limit int64 // CheckpointBytes resolved
	// lowers is what the manifest must record of opts.Lowers.
	lowers []lowerRef

	// wmu serializes changes, so that the log's order is the order in
	// which they were made, and guards the fields below it.
	wmu sync.Mutex
	now time.Time // the upper layer's clock: a change's recorded time
	enc []byte    // the head of the entry logOp logs, reused
	// txLog, txEnds and txEntries are the buffers of the last
	// transaction, for the next (see Tx.recycle).
	txLog     []byte
	txEnds    []int
	txEntries [][]byte
	log       *wal.Log
	man       manifest
	packs     []*openPack // top first, as in man.packs
	// retired holds the packs the last two flattens replaced, which
	// snapshots may still read; older ones are closed.
	retired [2][]*openPack
	// kept are retired packs that files left in older unions may read
	// (see checkpoint), closed at the first flatten that finds none.
	kept []*openPack
	// hmu guards handles, the open files whose names the store keeps
	// right; opening for reading takes only it, never wmu. Lock order:
	// wmu, then hmu.
	hmu     sync.Mutex
	handles handleList
	// names counts, under hmu, the changes that can make an open file's
	// name stale or its union another: renames and removals, and a
	// transaction's start and end. A read-only open, which takes no
	// lock, joins handles only if none came since it began (see
	// openRead).
	names atomic.Uint64
	// txFrozen is the running transaction's state before it, which
	// readers see meanwhile, and txMoves its renames and removals as
	// applyLive resolved them (both hmu): a file opened from txFrozen
	// takes the name the moves give it (see join), and moves to the
	// live union when the transaction ends (see endTx).
	txFrozen *FS
	txMoves  []nameMove
	tail     [][]byte // changes logged while a checkpoint runs; nil: none runs
	closing  bool     // Close has begun: no new background checkpoint
	closed   bool

	// broken is sticky: the log failed (or memory and log disagree), and
	// the store refuses changes. It is read without locks, so that Sync
	// and a change inside an Update's callback need none.
	broken atomic.Pointer[error]
	// fallback, once the log failed, is the tree readers see in place of
	// the live one: the state before the first change the failure cost
	// (see fail). nil: the log is well.
	fallback atomic.Pointer[FS]
	// unsynced holds, oldest first, the changes logged whose callers wait
	// for a sync to acknowledge them, with the state before each: if the
	// sync fails, the oldest is where readers go back to. Guarded by umu.
	umu      sync.Mutex
	unsynced []undoPoint
	// shut is set by Close: reads fail with fs.ErrClosed from then on.
	shut atomic.Bool
	// inCallback is set while an Update's callback runs; see lockChange.
	inCallback atomic.Bool

	live atomic.Pointer[FS] // the union changes apply to
	// feed reports changes once readers see them (see Watch).
	feed layer.Feed
	// frozen, while a transaction's changes apply to live one by one, is
	// the state before them, which readers see instead: they see a
	// transaction whole or not at all.
	frozen atomic.Pointer[FS]
	// applying is odd while a transaction's changes apply: a snapshot
	// that overlapped one is taken again.
	applying atomic.Uint64

	// inflight counts the durable commits between their start and their
	// append to the log: a committer about to sync waits a moment for
	// them, so that one fdatasync covers them all.
	inflight atomic.Int32
	// active counts the durable committers between their start and
	// their return, and peak is the most active at once since the last
	// sync began; appended counts the commits logged since then. The
	// next sync waits a moment for peak of them (see gather). syncTook
	// is how long the last sync took, from when it began (flushAt, Unix
	// nanoseconds) to when its committers woke: it bounds that moment.
	active   atomic.Int32
	peak     atomic.Int32
	appended atomic.Int32
	syncTook atomic.Int64
	flushAt  atomic.Int64
	// gathering is set while a committer about to sync waits for the
	// commits on their way (see gather); each of them, once logged,
	// wakes it through gatherWake. sleepers counts the goroutines
	// timing such waits (see waitArrivals).
	gathering  atomic.Bool
	gatherWake chan struct{}
	sleepers   atomic.Int32

	ckMu   sync.Mutex // one checkpoint at a time
	ckAuto atomic.Bool
	// ckRetry, after a background checkpoint failed, is the log size at
	// which the next one is tried; 0: none failed.
	ckRetry atomic.Int64
	// ckOpen is the bytes of the files open for writing that the last
	// checkpoint moved to its new union, which the next writes again.
	ckOpen atomic.Int64
	bg     sync.WaitGroup
}

// openPack is a pack of the store, open for reading.
type openPack struct {
	name string
	ref  packRef // what the manifest records of it
	r    *packreader.Reader
	f    vfs.File // the file a non-mapped pack is read through
}

func (p *openPack) close() {
	p.r.Close()
	if p.f != nil {
		p.f.Close()
	}
}

var _ layer.FS = (*Store)(nil)

// Open opens the store in the directory dir, creating it if it does not
// exist (unless opts.ReadOnly). One Store at a time, in any process, may
// have a directory open for writing; a second Open fails with an error
// wrapping vfs.ErrLocked. opts may be nil.
func Open(dir string, opts *Options) (*Store, error) {
	s := &Store{gatherWake: make(chan struct{}, 1)}
	if opts != nil {
		s.opts = *opts
	}
	s.limit = s.opts.CheckpointBytes
	if s.limit == 0 {
		s.limit = 64 << 20
	}
	if len(s.opts.Lowers) > 0 && s.opts.Publisher != nil {
		// A Checkpoint promises packs that hold the whole tree.
		return nil, fmt.Errorf("packfs: Open %s: a store over lowers publishes no checkpoints, whose packs would not hold the lowers' part of the tree: %w", dir, errors.ErrUnsupported)
	}
	refs, err := lowerRefs(s.opts.Lowers)
	if err != nil {
		return nil, err
	}
	s.lowers = refs
	s.dir = s.opts.FS
	if s.dir == nil {
		if s.opts.ReadOnly {
			if _, err := os.Stat(dir); err != nil {
				return nil, err
			}
		}
		d, err := vfs.OpenDir(dir)
		if err != nil {
			return nil, err
		}
		s.dir = d
	}
	if err := s.open(dir); err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(dir string) error {
	if !s.opts.ReadOnly {
		l, err := s.dir.Lock(lockName)
		if err != nil {
			return fmt.Errorf("packfs: store %s is open for writing elsewhere: %w", dir, err)
		}
		s.lock = l
		_, err = s.load(dir)
		return err
	}
	// A reader takes no lock, so the writer goes on while it reads: a
	// checkpoint replaces the manifest and then removes the segments
	// and packs the old one named, and Rotate cuts the segment being
	// read. Each file read is whole or missing, so a load that succeeds
	// holds a state the writer made whole; one that fails met a change
	// in flight, and starts again. Only a failure on a manifest that did
	// not move, again and again, is the store's.
	for attempt, still := 0, 0; ; attempt++ {
		used, err := s.load(dir)
		if err == nil {
			return nil
		}
		s.unload()
		now, nerr := vfs.ReadFile(s.dir, manifestName)
		if nerr != nil || used == nil || bytes.Equal(now, used) {
			still++
		}
		if still > readOnlyRetries || attempt >= readOnlyAttempts {
			return err
		}
	}
}

// A read-only open starts again up to readOnlyRetries times on a manifest
// that did not move, and readOnlyAttempts in all.
const (
	readOnlyRetries  = 3
	readOnlyAttempts = 1000
)

// load opens the store from its manifest: the packs it lists, then the
// log replayed over them. It returns the manifest's bytes.
func (s *Store) load(dir string) ([]byte, error) {
	names, err := s.dir.ReadDir()
	if err != nil {
		return nil, err
	}
	raw, err := vfs.ReadFile(s.dir, manifestName)
	var man manifest
	if err == nil {
		man, err = decodeManifest(raw)
	}
	fresh := false
	switch {
	case errors.Is(err, fs.ErrNotExist) && !s.opts.ReadOnly:
		// A new store: its first segment is made before its manifest,
		// so that a manifest always names a segment that exists. One
		// that a crash left without its manifest holds no record.
		for _, n := range names {
			if strings.HasSuffix(n, ".pack") {
				return nil, fmt.Errorf("%w: %s holds %s but no %s", ErrCorrupt, dir, n, manifestName)
			}
		}
		fresh = true
		man = manifest{version: manifestVersion, root: time.Now().UnixNano(), mode: uint32(fs.ModeDir | 0o755)}
	case err != nil:
		return raw, err
	}
	if fresh {
		man.lowers = s.lowers
	} else if err := checkLowers(dir, man.lowers, s.lowers); err != nil {
		return raw, err
	}
	s.man = man
	for _, ref := range man.packs {
		p, err := s.openPack(ref)
		if err != nil {
			return raw, err
		}
		s.packs = append(s.packs, p)
	}
	s.live.Store(s.union(man.root, fs.FileMode(man.mode)))
	// The log grows in steps, ahead of its records, so that a commit's
	// sync overwrites blocks instead of growing the file (on ext4 that
	// spares a journal commit): large steps on a host directory, small
	// ones elsewhere.
	prealloc := int64(64 << 10)
	if _, ok := s.dir.(interface{ Path(string) string }); ok {
		prealloc = 1 << 20
	}
	replay := s.replay
	if fresh {
		replay = func([][]byte) error {
			return fmt.Errorf("%w: %s holds logged changes but no %s", ErrCorrupt, dir, manifestName)
		}
	}
	s.log, err = wal.Open(s.dir, wal.Options{
		First:       man.wal,
		FirstExists: man.version >= 2 && !fresh,
		ReadOnly:    s.opts.ReadOnly,
		Preallocate: prealloc,
		Gather:      s.gather,
	}, replay)
	if err != nil {
		if errors.Is(err, wal.ErrCorrupt) && !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return raw, err
	}
	if s.opts.ReadOnly {
		return raw, nil
	}
	if fresh {
		if err := writeManifest(s.dir, man); err != nil {
			return raw, err
		}
	}
	return raw, s.removeLeftovers(names)
}

// lowerRefs returns what the manifest records of lowers.
func lowerRefs(lowers []fs.FS) ([]lowerRef, error) {
	var refs []lowerRef
	for i, l := range lowers {
		if l == nil {
			return nil, fmt.Errorf("packfs: Options.Lowers[%d] is nil: %w", i, fs.ErrInvalid)
		}
		ref := lowerRef{}
		if p, ok := l.(interface {
			Sum() (int64, uint32, error)
		}); ok {
			size, sum, err := p.Sum()
			if err != nil {
				return nil, fmt.Errorf("packfs: lower %d: %w", i, err)
			}
			ref = lowerRef{pack: true, size: size, sum: sum}
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// checkLowers reports, wrapping ErrLowers, how the lowers given differ
// from those the store was made over.
func checkLowers(dir string, made, given []lowerRef) error {
	if len(made) != len(given) {
		return fmt.Errorf("%w: %s was made over %d lower layers and is opened over %d", ErrLowers, dir, len(made), len(given))
	}
	for i := range made {
		if made[i] != given[i] {
			return fmt.Errorf("%w: %s: lower %d is %s, and the store was made over %s", ErrLowers, dir, i, given[i], made[i])
		}
	}
	return nil
}

// unload closes what a failed load of a read-only store opened.
func (s *Store) unload() {
	for _, p := range s.packs {
		p.close()
	}
	s.packs = nil
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
}

// union returns a union of a fresh upper layer over the store's packs
// and its lowers, its root directory's mtime and mode root and mode.
func (s *Store) union(root int64, mode fs.FileMode) *FS {
	s.now = time.Unix(0, root)
	lowers := make([]fs.FS, len(s.packs), len(s.packs)+len(s.opts.Lowers))
	for i, p := range s.packs {
		lowers[i] = p.r
	}
	all := append(lowers, s.opts.Lowers...)
	m := newUpper(s.clock, mode)
	if len(all) > 0 {
		if fi, err := fs.Stat(all[0], "."); err == nil {
			keepRootOwner(m, fi)
		}
	}
	return New(m, all...)
}

// keepRootOwner gives the root of m, a fresh upper layer, the owner of
// root, the root it stands for, which the top pack records.
func keepRootOwner(m *mem.FS, root fs.FileInfo) {
	if uid, gid, ok := layer.OwnerOf(root); ok {
		m.Lchown(".", ownerArg(uid), ownerArg(gid))
	}
}

// newUpper returns an empty upper layer whose root has the mode of the
// root it stands for: the upper's root is the union's. The mode's setuid,
// setgid and sticky bits count as much as its permissions (a root of
// 0o755 with setgid is not a fresh layer's root).
func newUpper(clock func() time.Time, mode fs.FileMode) *mem.FS {
	m := mem.NewWithClock(clock)
	if mode.IsDir() && mode != fs.ModeDir|0o755 {
		m.Chmod(".", mode)
	}
	return m
}

// clock is the upper layer's clock: the time of the change being applied.
// Only changes read it, under wmu.
func (s *Store) clock() time.Time { return s.now }

// openPack opens the pack ref names and checks it is the one ref
// describes, when the manifest recorded that; the result's ref holds the
// pack's size and sum in any case.
func (s *Store) openPack(ref packRef) (*openPack, error) {
	name := ref.name
	size, sum, err := packSum(s.dir, name)
	if err != nil {
		return nil, packError(name, err)
	}
	if ref.known && (size != ref.size || sum != ref.sum) {
		return nil, fmt.Errorf("%w: %s is not the pack %s lists: %d bytes, sum %08x, want %d bytes, sum %08x",
			ErrCorrupt, name, manifestName, size, sum, ref.size, ref.sum)
	}
	ref.size, ref.sum, ref.known = size, sum, true
	if d, ok := s.dir.(interface{ Path(string) string }); ok {
		// A host directory: map the pack.
		r, err := packreader.Open(d.Path(name))
		if err != nil {
			return nil, packError(name, err)
		}
		return &openPack{name: name, ref: ref, r: r}, nil
	}
	// Another directory (a test's, say) cannot be mapped: read the pack
	// into memory once.
	data, err := vfs.ReadFile(s.dir, name)
	if err != nil {
		return nil, packError(name, err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, packError(name, fmt.Errorf("%s: %w", name, err))
	}
	return &openPack{name: name, ref: ref, r: r}, nil
}

// packError is the error for a pack of the manifest that is missing or
// damaged: ErrCorrupt, as well as what the file system or the pack reader
// said.
func packError(name string, err error) error {
	switch {
	case errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s lists %s: %w", ErrCorrupt, manifestName, name, err)
	case errors.Is(err, packreader.ErrCorrupt):
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// replay applies a unit of the log at Open.
func (s *Store) replay(entries [][]byte) error {
	for _, e := range entries {
		o, err := decodeOp(e)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		s.now = time.Unix(0, o.time)
		if err := apply(s.live.Load(), o); err != nil {
			if s.hostLowers() {
				// Close leaves no change logged over such a lower, so
				// this follows a crash, and the lower may have changed.
				return fmt.Errorf("%w: %w: a logged change fails on replay over the lowers, of which one is not a pack and may have changed since the store was last open: %v", ErrCorrupt, ErrLowers, err)
			}
			return fmt.Errorf("%w: a logged change fails on replay: %v", ErrCorrupt, err)
		}
	}
	return nil
}

// removeLeftovers removes what a checkpoint that crashed left behind:
// temporary files, and packs the manifest does not list.
func (s *Store) removeLeftovers(names []string) error {
	keep := map[string]bool{}
	for _, p := range s.man.packs {
		keep[p.name] = true
	}
	removed := false
	for _, n := range names {
		if strings.HasSuffix(n, tmpSuffix) || strings.HasSuffix(n, ".pack") && !keep[n] {
			if err := s.dir.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			removed = true
		}
	}
	if removed {
		return s.dir.SyncDir()
	}
	return nil
}

// usable says why the store cannot take a change; s.wmu is held.
func (s *Store) usable(op, name string) error {
	switch {
	case s.closed:
		return layer.PathError(op, name, fs.ErrClosed)
	case s.opts.ReadOnly:
		return layer.PathError(op, name, syscall.EROFS)
	}
	return s.failure()
}

// failure returns the sticky error, or nil.
func (s *Store) failure() error {
	if e := s.broken.Load(); e != nil {
		return *e
	}
	return nil
}

// tick sets the clock for a change made now; s.wmu is held.
func (s *Store) tick() int64 {
	s.now = time.Now()
	return s.now.UnixNano()
}

// logOp appends a change already applied to the live union, which was
// pre before it; s.wmu is held. If the log fails, the change is undone
// for every reader (see fail).
func (s *Store) logOp(o *op, pre undoPoint) (wal.LSN, error) {
	p, _, _, err := s.appendOp(o, false)
	return s.logged(o, p, err, pre)
}

// appendOp appends o to the log; s.wmu is held. With mapped set, a large
// write's data is also returned as the log's pages hold it, with what
// keeps them mapped, where the log can map them (see wal.AppendMapped).
func (s *Store) appendOp(o *op, mapped bool) (p wal.LSN, view []byte, m *wal.Mapping, err error) {
	if o.split() {
		es := o.entries()
		if p, err = s.log.Append(es...); err == nil && s.tail != nil {
			s.tail = append(s.tail, es...)
		}
		return p, nil, nil, err
	}
	// One entry, its head encoded in a buffer kept for the next and its
	// data logged from where it lies: no allocation, and a large write
	// is copied by the page cache alone.
	s.enc = o.encodeHead(s.enc[:0])
	if mapped {
		p, view, m, err = s.log.AppendMapped(s.enc, o.data)
	} else {
		p, err = s.log.AppendSplit(s.enc, o.data)
	}
	if err == nil && s.tail != nil {
		s.tail = append(s.tail, append(bytes.Clone(s.enc), o.data...))
	}
	return p, view, m, err
}

// logged finishes the logging of the change o, whose append gave p and
// err, and which pre was the state before; s.wmu is held.
func (s *Store) logged(o *op, p wal.LSN, err error, pre undoPoint) (wal.LSN, error) {
	switch {
	case err != nil && pre.top == nil:
		// The log failed on another goroutine's sync after o was found
		// usable; o's record joined no buffer, but o has applied, as
		// have the changes whose buffered records that sync lost, and
		// stays like them (see undoFor). The store fails from now on.
		s.fail(err, nil)
		return 0, nil
	case err != nil:
		return 0, s.fail(err, &pre)
	}
	if s.opts.Sync == SyncAlways {
		s.awaitSync(p, pre)
	}
	if s.feed.Active() {
		s.feed.Publish(changeOf(s.live.Load(), o))
	}
	return p, nil
}

// done finishes a change logged at p: it waits for the disk as the policy
// says, and starts a checkpoint when the log has grown past the limit.
func (s *Store) done(p wal.LSN, err error) error {
	if err != nil {
		return err
	}
	if s.opts.Sync == SyncAlways {
		if err := s.commitSync(p); err != nil {
			return err
		}
	}
	s.maybeCheckpoint()
	return nil
}

// sync makes the log durable up to p. Commits already on their way to
// the log reach it within microseconds, where a sync takes hundreds: the
// committer that syncs for everyone lets them in first (gather), so that
// they share its fdatasync rather than wait for it and need their own.
func (s *Store) sync(p wal.LSN) error {
	start := time.Now().UnixNano()
	err := s.log.Sync(p)
	if at := s.flushAt.Load(); at > start {
		// The sync this committer waited for began at at: it has taken
		// this long, give or take the wake-up.
		s.syncTook.Store(time.Now().UnixNano() - at)
	}
	if err != nil {
		if errors.Is(err, wal.ErrClosed) {
			return layer.PathError("sync", ".", fs.ErrClosed)
		}
		s.fail(err, nil)
		if s.log.Synced() < p {
			return err
		}
		// A later sync failed, but this one's changes reached the disk:
		// they are acknowledged, and stay.
	}
	s.synced(p)
	return nil
}

// gather is the log's Gather: the committer that is about to sync for
// everyone waits, a bounded moment, for the commits on their way: those
// in flight, and as many in all as there were committers at once since
// the last sync began. Without the second, the committers that the last
// sync served, coming back with their next commits, found a leader
// syncing for the others alone: eight committers settled into two
// groups that took turns, each fdatasync serving four.
//
// The moment is bounded by the last sync's time, so that waiting for a
// committer that does not come back costs less than a sync, and the
// count starts again from those active now, so that it is wrong for at
// most one sync. Only a sync that follows the last one closely waits
// for committers coming back.
//
// The committer waits parked, not spinning: the commits it waits for
// need the CPU to get to the log, and each one logged wakes it (see
// arrived). On a machine with few cores a spinning wait took a core
// from them.
func (s *Store) gather() {
	want := s.peak.Swap(s.active.Load())
	took := s.syncTook.Load()
	if time.Now().UnixNano()-s.flushAt.Load() > 2*took {
		// The last sync ended a while ago: whoever it served is not
		// on the way back, and this sync (Sync's, say) waits only for
		// the commits in flight.
		want = 0
	}
	bound := min(gatherWait, time.Duration(took))
	ready := func() bool { return s.inflight.Load() == 0 && s.appended.Load() >= want }
	if !ready() && bound > 0 {
		s.waitArrivals(ready, bound, kernelSleep)
	}
	s.appended.Store(0)
	s.flushAt.Store(time.Now().UnixNano())
}

// waitArrivals parks until ready reports true or bound has passed; the
// commits that ready counts wake it through arrived, and a goroutine of
// its own wakes it once sleep(bound) has returned.
func (s *Store) waitArrivals(ready func() bool, bound time.Duration, sleep func(time.Duration)) {
	// Set gathering before asking ready: a commit that changes what
	// ready sees either is seen now or finds gathering set and wakes
	// the wait. A wake-up left over from an earlier wait is harmless:
	// ready and the bound are asked again after each one.
	s.gathering.Store(true)
	defer s.gathering.Store(false)
	expired := new(atomic.Bool)
	expire := func() {
		expired.Store(true)
		s.wakeGather()
	}
	if s.sleepers.Add(1) <= maxSleepers {
		go func() {
			defer s.sleepers.Add(-1)
			sleep(bound)
			expire()
		}()
	} else {
		// The kernel wakes the sleepers of earlier waits late (a loaded
		// machine): rather than a thread more, a Go timer, late too.
		s.sleepers.Add(-1)
		t := time.AfterFunc(bound, expire)
		defer t.Stop()
	}
	for !ready() && !expired.Load() {
		<-s.gatherWake
	}
}

// maxSleepers bounds the goroutines asleep in kernelSleep for gather
// waits, each holding a thread.
const maxSleepers = 4

// wakeGather queues a wake-up for the gather wait, unless one is queued.
func (s *Store) wakeGather() {
	select {
	case s.gatherWake <- struct{}{}:
	default: // a wake-up is queued already, which the wait takes
	}
}

// kernelSleep sleeps for d as the kernel times it: a Go timer this short
// fires a millisecond late in a process that has nothing else to run,
// because the runtime's poller sleeps in whole milliseconds, and a
// gather wait is bounded by a fraction of that.
func kernelSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

// arrived wakes a committer waiting in gather, if one is: a commit has
// been logged, or has left the ones in flight.
func (s *Store) arrived() {
	if s.gathering.Load() {
		s.wakeGather()
	}
}

// committing counts a durable committer active until the function it
// returns is called: the syncs wait for as many commits as there were
// such committers at once (see gather).
func (s *Store) committing() func() {
	n := s.active.Add(1)
	for pk := s.peak.Load(); n > pk && !s.peak.CompareAndSwap(pk, n); pk = s.peak.Load() {
	}
	return func() { s.active.Add(-1) }
}

// commitSync is sync for a commit logged at p, which it counts for gather.
func (s *Store) commitSync(p wal.LSN) error {
	s.appended.Add(1)
	s.arrived()
	return s.sync(p)
}

// leaveFlight ends a durable commit's flight (see inflight): logged, or
// failed before it.
func (s *Store) leaveFlight() {
	s.inflight.Add(-1)
	s.arrived()
}

// gatherWait bounds how long a committer waits for commits on their way.
const gatherWait = 300 * time.Microsecond

// change applies o to the live union and logs it.
func (s *Store) change(o op, opName string) error {
	if s.opts.Sync == SyncAlways {
		defer s.committing()()
	}
	p, err := s.logChange(o, opName)
	return s.done(p, err)
}

// logChange applies o and logs it, counting itself in flight meanwhile
// when a sync will follow.
func (s *Store) logChange(o op, opName string) (wal.LSN, error) {
	if s.opts.Sync == SyncAlways {
		s.inflight.Add(1)
		defer s.leaveFlight()
	}
	if err := s.lockChange(opName, o.path); err != nil {
		return 0, err
	}
	defer s.wmu.Unlock()
	if err := s.usable(opName, o.path); err != nil {
		return 0, err
	}
	o.time = s.tick()
	pre := s.undoFor(&o)
	if err := s.applyLive(o); err != nil {
		return 0, err
	}
	return s.logOp(&o, pre)
}

// applyLive applies o to the live union, and keeps the names of open
// handles right: a rename moves them, a removal leaves them nameless.
// s.wmu is held.
//
// The names the change affects are resolved before it, as the kernel
// resolves them: a rename's source and destination, each to the entry
// it names. Every handle's new name then follows from its old one in one
// step (see nameAfter), so that a rename of an entry onto itself, by
// whatever alias, changes no name.
func (s *Store) applyLive(o op) error {
	u := s.live.Load()
	var from, to string
	s.hmu.Lock()
	defer s.hmu.Unlock()
	moves := o.kind == opRename || o.kind == opRemove || o.kind == opRemoveAll
	// Inside a transaction every move is kept, for the files opened
	// beside it from the state before it (see join).
	inTx := moves && s.txFrozen != nil
	track := false
	if s.handles.len() > 0 || inTx {
		switch o.kind {
		case opRename:
			if track = inTx || s.handleHas(o.path) || s.handleHas(o.path2); track {
				from, to = canonical(u, o.path, false), canonical(u, o.path2, false)
			}
		case opRemove, opRemoveAll:
			if track = inTx || s.handleHas(o.path); track {
				from = canonical(u, o.path, false)
			}
		}
	}
	if moves {
		s.names.Add(1) // an open beside it may have taken a name it changes
	}
	if err := apply(u, o); err != nil {
		return err
	}
	if inTx {
		s.txMoves = append(s.txMoves, nameMove{o.kind, from, to})
	}
	if track {
		for h := range s.handles.all() {
			h.path = nameAfter(h.path, o.kind, from, to)
		}
	}
	return nil
}

// nameMove is a rename (from, to) or a removal (from) as applyLive
// resolved it, for nameAfter.
type nameMove struct {
	kind     opKind
	from, to string
}

// handleHas reports whether the name of an open handle holds the last
// element of name: only then can a removal or rename of name, whatever
// symlinks lead to it, change the handle's name, so that a change that
// can change none resolves nothing. s.hmu is held.
func (s *Store) handleHas(name string) bool {
	b := path.Base(name)
	for h := range s.handles.all() {
		if hasElem(h.path, b) {
			return true
		}
	}
	return false
}

// hasElem reports whether the slash-separated p holds the element b.
func hasElem(p, b string) bool {
	for p != "" {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return p == b
		}
		if p[:i] == b {
			return true
		}
		p = p[i+1:]
	}
	return false
}

// nameAfter returns the name that the file named p has after a change of
// kind that removed from, or renamed from to to (both resolved before the
// change): "" once it has none.
func nameAfter(p string, kind opKind, from, to string) string {
	switch {
	case p == "":
	case kind == opRename && from == to:
		// The same entry: rename(2) succeeds and changes nothing.
	case kind == opRename && within(p, from):
		return to + p[len(from):]
	case kind == opRename && within(p, to):
		return "" // replaced
	case kind == opRemove && p == from, kind == opRemoveAll && within(p, from):
		return ""
	}
	return p
}

// canonical returns the union's own name for name: its symlinks resolved
// (the last element's too, if follow), its dot-dot elements gone.
func canonical(u *FS, name string, follow bool) string {
	if _, n, err := u.walk(name, follow); err == nil && n != nil {
		return n.path
	}
	return path.Clean(name)
}

// Sync makes every change so far durable. A background checkpoint that
// failed does not fail it: the log holds the changes, and the checkpoint
// is tried again later.
func (s *Store) Sync() error {
	switch err := s.failure(); {
	case s.shut.Load():
		return layer.PathError("sync", ".", fs.ErrClosed)
	case err != nil:
		return err
	case s.opts.ReadOnly:
		return nil
	}
	return s.sync(s.log.End())
}

// Close waits for a running checkpoint, makes every change durable and
// closes the store. Files still open fail from then on, and so does
// every method of the store; snapshots taken from the store stay
// readable until Close.
func (s *Store) Close() error {
	if err := s.lockChange("close", "."); err != nil {
		return err
	}
	s.closing = true
	settle := s.hostLowers() && s.pending()
	s.wmu.Unlock()
	s.bg.Wait()
	if settle && !s.opts.ReadOnly && s.failure() == nil {
		// A lower other than a pack may change before the next open,
		// which would replay the log over it into another tree: the
		// log is written out first. If that fails, the log still
		// holds every change.
		s.checkpoint(false)
	}
	s.ckMu.Lock()
	defer s.ckMu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return layer.PathError("close", ".", fs.ErrClosed)
	}
	s.closed = true
	s.shut.Store(true)
	err := s.log.Close()
	if ferr := s.failure(); ferr != nil {
		err = ferr
	}
	s.release()
	return err
}

// hostLowers reports whether a lower is not a pack: a host directory, say,
// which can change while the store is closed.
func (s *Store) hostLowers() bool {
	for _, l := range s.lowers {
		if !l.pack {
			return true
		}
	}
	return false
}

// pending reports whether the live tree holds changes that no pack of
// the manifest does; s.wmu is held.
func (s *Store) pending() bool {
	u := s.live.Load()
	if len(u.layers)-1-len(s.packs)-len(s.opts.Lowers) > 0 {
		return true // upper layers that undone transactions left
	}
	if ents, err := fs.ReadDir(u.layers[0], "."); err != nil || len(ents) > 0 {
		return true
	}
	fi, err := fs.Stat(u.layers[0], ".")
	return err != nil || fi.ModTime().UnixNano() != s.man.root || uint32(fi.Mode()) != s.man.mode
}

// release closes the packs and the lock.
func (s *Store) release() {
	for _, p := range s.packs {
		p.close()
	}
	for _, r := range s.retired {
		for _, p := range r {
			p.close()
		}
	}
	for _, p := range s.kept {
		p.close()
	}
	s.packs, s.retired, s.kept = nil, [2][]*openPack{}, nil
	if s.lock != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// Snapshot returns the store's current tree as an immutable fs.FS, in
// O(1). It stays readable until the store is closed or, when a flatten
// has replaced the packs it reads, until the flatten after that one; then
// its reads fail with fs.ErrClosed. Snapshot of a closed store fails with
// fs.ErrClosed; after the log failed, it is the state readers fall back to.
func (s *Store) Snapshot() (*FS, error) {
	if s.shut.Load() {
		return nil, layer.PathError("snapshot", ".", fs.ErrClosed)
	}
	if f := s.fallback.Load(); f != nil {
		return f, nil // immutable
	}
	for {
		q := s.applying.Load()
		if q%2 == 1 {
			if f := s.frozen.Load(); f != nil {
				return f, nil // already immutable
			}
			continue
		}
		snap, err := s.live.Load().Snapshot()
		if s.applying.Load() == q {
			return snap, err
		}
	}
}

// view returns the union readers see, or fs.ErrClosed once the store is
// closed.
func (s *Store) view(op, name string) (*FS, error) {
	if s.shut.Load() {
		return nil, layer.PathError(op, name, fs.ErrClosed)
	}
	if f := s.fallback.Load(); f != nil {
		return f, nil
	}
	if f := s.frozen.Load(); f != nil {
		return f, nil
	}
	return s.live.Load(), nil
}

// Reading: straight to the union, without waiting for writers.

func (s *Store) Open(name string) (fs.File, error) { return s.OpenFile(name, os.O_RDONLY, 0) }

func (s *Store) Stat(name string) (fs.FileInfo, error) {
	return readView(s, "stat", name, func(u *FS) (fs.FileInfo, error) { return u.Stat(name) })
}

func (s *Store) Lstat(name string) (fs.FileInfo, error) {
	return readView(s, "lstat", name, func(u *FS) (fs.FileInfo, error) { return u.Lstat(name) })
}

func (s *Store) ReadDir(name string) ([]fs.DirEntry, error) {
	return readView(s, "readdir", name, func(u *FS) ([]fs.DirEntry, error) { return u.ReadDir(name) })
}

func (s *Store) ReadFile(name string) ([]byte, error) {
	return readView(s, "open", name, func(u *FS) ([]byte, error) { return u.ReadFile(name) })
}

func (s *Store) ReadLink(name string) (string, error) {
	return readView(s, "readlink", name, func(u *FS) (string, error) { return u.ReadLink(name) })
}

func (s *Store) Readlink(name string) (string, error) { return s.ReadLink(name) }

func (s *Store) Glob(pattern string) ([]string, error) {
	return readView(s, "glob", pattern, func(u *FS) ([]string, error) { return fs.Glob(u, pattern) })
}

// readView runs fn, a read of the tree, on the union readers see, and runs
// it again if a transaction began or ended applying meanwhile: a read of
// the live union then may have seen part of the transaction (a reader
// that found no frozen state, and then the live one under change), and
// the state before it, frozen, is read instead.
func readView[T any](s *Store, op, name string, fn func(u *FS) (T, error)) (T, error) {
	for {
		switch {
		case s.shut.Load():
			var zero T
			return zero, layer.PathError(op, name, fs.ErrClosed)
		case s.fallback.Load() != nil:
			return fn(s.fallback.Load())
		}
		q := s.applying.Load()
		if q%2 == 1 {
			if f := s.frozen.Load(); f != nil {
				return fn(f)
			}
			continue
		}
		v, err := fn(s.live.Load())
		if s.applying.Load() == q {
			return v, err
		}
	}
}

// storeDir is a directory handle of Store.LookupAt: the union it was
// found in, and that union's own handle.
type storeDir struct {
	u *FS
	d pathwalk.Dir
}

var _ pathwalk.LookupFS = (*Store)(nil)

// LookupAt looks name up in a directory found by an earlier LookupAt (nil:
// the root), so that the afero adapter resolves a path with one lookup
// per element. A handle found in a tree that readers no longer see (a
// checkpoint or a transaction replaced it since) gives
// errors.ErrUnsupported: the caller asks by paths instead.
func (s *Store) LookupAt(dir pathwalk.Dir, name string) (pathwalk.Entry, error) {
	return readView(s, "lstat", name, func(u *FS) (pathwalk.Entry, error) {
		d, err := s.dirIn(u, dir)
		if err != nil {
			return pathwalk.Entry{}, err
		}
		e, err := u.LookupAt(d, name)
		if err == nil && e.Dir != nil {
			e.Dir = &storeDir{u: u, d: e.Dir}
		}
		return e, err
	})
}

// ReadLinkAt returns the target of the symlink name in dir.
func (s *Store) ReadLinkAt(dir pathwalk.Dir, name string) (string, error) {
	return readView(s, "readlink", name, func(u *FS) (string, error) {
		d, err := s.dirIn(u, dir)
		if err != nil {
			return "", err
		}
		return u.ReadLinkAt(d, name)
	})
}

// dirIn returns the handle of u that dir, a handle of LookupAt, stands
// for: nil for the root, and ErrUnsupported for one found in another tree.
func (s *Store) dirIn(u *FS, dir pathwalk.Dir) (pathwalk.Dir, error) {
	if dir == nil {
		return nil, nil
	}
	if sd, ok := dir.(*storeDir); ok && sd != nil && sd.u == u {
		return sd.d, nil
	}
	return nil, errors.ErrUnsupported
}

// Sub returns the store's subtree dir, read through the store as it is at
// each read: not through the union of the moment, which an undone
// transaction, a checkpoint or a reopen of the log replaces.
func (s *Store) Sub(dir string) (fs.FS, error) {
	if _, err := s.view("sub", dir); err != nil {
		return nil, err
	}
	return fs.Sub(storeReads{s}, dir)
}

// storeReads is the store's reads without its Sub, for fs.Sub to wrap.
type storeReads struct{ s *Store }

func (r storeReads) Open(name string) (fs.File, error)          { return r.s.Open(name) }
func (r storeReads) Stat(name string) (fs.FileInfo, error)      { return r.s.Stat(name) }
func (r storeReads) Lstat(name string) (fs.FileInfo, error)     { return r.s.Lstat(name) }
func (r storeReads) ReadDir(name string) ([]fs.DirEntry, error) { return r.s.ReadDir(name) }
func (r storeReads) ReadFile(name string) ([]byte, error)       { return r.s.ReadFile(name) }
func (r storeReads) ReadLink(name string) (string, error)       { return r.s.ReadLink(name) }
func (r storeReads) Glob(pattern string) ([]string, error)      { return r.s.Glob(pattern) }

// Whiteout is not offered: a store is not the upper layer of another
// union, since its log would replay whiteouts without the layers they
// hide. Give it those layers instead (Options.Lowers): its own union then
// records the whiteouts, durably.
func (s *Store) Whiteout(name string) error { return layer.Unsupported("whiteout", name) }
func (s *Store) Create(name string) (layer.File, error) {
	return s.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}
func (s *Store) Mkdir(name string, perm fs.FileMode) error {
	return s.change(op{kind: opMkdir, path: name, a: int64(perm)}, "mkdir")
}
func (s *Store) MkdirAll(name string, perm fs.FileMode) error {
	return s.change(op{kind: opMkdirAll, path: name, a: int64(perm)}, "mkdir")
}
func (s *Store) Remove(name string) error { return s.change(op{kind: opRemove, path: name}, "remove") }
func (s *Store) RemoveAll(name string) error {
	return s.change(op{kind: opRemoveAll, path: name}, "unlinkat")
}
func (s *Store) Chmod(name string, mode fs.FileMode) error {
	return s.change(op{kind: opChmod, path: name, a: int64(mode)}, "chmod")
}
func (s *Store) Chown(name string, uid, gid int) error {
	return s.change(op{kind: opChown, path: name, a: int64(uid), b: int64(gid)}, "chown")
}
func (s *Store) Lchown(name string, uid, gid int) error {
	return s.change(op{kind: opLchown, path: name, a: int64(uid), b: int64(gid)}, "lchown")
}
func (s *Store) Symlink(oldname, newname string) error {
	return s.change(op{kind: opSymlink, path: oldname, path2: newname}, "symlink")
}
func (s *Store) Rename(oldname, newname string) error {
	return s.change(op{kind: opRename, path: oldname, path2: newname}, "rename")
}

// WriteFile writes a whole file as one logged change.
func (s *Store) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return s.change(op{kind: opWriteFile, path: name, a: int64(perm), data: data}, "open")
}

// Chtimes changes name's times; a zero time leaves that one unchanged.
func (s *Store) Chtimes(name string, atime, mtime time.Time) error {
	return s.change(chtimesOp(opChtimes, name, atime, mtime), "chtimes")
}

// Lchtimes changes name's times without following a final symlink: a
// symlink's own. A zero time leaves that one unchanged.
func (s *Store) Lchtimes(name string, atime, mtime time.Time) error {
	return s.change(chtimesOp(opLchtimes, name, atime, mtime), "lchtimes")
}
