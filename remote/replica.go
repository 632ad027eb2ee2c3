package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// ReplicaOptions tune a Replica.
type ReplicaOptions struct {
	// Poll is how often the manifest is read. 0 means 5 s.
	Poll time.Duration
}

// Replica is a read-only view of a store published to a bucket (see
// Publisher), opened from the bucket alone. It follows the manifest:
// every Poll it reads it, and when it names a new generation, opens
// that generation's packs (reusing those it has open) and moves to it.
// Packs are uploaded whole before a manifest names them, so a replica
// never sees part of one. A Snapshot keeps its generation readable
// until released, however far the replica moves on; files opened
// through the Replica's own methods keep theirs until closed.
//
// A Replica sees checkpoints only: changes in the writer's log since
// its last checkpoint are not in the bucket.
type Replica struct {
	b      *Bucket
	prefix string
	parent context.Context // the packs' context: Close does not end it
	ctx    context.Context // the poll's
	stop   context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex // guards packs, refresh
	packs map[string]*sharedPack
	cur   atomic.Pointer[generation]
	last  atomic.Pointer[error] // the last poll's failure, nil after a success
	moved chan struct{}         // closed and replaced at each move
}

type sharedPack struct {
	p    *Pack
	refs int
}

// generation is one manifest's tree. refs counts the replica's hold (while
// it is current) and each snapshot or open file.
type generation struct {
	r   *Replica
	gen uint64
	// manifest is the manifest's bytes. A poll compares them, not the
	// ETag: a server that writes an object's bytes and its ETag in two
	// steps (versitygw's sidecar metadata) can serve the old manifest
	// under the new ETag once, and a replica that trusted the ETag
	// then stayed on the old generation for good.
	manifest []byte
	fsys     *packfs.FS
	keys     []string
	refs     atomic.Int64
}

// OpenReplica opens the store under prefix and follows it until Close.
// It fails if there is no manifest yet.
func (b *Bucket) OpenReplica(ctx context.Context, prefix string, opts *ReplicaOptions) (*Replica, error) {
	poll := 5 * time.Second
	if opts != nil && opts.Poll > 0 {
		poll = opts.Poll
	}
	rctx, stop := context.WithCancel(ctx)
	r := &Replica{b: b, prefix: prefix, parent: ctx, ctx: rctx, stop: stop, done: make(chan struct{}),
		packs: map[string]*sharedPack{}, moved: make(chan struct{})}
	if err := r.refresh(); err != nil {
		stop()
		return nil, err
	}
	go r.follow(poll)
	return r, nil
}

func (r *Replica) follow(poll time.Duration) {
	defer close(r.done)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		if err := r.refresh(); err != nil {
			r.last.Store(&err)
		} else {
			r.last.Store(nil)
		}
	}
}

// Err returns the last poll's failure, or nil.
func (r *Replica) Err() error {
	if e := r.last.Load(); e != nil {
		return *e
	}
	return nil
}

// Generation returns the generation the replica serves.
// after Close, 0.
func (r *Replica) Generation() uint64 {
	if g := r.cur.Load(); g != nil {
		return g.gen
	}
	return 0
}

// WaitGeneration waits until the replica serves generation gen or a
// later one, or ctx ends.
func (r *Replica) WaitGeneration(ctx context.Context, gen uint64) error {
	for {
		r.mu.Lock()
		ch := r.moved
		r.mu.Unlock()
		if r.Generation() >= gen {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-r.done:
			return fs.ErrClosed
		}
	}
}

