package mem

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
// version may append in place only when its own length equals the mark.
// Readers only read below their version's size, and the writer only writes
// at or past the mark, so the two never touch the same bytes.

const (
	chunkShift = 16
	chunkSize  = 1 << chunkShift
	fanShift   = 6
	fanout     = 1 << fanShift
)

// content is one immutable version of a file's bytes. The nil *content is
// the empty file.
type content struct {
	size   int64
	height int    // 0: the file is the single chunk small
	small  []byte // height 0: the data, len(small) <= size
	root   *inner // height >= 1: chunks under a tree of this height
	hw     *int   // high-water mark of the last chunk's backing array, or nil
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
		return &content{size: int64(len(b)), small: b}
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

// chunk returns chunk i, which may be short or nil.
func (c *content) chunk(i int64) []byte {
	if c.height == 0 {
		if i == 0 {
			return c.small
		}
		return nil
	}
	n := c.root
	for h := c.height; h > 1; h-- {
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

// withChunk returns a copy of c's tree with chunk i replaced, growing the
// tree as needed; c itself is unchanged. size is the new version's size.
func (c *content) withChunk(i int64, b []byte, size int64, hw *int) *content {
	nc := &content{size: size, height: c.height, small: c.small, root: c.root, hw: hw}
	if nc.height == 0 {
		if i == 0 {
			nc.small = b
			return nc
		}
		// Move the single chunk into a tree of height 1.
		nc.height = 1
		nc.root = &inner{}
		nc.root.chunks[0] = c.small
		nc.small = nil
	}
	for i >= capacity(nc.height) {
		r := &inner{}
		r.kids[0] = nc.root
		nc.root = r
		nc.height++
	}
	nc.root = setChunk(nc.root, nc.height, i, b)
	return nc
}

func setChunk(n *inner, h int, i int64, b []byte) *inner {
	m := &inner{}
	if n != nil {
		*m = *n
	}
	slot := (i >> (fanShift * (h - 1))) & (fanout - 1)
	if h == 1 {
		m.chunks[slot] = b
	} else {
		m.kids[slot] = setChunk(m.kids[slot], h-1, i, b)
	}
	return m
}

// writeAt returns the version of c with p written at off.
func (c *content) writeAt(p []byte, off int64) *content {
	if len(p) == 0 {
		return c
	}
	if c == nil {
		c = &content{}
	}
	end := off + int64(len(p))
	size := max(c.size, end)
	last := (size - 1) >> chunkShift // the chunk that may grow in place
	nc := c
	for n := 0; n < len(p); {
		pos := off + int64(n)
		i := pos >> chunkShift
		in := int(pos & (chunkSize - 1))
		want := min(len(p)-n, chunkSize-in)
		old := c.chunk(i)
		need := max(len(old), in+want)
		hw := nc.hw
		var b []byte
		switch {
		case i == last && c.hw != nil && *c.hw == len(old) && in >= len(old) && need <= cap(old) && isTail(c, i):
			// Append into spare capacity nobody else has written.
			b = old[:need]
			copy(b[in:], p[n:n+want])
			*c.hw = need
		default:
			capac := need
			if i == last {
				// Double the tail so that a run of small appends costs
				// amortized O(1) per byte.
				capac = min(chunkSize, max(need, 2*len(old)))
			}
			b = make([]byte, need, capac)
			copy(b, old)
			copy(b[in:], p[n:n+want])
			if i == last {
				hw = new(int)
				*hw = need
			}
		}
		nc = nc.withChunk(i, b, size, hw)
		n += want
	}
	if last != (c.size-1)>>chunkShift && c.size > 0 && nc.hw == c.hw {
		// The tail moved to a new chunk: the old tail's mark no longer applies.
		nc.hw = nil
	}
	return nc
}

// isTail reports whether chunk i is the last chunk of c, the one c.hw
// describes.
func isTail(c *content, i int64) bool {
	return c.size > 0 && i == (c.size-1)>>chunkShift
}

// truncate returns the version of c with the given size: shorter drops the
// end, longer adds a hole of zeros.
func (c *content) truncate(size int64) *content {
	if size == 0 {
		return nil
	}
	if c == nil {
		c = &content{}
	}
	if size == c.size {
		return c
	}
	if size > c.size {
		// Holes read as zeros; only the size changes. The old tail's spare
		// capacity now lies inside the file, so it must not be written in
		// place again.
		nc := *c
		nc.size = size
		nc.hw = nil
		return &nc
	}
	last := (size - 1) >> chunkShift
	keep := int(size - last<<chunkShift) // bytes of the last chunk kept
	if c.height == 0 {
		return &content{size: size, small: c.small[:min(keep, len(c.small))]}
	}
	nc := &content{size: size, height: c.height, root: cut(c.root, c.height, last+1)}
	if tail := nc.chunk(last); len(tail) > keep {
		nc = nc.withChunk(last, tail[:keep], size, nil)
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
