package mem

import (
	"reflect"
	"runtime"
	"sync/atomic"
)

// A file's bytes are kept in chunks of chunkSize under a persistent radix
// tree, so that a new version shares every chunk it does not change: an
// append copies nothing already written and an overwrite copies at most the
// chunks it touches, each at most once. A chunk may be shorter than
// chunkSize, or missing, where the file has a hole: the bytes it lacks read
// as zeros.
//
// The last chunk grows in place into its spare capacity while no other
// version has written there. The high-water mark hw, shared by every version
// that shares that backing array, records how far it has been written; a
// version may append in place only when it moves the mark from its own
// length to its new one, with a compare-and-swap: versions of one file in
// two layers (a content shared across layers, see Copy.Share) have two
// writers, each under its own layer's lock, and only one of them may take
// the room. Readers only read below their version's size, and a writer
// only writes past the mark it moved, so no two touch the same bytes. The
// mark lives outside the content it is made with, where no copy of a
// version reads it.
//
// The tree's nodes are small (8 slots, 256 bytes) because each new version
// copies every node on the path to the chunks it changes: a 64 KiB write
// that fills a chunk of a 64 MiB file copies 4 nodes of 256 bytes, where
// 64 slots copied 2 of 2 KiB (BenchmarkWriteShared in bench/memfsbench,
// the store's large write: 0.43 against 1.6 ms for 64 MiB). A read pays
// the deeper walk once a chunk.

const (
	chunkShift = 16
	chunkSize  = 1 << chunkShift
	fanShift   = 3
	fanout     = 1 << fanShift
)

// content is one immutable version of a file's bytes. The nil *content is
// the empty file. The last chunk, the tail, lives outside the tree, so that
// appends inside it touch no tree node; a tail enters the tree when the file
// grows past it.
type content struct {
	size int64
	tail []byte        // the last chunk, index (size-1)>>chunkShift
	hw   *atomic.Int32 // high-water mark of tail's backing array, or nil
	root *inner
	// pins keep valid the memory of chunks that writeShared took from
	// its caller rather than copied (a mapped log's pages); every version
	// that may hold such a chunk carries them. Immutable once set.
	pins   *pinList
	height int32 // of the tree of the chunks before the tail; 0: empty
}

// markedContent is a new version with the mark its tail's hw points at,
// if it makes a new tail, in one allocation.
type markedContent struct {
	c    content
	mark atomic.Int32
}

// inner is a node of the chunk tree. At height 1 its chunks are the data;
// above, kids are subtrees.
type inner struct {
	kids   [fanout]*inner
	chunks [fanout][]byte
}

func newContent(b []byte) *content {
	if len(b) == 0 {
		return nil
	}
	if len(b) <= chunkSize {
		return &content{size: int64(len(b)), tail: b}
	}
	var c *content
	return c.writeAt(b, 0)
}

func (c *content) Size() int64 {
	if c == nil {
		return 0
	}
	return c.size
}

// last is the index of the tail chunk.
func (c *content) last() int64 { return (c.size - 1) >> chunkShift }

// chunk returns chunk i, which may be short or nil.
func (c *content) chunk(i int64) []byte {
	if c.size > 0 && i == c.last() {
		return c.tail
	}
	return c.treeChunk(i)
}

func (c *content) treeChunk(i int64) []byte {
	if c.height == 0 || i >= capacity(int(c.height)) {
		return nil
	}
	n := c.root
	for h := int(c.height); h > 1; h-- {
		n = n.kids[(i>>(fanShift*(h-1)))&(fanout-1)]
		if n == nil {
			return nil
		}
	}
	return n.chunks[i&(fanout-1)]
}

// readAt copies the bytes at off into p and returns how many it copied; it
// stops at the end of the file.
func (c *content) readAt(p []byte, off int64) int {
	if c == nil || off >= c.size {
		return 0
	}
	if rest := c.size - off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		ch := c.chunk(pos >> chunkShift)
		in := int(pos & (chunkSize - 1))
		want := min(len(p)-n, chunkSize-in)
		got := 0
		if in < len(ch) {
			got = copy(p[n:n+want], ch[in:])
		}
		clear(p[n+got : n+want])
		n += want
	}
	runtime.KeepAlive(c) // its pins, while its chunks are read
	return n
}

// bytes returns a fresh copy of the whole file.
func (c *content) bytes() []byte {
	b := make([]byte, c.Size())
	c.readAt(b, 0)
	return b
}

// capacity is how many chunks a tree of height h holds.
func capacity(h int) int64 { return int64(1) << (fanShift * h) }

// setTreeChunk replaces chunk i in c's tree, which c owns (a new version
// under construction), growing the tree as needed.
func (c *content) setTreeChunk(i int64, b []byte) { c.setTreeChunks(i, [][]byte{b}) }

