package packreader

import (
	"sync/atomic"

	"github.com/packfs/packfs/internal/packformat"
)

// A format-3 record names its content by stream position and first
// frame, not by file offset: reading it from the mapping takes the
// frame's entry (and the next one's position, for its size) from the
// frame table. Format 2's records give the file offset itself. For a
// random small-file ReadFile of a warm pack that cost one or two cache
// lines of the frame table per read beyond format 2's, often from memory
// on a loaded machine.
//
// So once contiguous has found a record's content whole in checked raw
// frames that follow one another in the mapping, the Reader remembers
// where: placed holds, per record, the content's file offset less its
// stream position (format 2 keeps one bit per record, good). A ReadFile
// of that record later reads one word of placed and no frame entry.
// Nothing is remembered that contiguous did not check: every byte read
// through placed lies in a frame whose CRC-32C matched.
//
// placed is cut in chunks of placedChunk records, allocated by the
// first content remembered in each (4 KiB), so that the first read of a
// pack of a million entries allocates 4 KiB and not 4 MB; the chunk
// table itself, 8 bytes per placedChunk records, is allocated at Open.
// A word is 0 until set, else the difference plus placedBias: packs whose
// padding and holes put a content more than 2 GiB from its stream
// position (a huge sparse file before it) read it as before.

const (
	placedChunk = 1024
	placedBias  = 1 << 31
)

type placedWords [placedChunk]atomic.Uint32

// startPlaced allocates the chunk table of a mapped format-3 pack.
func (r *Reader) startPlaced() {
	if r.mapped != nil && r.version == packformat.Version3 {
		r.placed = make([]atomic.Pointer[placedWords], (r.count+placedChunk-1)/placedChunk)
	}
}

// placedAt returns the file offset of record i's content (rc's) if
// contiguous checked it whole before. The caller holds r.mu, and i is
// below r.count (a record decoded).
func (r *Reader) placedAt(i uint64, rc packformat.Record) (uint64, bool) {
	if i/placedChunk >= uint64(len(r.placed)) {
		return 0, false
	}
	c := r.placed[i/placedChunk].Load()
	if c == nil {
		return 0, false
	}
	v := c[i%placedChunk].Load()
	if v == 0 {
		return 0, false
	}
	return rc.Off + uint64(int64(v)-placedBias), true
}

// place remembers that record i's content (rc's), checked whole by
// contiguous, starts at file offset start.
func (r *Reader) place(i uint64, rc packformat.Record, start uint64) {
	if i/placedChunk >= uint64(len(r.placed)) {
		return
	}
	d := int64(start - rc.Off)
	if d <= -placedBias || d >= placedBias {
		return
	}
	p := &r.placed[i/placedChunk]
	c := p.Load()
	if c == nil {
		fresh := new(placedWords)
		if !p.CompareAndSwap(nil, fresh) {
			fresh = p.Load()
		}
		c = fresh
	}
	c[i%placedChunk].Store(uint32(d + placedBias))
}
