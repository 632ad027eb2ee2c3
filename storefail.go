package packfs

import (
	"io"
	"io/fs"
	"os"
	"reflect"
	"runtime"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/wal"
)

// A failed change leaves the tree as it was. The store applies a change
// to the live union before it logs it (the union is what says whether the
// change succeeds, and only changes that succeed are logged), so when the
// log then fails the change is already there: undoing it is going back to
// the state before it. A change whose logging can fail takes that state
// first, in O(1): a snapshot of the upper layer over the same packs (an
// undoPoint; see undoFor for which changes those are). When
// the log fails, the store refuses changes from then on, and readers,
// snapshots and open files see the state before the oldest change the
// failure costs: the change whose append failed, or, when a sync failed,
// the oldest change still waiting for a sync to acknowledge it. The
// changes after that one all fail too, since a failed log write or sync
// is never retried.

// undoPoint is the tree as it was before a change: the upper layer's
// snapshot over the union's lowers. end is where the change's unit ends
// in the log, once logged.
type undoPoint struct {
	top    fs.FS
	lowers []fs.FS
	end    wal.LSN
}

// undoPoint returns the live tree's state now; s.wmu is held.
func (s *Store) undoPoint() undoPoint {
	u := s.live.Load()
	var top fs.FS
	if m, ok := u.upper.(*mem.FS); ok {
		top = m.Snapshot() // without snapshotOf's reflection: every change pays it
	} else {
		top, _ = snapshotOf(u.upper)
	}
	return undoPoint{top: top, lowers: u.layers[1:]}
}

// undoFor returns the state before the change o, for when logging o
// fails after o has applied; s.wmu is held. Taking it costs more than
// the snapshot's O(1): it freezes the upper layer, so the next change
// copies the index nodes it touches instead of changing them in place.
// So it is taken only where logging o can fail: under SyncAlways, whose
// sync may, and when o's record goes to the segment at once (a large
// one, or one that fills the log's buffer). Otherwise the record only
// joins the buffer, which fails only once the log has failed: then
// usable refused o before it applied, unless a sync on another goroutine
// failed meanwhile. Such a change stays, as do the others whose records
// that sync lost, and the failure is the store's from then on (see
// logOp); the zero undoPoint says so.
func (s *Store) undoFor(o *op) undoPoint {
	if s.opts.Sync == SyncAlways || o.split() || s.log.Writes(o.size()) {
		return s.undoPoint()
	}
	return undoPoint{}
}

// awaitSync records that the change logged up to end, which pre was the
// state before, is acknowledged only by a sync; s.wmu is held, so the
// records keep the log's order.
func (s *Store) awaitSync(end wal.LSN, pre undoPoint) {
	pre.end = end
	s.umu.Lock()
	s.unsynced = append(s.unsynced, pre)
	s.umu.Unlock()
}

// synced forgets the changes up to p: a sync made them durable.
func (s *Store) synced(p wal.LSN) {
	s.umu.Lock()
	s.dropSynced(p)
	s.umu.Unlock()
}

// dropSynced drops the undo points of the changes before p; s.umu is held.
func (s *Store) dropSynced(p wal.LSN) {
	i := 0
	for i < len(s.unsynced) && s.unsynced[i].end <= p {
		i++
	}
	if i == len(s.unsynced) {
		s.unsynced = s.unsynced[:0]
		return
	}
	s.unsynced = s.unsynced[i:]
}

// fail records that the log failed with err, and undoes for every reader
// what the failure costs: the change that pre was the state before (nil:
// none of its own, as for a sync), or an older one waiting for its sync.
// It returns err. s.wmu may be held or not.
func (s *Store) fail(err error, pre *undoPoint) error {
	s.broken.CompareAndSwap(nil, &err)
	s.umu.Lock()
	// What a sync made durable stays, even if its committer has not
	// yet come back to say so.
	s.dropSynced(s.log.Synced())
	if len(s.unsynced) > 0 {
		p := s.unsynced[0]
		pre = &p
	}
	s.unsynced = nil
	s.umu.Unlock()
	if pre != nil {
		s.fallBack(*pre)
		s.feed.Publish(layer.Change{Op: layer.OpReset})
	}
	return err
}

// breakAt makes err the sticky error without a log failure (memory and
// log disagree), and shows readers the state pre, before the change that
// could not apply.
func (s *Store) breakAt(err error, pre undoPoint) error {
	s.broken.CompareAndSwap(nil, &err)
	s.fallBack(pre)
	s.feed.Publish(layer.Change{Op: layer.OpReset})
	return err
}

// fallBack makes pre the tree readers see for good, and moves the open
// files there, read-only, unless an older state took its place first.
func (s *Store) fallBack(pre undoPoint) {
	if pre.top == nil {
		return
	}
	u := New(nil, append([]fs.FS{pre.top}, pre.lowers...)...)
	if !s.fallback.CompareAndSwap(nil, u) {
		return
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	for h := range s.handles.all() {
		p := h.path
		if h.in != nil && h.in == s.txFrozen {
			p = h.before // opened beside the transaction, in the state pre is
		}
		if p == "" {
			continue
		}
		h.mu.Lock()
		old := h.file()
		nf, err := u.OpenFile(p, os.O_RDONLY, 0)
		if err == nil {
			if off, err := old.Seek(0, io.SeekCurrent); err == nil {
				nf.Seek(off, io.SeekStart)
			}
			h.f.Store(&fileRef{nf})
			h.in = u
		} // else made by the change undone: it stays as it is
		h.mu.Unlock()
	}
}

// lockChange takes s.wmu for a change. A change made inside the callback
// of an Update of this store would wait for the transaction, which waits
// for the callback: it fails with ErrInTransaction instead.
//
// Telling the callback's goroutine apart from others needs no goroutine
// ids: only while a callback runs (s.inCallback) does a change that finds
// the lock taken look at its own call stack for the frame of
// runCallback. A change from another goroutine has none, and waits as
// before. One case is refused that need not be: a change on a goroutine
// inside the callback of another store's Update, made while this store
// runs a transaction; waiting there could deadlock (each callback
// waiting for the other's store), so it fails too.
func (s *Store) lockChange(op, name string) error {
	if s.wmu.TryLock() {
		return nil
	}
	if s.inCallback.Load() && withinCallback() {
		return reentered(op, name)
	}
	s.wmu.Lock()
	return nil
}

// reentered is the error of a change made inside an Update's callback.
func reentered(op, name string) error {
	return layer.PathError(op, name, ErrInTransaction)
}

// runCallback runs an Update's callback; withinCallback looks for its
// frame.
//
//go:noinline
func runCallback(s *Store, fn func(*Tx) error, tx *Tx) error {
	s.inCallback.Store(true)
	defer s.inCallback.Store(false)
	return fn(tx)
}

// callbackFunc is runCallback's name as the runtime reports it.
var callbackFunc = runtime.FuncForPC(reflect.ValueOf(runCallback).Pointer()).Name()

// withinCallback reports whether the calling goroutine is running an
// Update's callback.
func withinCallback() bool {
	pcs := make([]uintptr, 32)
	for skip := 2; ; skip += len(pcs) {
		n := runtime.Callers(skip, pcs)
		frames := runtime.CallersFrames(pcs[:n])
		for {
			f, more := frames.Next()
			if f.Function == callbackFunc {
				return true
			}
			if !more {
				break
			}
		}
		if n < len(pcs) {
			return false
		}
	}
}