// setTreeChunks replaces chunks i, i+1, ... with bs in c's tree, which c
// owns, growing the tree as needed. Each node on their paths is copied
// once, not once a chunk: a 1 MiB write sets 16 chunks that mostly share
// one leaf.
func (c *content) setTreeChunks(i int64, bs [][]byte) {
	if len(bs) == 0 {
		return
	}
	if c.height == 0 {
		c.height, c.root = 1, nil
	}
	for i+int64(len(bs))-1 >= capacity(int(c.height)) {
		r := &inner{}
		r.kids[0] = c.root
		c.root = r
		c.height++
	}
	c.root = setChunks(c.root, int(c.height), 0, i, bs)
}

// setChunks returns a copy of n, the subtree of height h whose first
// chunk is base, with the chunks of bs that fall in it set, bs[0] being
// chunk i.
func setChunks(n *inner, h int, base, i int64, bs [][]byte) *inner {
	m := &inner{}
	if n != nil {
		*m = *n
	}
	span := capacity(h - 1)
	lo := max(i, base)
	hi := min(i+int64(len(bs)), base+capacity(h))
	for slot := (lo - base) / span; base+slot*span < hi; slot++ {
		at := base + slot*span
		if h == 1 {
			m.chunks[slot] = bs[at-i]
		} else {
			m.kids[slot] = setChunks(m.kids[slot], h-1, at, i, bs)
		}
	}
	return m
}

// resize returns a copy of c with the new size, moving the tail into the
// tree when the file grows past it. The bytes past the old size read as
// zeros; a shrinking caller trims the chunks itself.
func (c *content) resize(size int64) *content { return c.resizeInto(new(content), size) }

// resizeInto is resize making the new version in nc, which the caller
// allocated (with the state that holds it, say).
func (c *content) resizeInto(nc *content, size int64) *content {
	if c != nil {
		*nc = *c
	}
	if c != nil && c.size > 0 && size > c.size && (size-1)>>chunkShift != c.last() {
		if c.tail != nil {
			nc.setTreeChunk(c.last(), c.tail)
		}
		nc.tail, nc.hw = nil, nil
	}
	nc.size = size
	return nc
}

// writeAt returns the version of c with p written at off.
func (c *content) writeAt(p []byte, off int64) *content {
	if len(p) == 0 {
		return c
	}
	n := new(markedContent)
	return c.writeInto(&n.c, p, off, nil, &n.mark)
}

// writeInto is writeAt of a p that is not empty, making the new version
// in nc, which the caller allocated with mark, unused, for a new tail's hw
// (nil: the tail never grows in place). A new tail that fits in spare,
// zeros the caller allocated with nc, is made there (see file.writeAt).
func (c *content) writeInto(nc *content, p []byte, off int64, spare []byte, mark *atomic.Int32) *content {
	end := off + int64(len(p))
	nc = c.resizeInto(nc, max(c.Size(), end))
	last := nc.last()
	// The chunks before the tail that p touches, set in the tree at
	// once when the loop ends.
	var set [][]byte
	for n := 0; n < len(p); {
		pos := off + int64(n)
		i := pos >> chunkShift
		in := int(pos & (chunkSize - 1))
		want := min(len(p)-n, chunkSize-in)
		if i != last {
			old := nc.treeChunk(i)
			b := make([]byte, max(len(old), in+want))
			copy(b, old)
			copy(b[in:], p[n:n+want])
			set = append(set, b)
			n += want
			continue
		}
		old := nc.tail
		need := max(len(old), in+want)
		if nc.hw != nil && in >= len(old) && need <= cap(old) && nc.hw.CompareAndSwap(int32(len(old)), int32(need)) {
			// Append into spare capacity nobody else has written,
			// and now nobody else will.
			b := old[:need]
			copy(b[in:], p[n:n+want])
			nc.tail = b
		} else {
			// Double the tail so that a run of small appends costs
			// amortized O(1) per byte.
			var b []byte
			if len(old) == 0 && need <= cap(spare) {
				b = spare[:need]
			} else {
				b = make([]byte, need, min(chunkSize, max(need, 2*len(old))))
			}
			copy(b, old)
			copy(b[in:], p[n:n+want])
			nc.tail, nc.hw = b, nil
			if mark != nil {
				mark.Store(int32(need))
				nc.hw, mark = mark, nil
			}
		}
		n += want
	}
	nc.setTreeChunks(off>>chunkShift, set)
	return nc
}

// truncate returns the version of c with the given size: shorter drops the
// end, longer adds a hole of zeros.
func (c *content) truncate(size int64) *content {
	if size == 0 {
		return nil
	}
	if size == c.Size() {
		return c
	}
	if size > c.Size() {
		nc := c.resize(size)
		// The old tail's spare capacity now lies inside the file: it must
		// read as zeros, so it is never written in place again.
		nc.hw = nil
		return nc
	}
	last := (size - 1) >> chunkShift
	keep := int(size - last<<chunkShift) // bytes of the new tail kept
	tail := c.chunk(last)
	nc := &content{size: size, tail: tail[:min(keep, len(tail))], pins: c.pins}
	if last > 0 {
		nc.height = c.height
		nc.root = cut(c.root, int(c.height), last)
	}
	return nc
}