// refresh reads the manifest and moves to what it names, if new.
func (r *Replica) refresh() error {
	key := path.Join(r.prefix, manifestKey)
	data, _, err := r.b.getSmall(r.ctx, key)
	if err != nil {
		return err
	}
	if c := r.cur.Load(); c != nil && bytes.Equal(c.manifest, data) {
		return nil
	}
	var m remoteManifest
	if err := json.Unmarshal(data, &m); err != nil || m.Version != 1 || !fs.FileMode(m.Mode).IsDir() {
		return &fs.PathError{Op: "read", Path: r.b.path(key), Err: fmt.Errorf("%w: not a store manifest", fs.ErrInvalid)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	g := &generation{r: r, gen: m.Generation, manifest: data}
	lowers := make([]fs.FS, 0, len(m.Packs))
	for _, mp := range m.Packs {
		sp := r.packs[mp.Key]
		if sp == nil {
			p, err := r.b.OpenPack(r.parent, mp.Key)
			if err != nil {
				r.drop(g.keys)
				return err
			}
			if p.obj.ETag() != mp.ETag || p.obj.Size() != mp.Size {
				p.Close()
				r.drop(g.keys)
				return &fs.PathError{Op: "open", Path: r.b.path(mp.Key), Err: fmt.Errorf("%w: not the pack the manifest names", ErrChanged)}
			}
			sp = &sharedPack{p: p}
			r.packs[mp.Key] = sp
		}
		sp.refs++
		g.keys = append(g.keys, mp.Key)
		lowers = append(lowers, sp.p)
	}
	root := time.Unix(0, m.Root)
	upper := mem.NewWithClock(func() time.Time { return root })
	// The upper layer's root is the union's: it takes the root's whole
	// mode (setuid, setgid and sticky bits too) from the manifest, and
	// its owner from the top pack, as the writer's store does.
	if mode := fs.FileMode(m.Mode); mode.IsDir() && mode != fs.ModeDir|0o755 {
		upper.Chmod(".", mode)
	}
	if len(lowers) > 0 {
		if fi, err := fs.Stat(lowers[0], "."); err == nil {
			if uid, gid, ok := layer.OwnerOf(fi); ok {
				upper.Lchown(".", ownerArg(uid), ownerArg(gid))
			}
		}
	}
	snap, err := packfs.New(upper, lowers...).Snapshot()
	if err != nil {
		r.drop(g.keys)
		return err
	}
	g.fsys = snap
	g.refs.Store(1)
	old := r.cur.Swap(g)
	close(r.moved)
	r.moved = make(chan struct{})
	if old != nil {
		old.releaseLocked()
	}
	return nil
}

// ownerArg is the Lchown argument that sets an id to id: -1 for
// layer.NoOwner, which leaves it unset.
func ownerArg(id uint32) int {
	if id == layer.NoOwner {
		return -1
	}
	return int(id)
}

// drop releases the packs keys; r.mu is held.
func (r *Replica) drop(keys []string) {
	for _, k := range keys {
		sp := r.packs[k]
		if sp.refs--; sp.refs == 0 {
			sp.p.Close()
			delete(r.packs, k)
		}
	}
}

func (g *generation) release() {
	if g.refs.Add(-1) == 0 {
		g.r.mu.Lock()
		g.r.drop(g.keys)
		g.r.mu.Unlock()
	}
}

func (g *generation) releaseLocked() {
	if g.refs.Add(-1) == 0 {
		g.r.drop(g.keys)
	}
}

// acquire holds the current generation.
func (r *Replica) acquire() (*generation, error) {
	for {
		g := r.cur.Load()
		if g == nil {
			return nil, fs.ErrClosed
		}
		n := g.refs.Load()
		if n <= 0 {
			// Released by a move meanwhile: the next is current.
			if r.cur.Load() == g {
				return nil, fs.ErrClosed
			}
			continue
		}
		if g.refs.CompareAndSwap(n, n+1) {
			return g, nil
		}
	}
}

// Snapshot is one generation of a replica, readable until Release.
type Snapshot struct {
	*packfs.FS
	g    *generation
	once sync.Once
}

// Generation returns the snapshot's generation.
func (s *Snapshot) Generation() uint64 { return s.g.gen }

// Release lets the replica close the snapshot's packs once nothing else
// holds them; the snapshot must not be read after.
func (s *Snapshot) Release() { s.once.Do(s.g.release) }

// Snapshot returns the current generation's tree.
func (r *Replica) Snapshot() (*Snapshot, error) {
	g, err := r.acquire()
	if err != nil {
		return nil, &fs.PathError{Op: "snapshot", Path: ".", Err: err}
	}
	return &Snapshot{FS: g.fsys, g: g}, nil
}

// Close stops following and releases the current generation; snapshots
// not yet released stay readable until they are.
func (r *Replica) Close() error {
	r.stop()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.cur.Swap(nil); g != nil {
		g.releaseLocked()
	}
	return nil
}

func (r *Replica) with(op, name string, f func(fsys *packfs.FS) error) error {
	g, err := r.acquire()
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	defer g.release()
	return f(g.fsys)
}

// Open opens name in the current generation; the file keeps that
// generation readable until it is closed.
func (r *Replica) Open(name string) (fs.File, error) {
	g, err := r.acquire()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := g.fsys.Open(name)
	if err != nil {
		g.release()
		return nil, err
	}
	return &replicaFile{File: f, g: g}, nil
}

// Stat is fs.Stat in the current generation.
func (r *Replica) Stat(name string) (fi fs.FileInfo, err error) {
	err = r.with("stat", name, func(fsys *packfs.FS) error { fi, err = fsys.Stat(name); return err })
	return fi, err
}

// ReadDir is fs.ReadDir in the current generation.
func (r *Replica) ReadDir(name string) (ds []fs.DirEntry, err error) {
	err = r.with("readdir", name, func(fsys *packfs.FS) error { ds, err = fsys.ReadDir(name); return err })
	return ds, err
}

// ReadFile is fs.ReadFile in the current generation.
func (r *Replica) ReadFile(name string) (data []byte, err error) {
	err = r.with("readfile", name, func(fsys *packfs.FS) error { data, err = fsys.ReadFile(name); return err })
	return data, err
}

// replicaFile holds its generation until closed.
type replicaFile struct {
	fs.File
	g    *generation
	once sync.Once
}

func (f *replicaFile) Close() error {
	err := f.File.Close()
	f.once.Do(f.g.release)
	return err
}

func (f *replicaFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if d, ok := f.File.(fs.ReadDirFile); ok {
		return d.ReadDir(n)
	}
	return nil, &fs.PathError{Op: "readdir", Path: "", Err: errors.New("not a directory")}
}

func (f *replicaFile) ReadAt(p []byte, off int64) (int, error) {
	if ra, ok := f.File.(io.ReaderAt); ok {
		return ra.ReadAt(p, off)
	}
	return 0, errors.ErrUnsupported
}

func (f *replicaFile) Seek(off int64, whence int) (int64, error) {
	if s, ok := f.File.(io.Seeker); ok {
		return s.Seek(off, whence)
	}
	return 0, errors.ErrUnsupported
}

var (
	_ fs.ReadDirFS  = (*Replica)(nil)
	_ fs.ReadFileFS = (*Replica)(nil)
	_ fs.StatFS     = (*Replica)(nil)
)
