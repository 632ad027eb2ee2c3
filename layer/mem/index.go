package mem

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// A large directory of the live tree also keeps its entries in a hash
// index, which a reader of the live layer asks before the treap: finding
// a name in a treap of n entries follows about 2 ln n dependent pointers
// (17 at 20,000), each a likely cache miss, where the index takes one
// group of slots, the entry and the name's bytes. The treap stays the
// truth: snapshots, listings and the writer's edits use it, and the index
// only answers "which entry has this name" for the directory as it is now.
//
// The index is open addressing over groups of 8 slots, as Go's maps do:
// each group has a word of 8 control bytes (0 empty, tombstone, or the top
// 7 bits of the name's hash with the high bit set) beside 8 pointers to
// entries. A slot points to an entry, whose name never changes once it is
// reachable, so a reader checks a hit against the entry's own name.
//
// Only the writer changes an index, under FS.mu, and only inside a window
// that makes its sequence number odd (a seqlock): every change an
// operation makes to any index (a name added, removed, or pointed at
// another entry, a newer one of the same file included) goes in one
// window per index, and the windows of one operation close together when
// it ends (FS.unlock), so that a rename across two directories shows
// whole. A reader loads the number, probes and loads it again; on an odd
// or changed number it asks the treap of the directory's state it holds
// instead, which is linearizable by itself: the index answers with the
// entries the tree holds once the operation is over, and the tree itself
// before. So a reader never waits and never retries, and a probe may see
// a half-done change only to throw it away.
//
// An index costs 9 bytes a slot at a load of 3/8 to 7/8, about 18 bytes
// an entry at 1,000 entries, and keeping it up to date costs every write
// to the directory a probe and the window's atomics. So a directory gets
// one only when it is read: a lookup of the live layer that searches the
// treap of a directory of indexMin entries or more without an index
// builds one, in O(n), if it can take the writer's lock without waiting
// (buildIndexOf), and otherwise leaves it to a later lookup. A writer,
// which holds the lock, never builds one, so that a directory that is
// only written (filled, emptied) pays nothing for indexes. A directory
// loses its index when it falls below indexDrop entries.

const (
	indexMin  = 64 // entries at which a directory gets an index
	indexDrop = 16 // entries below which it loses it
	groupSize = 8

	ctrlEmpty = 0x00
	ctrlTomb  = 0x7f // a removed entry: probes go on past it
	lsb       = 0x0101010101010101
	msb       = 0x8080808080808080
)

// indexSeed keys the hash of names, for the process.
var indexSeed = maphash.MakeSeed()

// kidIndex is the hash index of one directory of the live tree, shared by
// every state of the directory from the one it was built for on, the
// directory's latest state when it was built (state.with copies the
// pointer); only the live directory's is kept up to date.
type kidIndex struct {
	// seq is odd while the writer changes what the index answers.
	seq atomic.Uint64
	tab atomic.Pointer[kidTable]

	// Under FS.mu:
	live int  // entries held
	used int  // slots not empty: entries and tombstones
	open bool // seq is odd for the operation in progress
	dead bool // dropped: seq stays odd, so that no reader uses it
}

// kidTable is one generation of an index's slots; a rebuild replaces it
// whole.
type kidTable struct {
	groups []group
	mask   uint64 // len(groups) - 1
}

// group is 8 slots and their control bytes, side by side, so that a probe
// that matches finds its slot in the same or the next cache line.
type group struct {
	ctrl  atomic.Uint64
	slots [groupSize]atomic.Pointer[entry]
}

// slot returns slot i of t.
func (t *kidTable) slot(i uint64) *atomic.Pointer[entry] {
	return &t.groups[i/groupSize].slots[i%groupSize]
}

// newTable returns an empty table with room for n entries at a load of at
// most 3/4.
func newTable(n int) *kidTable {
	groups := uint64(1)
	for groups*groupSize*3/4 < uint64(n) {
		groups *= 2
	}
	return &kidTable{groups: make([]group, groups), mask: groups - 1}
}

func hashName(name string) uint64 { return maphash.String(indexSeed, name) }

// tagOf is the control byte of a name of hash h, repeated in every byte.
func tagOf(h uint64) uint64 { return (h>>57 | 0x80) * lsb }

// matches returns a word with the high bit set in each byte of c equal
// to the byte of tag; it may also mark a byte after a match, which the
// name comparison then rejects.
func matches(c, tag uint64) uint64 {
	x := c ^ tag
	return (x - lsb) &^ x & msb
}

// empties returns a word with the high bit set in each empty byte of c.
// It is exact: no control byte is 0x01, the only value the borrow of an
// empty byte below could make look empty.
func empties(c uint64) uint64 { return (c - lsb) &^ c & msb }