// cut returns a copy of tree n of height h keeping only chunks [0, keep).
func cut(n *inner, h int, keep int64) *inner {
	if n == nil || keep <= 0 {
		return nil
	}
	span := capacity(h - 1) // chunks under one slot
	if keep >= capacity(h) {
		return n
	}
	m := &inner{}
	full := int(keep / span)
	if h == 1 {
		copy(m.chunks[:full], n.chunks[:full])
		return m
	}
	copy(m.kids[:full], n.kids[:full])
	if rest := keep % span; rest > 0 {
		m.kids[full] = cut(n.kids[full], h-1, rest)
	}
	return m
}

// writeShared returns the version of c with p written at off, as writeAt
// does, but with the chunks p covers whole made of p's own bytes, not
// copied: p must never change, and its memory stays valid while pin is
// reachable, which the new version keeps. The rest of p is copied.
func (c *content) writeShared(p []byte, off int64, pin any) *content {
	end := off + int64(len(p))
	first := (off + chunkSize - 1) &^ (chunkSize - 1) // the whole chunks' bytes
	last := end &^ (chunkSize - 1)
	if first >= last {
		return c.writeAt(p, off)
	}
	nc := c
	if first > off {
		nc = nc.writeAt(p[:first-off], off)
	}
	nc = nc.resize(max(nc.Size(), last))
	whole := make([][]byte, 0, (last-first)>>chunkShift)
	for at := first; at < last; at += chunkSize {
		in := at - off
		b := p[in : in+chunkSize : in+chunkSize]
		if i := at >> chunkShift; nc.size > 0 && i == nc.last() {
			nc.tail, nc.hw = b, nil // full: it never grows in place
		} else {
			whole = append(whole, b)
		}
	}
	nc.setTreeChunks(first>>chunkShift, whole)
	if nc.pins == nil || !samePin(nc.pins.pin, pin) {
		nc.pins = &pinList{pin: pin, next: nc.pins} // older versions share the rest
	}
	if end > last {
		nc = nc.writeAt(p[last-off:], last)
	}
	return nc
}

// pinList is the pins a version of a file keeps, newest first: a list a
// new version extends at its head, so that a run of writes from pins that
// differ costs each write one node, not a copy of every pin before.
type pinList struct {
	pin  any
	next *pinList
}

// samePin reports whether a and b are the same pin, so that a run of
// writes from one mapping keeps it once. A pin == cannot compare (a
// slice, say) is the same when it is a slice of the same memory or the
// same map, which keeps the same allocation reachable; any other (a func,
// whose pointer is its code and not what it holds, a struct holding a
// slice) is never the same, rather than a panic.
func samePin(a, b any) bool {
	vb := reflect.ValueOf(b)
	if !vb.IsValid() || vb.Comparable() {
		return a == b
	}
	va := reflect.ValueOf(a)
	k := vb.Kind()
	return (k == reflect.Slice || k == reflect.Map) && va.IsValid() && va.Type() == vb.Type() &&
		va.UnsafePointer() == vb.UnsafePointer()
}

// seekExtent returns the first offset at or after off, which is below
// the size, that holds data (hole false) or starts a hole (hole true),
// as lseek(2)'s SEEK_DATA and SEEK_HOLE: a missing chunk is a hole, a
// present one data (zeros past a short chunk's end included), and the
// end of the file starts a hole; with no data from off on, it returns
// the size. It costs O(height) per subtree of missing chunks it passes,
// and a step per present chunk when looking for a hole.
func (c *content) seekExtent(off int64, hole bool) int64 {
	size, last := c.Size(), c.last()
	i := off >> chunkShift
	present := func(i int64) bool { return c.chunk(i) != nil }
	if hole {
		for ; i <= last && present(i); i++ {
		}
		if i > last {
			return size // (last+1)<<chunkShift may not fit an int64
		}
		return max(i<<chunkShift, off)
	}
	if present(i) {
		return off
	}
	j := int64(-1)
	if c.height > 0 {
		j = firstChunk(c.root, int(c.height), 0, i)
	}
	switch {
	case j >= 0 && j < last:
		return j << chunkShift
	case c.tail != nil:
		return last << chunkShift
	}
	return size
}

// firstChunk returns the index of the first chunk at or after i in the
// subtree n of height h whose first chunk is base, or -1; missing
// subtrees are passed over whole.
func firstChunk(n *inner, h int, base, i int64) int64 {
	if n == nil {
		return -1
	}
	span := capacity(h - 1)
	for slot := max(0, (i-base)/span); slot < fanout; slot++ {
		at := base + slot*span
		if h == 1 {
			if n.chunks[slot] != nil {
				return at
			}
		} else if j := firstChunk(n.kids[slot], h-1, at, max(i, at)); j >= 0 {
			return j
		}
	}
	return -1
}
