package layer

import (
	"io/fs"
	"sync"
	"sync/atomic"
)

// Op says what a [Change] did. A change may carry more than one bit: an
// open that creates or truncates is OpCreate|OpWrite.
type Op uint8

const (
	// OpCreate: Name was made, or replaced by a new entry (a file,
	// directory, symlink or whiteout; MkdirAll reports the topmost
	// directory it made).
	OpCreate Op = 1 << iota
	// OpRemove: Name is gone, with everything below it.
	OpRemove
	// OpRename: Name moved to NewName, replacing what NewName was.
	OpRename
	// OpWrite: Name's content changed (a write, a truncation).
	OpWrite
	// OpChattr: Name's mode, owner or times changed.
	OpChattr
	// OpReset: anything may have changed. A watcher gets it in place of
	// the changes it could not keep, and a file system sends it for a
	// change too broad to name (a store going back to an older state).
	OpReset
)

// Change is one change of a file system's tree, as a [WatchFS] reports it.
// Names are the file system's own: io/fs paths with every symlink
// resolved, so that a change made through a symlink names the entry it
// changed.
type Change struct {
	Op      Op
	Name    string
	NewName string // OpRename's destination
}

// WatchFS is a file system that reports its changes: every change that
// succeeds, once readers can see it, in the order they see them.
//
// Watch subscribes to them. filter, when not nil, is called for each
// change on the goroutine that made it, while that goroutine may hold the
// file system's writers' lock: it must be quick and must not call the
// file system. A change it returns false for is not kept for this
// watcher. A file system that cannot report its changes (a union over an
// upper layer that does not) returns an error wrapping
// errors.ErrUnsupported.
type WatchFS interface {
	fs.FS
	Watch(filter func(Change) bool) (*Watcher, error)
}

// watchLimit is how many changes a watcher keeps before it drops them
// all for one OpReset.
const watchLimit = 4096

// Feed is the publishing side of [WatchFS], for a backend to embed or
// hold: [Feed.Publish] hands a change to every watcher without waiting
// for any of them. Its zero value has no watchers, and then Publish costs
// one atomic load. It is safe for concurrent use.
type Feed struct {
	mu       sync.Mutex                 // serializes Watch and Close
	watchers atomic.Pointer[[]*Watcher] // nil: none
}

// Active reports whether anyone watches: a backend need not work out a
// change's names when nobody does.
func (f *Feed) Active() bool { return f.watchers.Load() != nil }

// Publish hands c to every watcher. It never blocks on a watcher: one
// that has fallen behind by more than a few thousand changes drops them
// for one OpReset.
func (f *Feed) Publish(c Change) {
	ws := f.watchers.Load()
	if ws == nil {
		return
	}
	for _, w := range *ws {
		w.add(c)
	}
}

// Watch returns a new watcher of f's changes (see [WatchFS]).
func (f *Feed) Watch(filter func(Change) bool) *Watcher {
	w := &Watcher{feed: f, filter: filter, ready: make(chan struct{}, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	var ws []*Watcher
	if old := f.watchers.Load(); old != nil {
		ws = append(ws, *old...)
	}
	ws = append(ws, w)
	f.watchers.Store(&ws)
	return w
}

func (f *Feed) remove(w *Watcher) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.watchers.Load()
	if old == nil {
		return
	}
	var ws []*Watcher
	for _, o := range *old {
		if o != w {
			ws = append(ws, o)
		}
	}
	if len(ws) == 0 {
		f.watchers.Store(nil)
		return
	}
	f.watchers.Store(&ws)
}

// Watcher receives the changes of a [WatchFS]. Ready signals that some
// wait, and Changes takes them. It is safe for concurrent use.
type Watcher struct {
	feed   *Feed
	filter func(Change) bool
	ready  chan struct{}

	mu      sync.Mutex
	pending []Change
	reset   bool // pending overflowed: one OpReset stands for everything
	closed  bool
}

func (w *Watcher) add(c Change) {
	if w.filter != nil && !w.filter(c) {
		return
	}
	w.mu.Lock()
	switch {
	case w.closed || w.reset:
	case c.Op&OpReset != 0 || len(w.pending) >= watchLimit:
		w.reset, w.pending = true, nil
	case len(w.pending) > 0 && w.pending[len(w.pending)-1] == c:
		// The same change again (a run of writes to one file): one
		// tells as much.
	default:
		w.pending = append(w.pending, c)
	}
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// Ready returns a channel that receives a value when changes wait to be
// taken. One value may stand for many changes.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Changes takes the changes that wait, oldest first: nil when none do,
// and one Change with Op OpReset after the watcher fell behind, for all
// it could not keep.
func (w *Watcher) Changes() []Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reset {
		w.reset = false
		return []Change{{Op: OpReset}}
	}
	cs := w.pending
	w.pending = nil
	return cs
}

// Close ends the subscription: later changes are not kept, and those
// waiting are dropped.
func (w *Watcher) Close() error {
	w.feed.remove(w)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed, w.pending, w.reset = true, nil, false
	return nil
}