// find returns the entry named name in t, or nil. A reader may call it
// while the writer changes t; its answer then means nothing, and the
// caller's sequence check throws it away.
func (t *kidTable) find(name string, h uint64) *entry {
	tag := tagOf(h)
	g := h & t.mask
	for n := uint64(0); n <= t.mask; n++ {
		gr := &t.groups[g]
		c := gr.ctrl.Load()
		for m := matches(c, tag); m != 0; m &= m - 1 {
			if e := gr.slots[bits.TrailingZeros64(m)>>3].Load(); e != nil && e.name == name {
				return e
			}
		}
		if empties(c) != 0 {
			return nil
		}
		g = (g + 1) & t.mask
	}
	return nil
}

// slotOf returns the slot of name in t, or -1. The writer calls it.
func (t *kidTable) slotOf(name string, h uint64) int {
	tag := tagOf(h)
	g := h & t.mask
	for n := uint64(0); n <= t.mask; n++ {
		gr := &t.groups[g]
		c := gr.ctrl.Load()
		for m := matches(c, tag); m != 0; m &= m - 1 {
			b := uint64(bits.TrailingZeros64(m) >> 3)
			if e := gr.slots[b].Load(); e != nil && e.name == name {
				return int(g*groupSize + b)
			}
		}
		if empties(c) != 0 {
			return -1
		}
		g = (g + 1) & t.mask
	}
	return -1
}

// add puts e, whose name t does not hold, in the first free slot of its
// probe sequence, and reports whether that slot was empty (not a
// tombstone). The writer calls it; the slot is filled before its control
// byte says so. The caller keeps a free slot in t.
func (t *kidTable) add(e *entry, h uint64) bool {
	g := h & t.mask
	for {
		gr := &t.groups[g]
		c := gr.ctrl.Load()
		if free := ^c & msb; free != 0 {
			b := uint64(bits.TrailingZeros64(free) >> 3)
			gr.slots[b].Store(e)
			wasEmpty := byte(c>>(8*b)) == ctrlEmpty
			c = c&^(0xff<<(8*b)) | (h>>57|0x80)<<(8*b)
			gr.ctrl.Store(c)
			return wasEmpty
		}
		g = (g + 1) & t.mask
	}
}

// setCtrl sets the control byte of slot i to b.
func (t *kidTable) setCtrl(i int, b uint64) {
	gr, s := &t.groups[i/groupSize], 8*(uint64(i)%groupSize)
	c := gr.ctrl.Load()
	gr.ctrl.Store(c&^(0xff<<s) | b<<s)
}

// capacity is the number of slots.
func (t *kidTable) capacity() int { return len(t.groups) * groupSize }

// buildIndex returns an index of every entry of ds, a directory's latest
// state; the caller holds FS.mu and publishes it whole.
func buildIndex(ds *state) *kidIndex {
	kids := ds.dir.kids
	t := newTable(kids.Len())
	for _, e := range kids.All() {
		t.add(e, hashName(e.name))
	}
	x := &kidIndex{live: kids.Len(), used: kids.Len()}
	x.tab.Store(t)
	return x
}

// get looks name up for a reader: known is false when the writer changed
// the index meanwhile, and the caller must ask the treap; otherwise e is
// the entry, nil when there is none.
func (x *kidIndex) get(name string) (e *entry, known bool) {
	h := hashName(name)
	s := x.seq.Load()
	if s&1 != 0 {
		return nil, false
	}
	e = x.tab.Load().find(name, h)
	if x.seq.Load() != s {
		return nil, false
	}
	return e, true
}

// getKid looks name up in ds, the state of the directory d: when live is
// the layer, ds being of its live tree, in the hash index of ds if it has
// one and the index answers, and otherwise in its treap. A lookup in the
// treap of a large directory without an index asks live to build one.
func getKid(live *FS, d *entry, ds *state, name string) (*entry, bool) {
	if live != nil {
		if x := ds.dir.idx.Load(); x != nil {
			if e, known := x.get(name); known {
				return e, e != nil
			}
		} else if ds.dir.kids.Len() >= live.indexMin {
			live.buildIndexOf(d)
		}
	}
	return ds.dir.kids.Get(name)
}

// buildIndexOf gives the directory of d, in its latest state, a hash
// index, if it is linked, has indexMin entries or more and none yet, and
// the writer's lock is free: a reader that has just searched its treap
// calls it, and never waits for the lock. A writer, which holds it,
// builds nothing. The index is whole and its window closed before the
// state shows it, so that a reader that loads it may use it at once;
// every later state of the directory shares it, and its writers keep it.
func (f *FS) buildIndexOf(d *entry) {
	if d.ino.parent.Load() == nil && d.ino != f.rootIno {
		return // removed, as RemoveAll leaves a large directory: no lock
	}
	if !f.mu.TryLock() {
		return
	}
	defer f.mu.Unlock()
	if !f.linked(d.ino) {
		return // removed: no writer changes it, nor would keep an index
	}
	ds := d.ino.cur.Load().state()
	if ds.dir != nil && ds.dir.idx.Load() == nil && ds.dir.kids.Len() >= f.indexMin {
		ds.dir.idx.Store(buildIndex(ds))
	}
}

// openIndex starts x's window for the operation in progress: readers
// stop trusting it until endIndexWrites closes it.
func (f *FS) openIndex(x *kidIndex) {
	if x.open {
		return
	}
	x.open = true
	x.seq.Add(1)
	f.opened = append(f.opened, x)
}

// openIndexOf opens the window of ds's index, if it has one, before an
// operation edits ds's entries: SetOwned and DeleteOwned change the treap
// the published state shares in place, so a reader could see a name in a
// listing that the index, not yet told, says is absent (ENOENT for a file
// just listed), or find through the index an entry the treap no longer
// holds. With the window open, readers ask the treap until the operation
// ends.
func (f *FS) openIndexOf(ds *state) {
	if ds.dir == nil {
		return
	}
	if x := ds.dir.idx.Load(); x != nil {
		f.openIndex(x)
	}
}

// endIndexWrites closes the windows the operation opened; every writer
// calls it before it lets go of f.mu (FS.unlock).
func (f *FS) endIndexWrites() {
	for i, x := range f.opened {
		if !x.dead {
			x.seq.Add(1)
		}
		x.open = false
		f.opened[i] = nil
	}
	f.opened = f.opened[:0]
}

// indexPut records in the index of ds, the new state of a live directory
// whose entries now map name to e, that they do, when it has an index.
func (f *FS) indexPut(ds *state, name string, e *entry) {
	x := ds.dir.idx.Load()
	if x == nil {
		return
	}
	t := x.tab.Load()
	h := hashName(name)
	f.openIndex(x)
	if i := t.slotOf(name, h); i >= 0 {
		t.slot(uint64(i)).Store(e)
		return
	}
	if x.used+1 <= t.capacity()*7/8 {
		if t.add(e, h) {
			x.used++
		}
		x.live++
		return
	}
	// Full of entries or tombstones: a new table sized for what stays.
	nt := newTable(x.live + 1)
	for i := range t.groups {
		for j := range t.groups[i].slots {
			if old := t.groups[i].slots[j].Load(); old != nil {
				nt.add(old, hashName(old.name))
			}
		}
	}
	nt.add(e, h)
	x.live++
	x.used = x.live
	x.tab.Store(nt)
}

// indexDelete records in the index of ds, the new state of a live
// directory, that name is gone; below f.indexDrop entries the directory
// loses its index.
func (f *FS) indexDelete(ds *state, name string) {
	x := ds.dir.idx.Load()
	if x == nil {
		return
	}
	f.openIndex(x)
	if ds.dir.kids.Len() < f.indexDrop {
		x.dead = true
		ds.dir.idx.Store(nil)
		return
	}
	t := x.tab.Load()
	if i := t.slotOf(name, hashName(name)); i >= 0 {
		t.slot(uint64(i)).Store(nil)
		t.setCtrl(i, ctrlTomb)
		x.live--
	}
}

// indexMove records a rename's change to ds, the new state of a live
// directory: old is gone, left (when not nil) stands in its place, and
// moved (when not nil) is under name now. The deletion comes first, so
// that a directory that loses its index for it does not rebuild it at
// once.
func (f *FS) indexMove(ds *state, old string, left *entry, name string, moved *entry) {
	f.indexDelete(ds, old)
	if left != nil {
		f.indexPut(ds, left.name, left)
	}
	if moved != nil {
		f.indexPut(ds, name, moved)
	}
}

// indexRefresh points the slot of e's name in the index of ds, a state of
// a live directory, at e, a newer entry of the same file, which the
// operation links in its place.
func (f *FS) indexRefresh(ds *state, e *entry) {
	if ds.dir == nil {
		return
	}
	x := ds.dir.idx.Load()
	if x == nil {
		return
	}
	f.openIndex(x)
	t := x.tab.Load()
	if i := t.slotOf(e.name, hashName(e.name)); i >= 0 {
		t.slot(uint64(i)).Store(e)
	}
}
