package packreader

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/x86filter"
)

// Version 3 stores contents as one raw stream cut into frames (FORMAT.md,
// "Frames"). A file record gives its content's stream position and the
// frame holding its first byte; a read walks the frames it touches, in
// order, and takes from each the bytes it needs:
//
//   - a hole gives zeros, and reads nothing;
//   - a raw frame is checked against its CRC-32C the first time any read
//     touches it (one bit per frame, as index blocks are), then read in
//     place: from the mapping without a copy, so that a mapped
//     uncompressed pack reads as a version-2 one does;
//   - a zstd frame is checked and decompressed into a buffer of its raw
//     size, which the frame table records and the decoder may not exceed,
//     undone from its filter if it names one (x86filter, in place), and
//     kept in a bounded cache shared by the Reader's readers, whose
//     buffers go to framePools when it drops them.
//
// So the first byte of a large file costs one frame, never the whole
// content, and Verify still checks every frame.

// Option configures [Open] and [OpenReaderAt].
type Option func(*options)

type options struct {
	cacheSize int64
}

// DefaultCacheSize is the default bound of a Reader's cache of
// decompressed frames: 64 frames of 1 MiB, allocated as frames are
// read. With 8 MiB, random reads of 20,000 small files (40 MB of
// frames) decompressed a frame for most reads, 60 times slower than
// with all of them cached (bench/packsize).
const DefaultCacheSize = 64 << 20

// WithCacheSize bounds the bytes of decompressed frames a Reader of a
// compressed pack keeps (DefaultCacheSize without it). A bound below one
// frame (1 MiB in packs written now, 128 KiB before) keeps none: every
// read decompresses the frames it touches, which makes small reads of a
// compressed pack many times slower.
func WithCacheSize(n int64) Option { return func(o *options) { o.cacheSize = n } }

func makeOptions(opts []Option) options {
	o := options{cacheSize: DefaultCacheSize}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// decoder is the zstd decoder of every Reader, made at the first
// compressed frame read: DecodeAll may be called from any number of
// goroutines, and making one per Reader cost more than a first read.
// Frames are decoded into a buffer of their recorded raw size and may not
// grow it (WithDecodeAllCapLimit): a crafted frame header cannot make the
// decoder allocate what it claims.
var decoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(packformat.MaxFrame),
		zstd.WithDecoderMaxWindow(packformat.MaxFrame),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderLowmem(true))
})

func (r *Reader) startFrames() {
	if r.version == packformat.Version3 {
		r.cache = newFrameCache(r.opts.cacheSize)
		r.startPlaced()
	}
}

func (r *Reader) closeFrames() {
	if r.cache != nil {
		r.cache.clear()
	}
}

// frame decodes and checks frame entry i < FrameCount-1 and returns it
// with its raw size. The caller holds r.mu.
func (r *Reader) frame(i uint64) (packformat.Frame, uint64, error) {
	n := r.footer.FrameCount
	if i+1 >= n {
		return packformat.Frame{}, 0, corrupt("frame %d out of range", i)
	}
	if err := r.checkFrameEntries(i, i+2); err != nil {
		return packformat.Frame{}, 0, err
	}
	f := packformat.DecodeFrame(r.frames[i*packformat.FrameEntrySize:])
	next := packformat.DecodeFrame(r.frames[(i+1)*packformat.FrameEntrySize:])
	if i+2 == n && (next.Pos != r.footer.Stream || next.Off != 0 || next.Stored != 0 || next.Filter != 0 || next.CRC != 0) {
		return f, 0, corrupt("frame table: bad sentinel")
	}
	if next.Pos <= f.Pos {
		return f, 0, corrupt("frame %d: position %d not after %d", i+1, next.Pos, f.Pos)
	}
	raw := next.Pos - f.Pos
	switch {
	case f.Filter != packformat.FilterNone && (!r.filters || f.Filter != packformat.FilterX86 || f.Stored == 0 || uint64(f.Stored) >= raw):
		return f, 0, corrupt("frame %d: bad filter %d", i, f.Filter)
	case f.Stored == 0:
		if f.Off != 0 || f.CRC != 0 {
			return f, 0, corrupt("frame %d: hole with data", i)
		}
	case raw > packformat.MaxFrame || uint64(f.Stored) > raw || !r.zstd && uint64(f.Stored) != raw:
		return f, 0, corrupt("frame %d: %d bytes stored for %d", i, f.Stored, raw)
	case f.Off < packformat.HeaderSize || f.Off%packformat.DataAlign != 0 || f.Off > r.dataEnd || uint64(f.Stored) > r.dataEnd-f.Off:
		return f, 0, corrupt("frame %d: bad data range %d+%d", i, f.Off, f.Stored)
	}
	return f, raw, nil
}

// checkFrameEntries checks the frame-table blocks of entries lo to hi-1.
func (r *Reader) checkFrameEntries(lo, hi uint64) error {
	const per = packformat.FrameEntrySize
	for b := lo * per / packformat.BlockSize; b <= (hi*per-1)/packformat.BlockSize; b++ {
		if err := r.checkBlock(r.frameBase + b); err != nil {
			return err
		}
	}
	return nil
}

// framePos returns the stream position of frame i <= FrameCount-1, after
// checking its block; the caller holds r.mu.
func (r *Reader) framePos(i uint64) (uint64, error) {
	if err := r.checkFrameEntries(i, i+1); err != nil {
		return 0, err
	}
	return packformat.DecodeFrame(r.frames[i*packformat.FrameEntrySize:]).Pos, nil
}

// checkSpan checks the frames that hold rc's content, their entries and
// the checksums of their stored bytes, without decompressing them: what
// can be known of the content before a copy of it is allocated, so that a
// damaged one costs no copy. Through an io.ReaderAt it reads the stored
// bytes of a frame not yet checked twice, once here and once to decompress
// them, as format 2's ReadFile reads a content; it does so only for a
// content larger than a frame, since a copy of at most a frame costs what
// a frame buffer costs a reader through Open. The caller holds r.mu.
func (r *Reader) checkSpan(rc packformat.Record) error {
	sums := r.mapped != nil || rc.Size > packformat.MaxFrame
	i, err := r.findFrame(rc, rc.Off)
	if err != nil {
		return err
	}
	for pos, end := rc.Off, rc.Off+rc.Size; pos < end; i++ {
		f, raw, err := r.frame(i)
		if err != nil {
			return err
		}
		if pos < f.Pos || pos-f.Pos >= raw {
			return corrupt("frame %d does not hold stream byte %d", i, pos)
		}
		pos = f.Pos + raw
		if f.Stored == 0 || !sums || r.frameChecked(i) {
			continue
		}
		sum, err := r.rangeCRC(f.Off, uint64(f.Stored))
		if err != nil {
			return err
		}
		if sum != f.CRC {
			return corrupt("frame %d: checksum mismatch", i)
		}
		r.markFrame(i)
	}
	return nil
}

// frameAt is a decoded frame entry: what a file remembers of the frame
// it read last, so that reads in the same frame decode nothing.
type frameAt struct {
	i     uint64
	f     packformat.Frame
	raw   uint64
	valid bool
}

func (a *frameAt) holds(pos uint64) bool { return a.valid && pos >= a.f.Pos && pos-a.f.Pos < a.raw }

// findFrame returns the frame holding stream position pos of the content
// of rc, whose first byte is in frame rc.CRC: that frame if pos is in it,
// the frame a content cut in frames of FrameSize would have it in, else
// the one a binary search over the frames after the first finds.
func (r *Reader) findFrame(rc packformat.Record, pos uint64) (uint64, error) {
	at, err := r.findFrameAt(rc, pos)
	return at.i, err
}

// findFrameAt is findFrame returning the frame as a frameAt, with its
// entry (valid) when it is the content's first frame, which findFrame
// reads anyway: a read of a small file then decodes its entry once.
func (r *Reader) findFrameAt(rc packformat.Record, pos uint64) (frameAt, error) {
	first := uint64(rc.CRC)
	f, raw, err := r.frame(first)
	if err != nil {
		return frameAt{}, err
	}
	if rc.Off < f.Pos || rc.Off-f.Pos >= raw {
		return frameAt{}, corrupt("content at %d is not in its frame %d", rc.Off, first)
	}
	if pos-f.Pos < raw {
		return frameAt{i: first, f: f, raw: raw, valid: true}, nil
	}
	size := uint64(packformat.FrameSize)
	if r.zstd {
		size = packformat.ZstdFrameSize
	}
	if k := first + (pos-f.Pos)/size; k+1 < r.footer.FrameCount {
		if p, err := r.framePos(k); err == nil && p <= pos {
			if q, err := r.framePos(k + 1); err == nil && pos < q {
				return frameAt{i: k}, nil
			}
		}
	}
	// The last frame whose position is <= pos; frame gives it its check.
	lo, hi := first+1, r.footer.FrameCount-1
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		p, err := r.framePos(m)
		if err != nil {
			return frameAt{}, err
		}
		if p <= pos {
			lo = m
		} else {
			hi = m
		}
	}
	return frameAt{i: lo}, nil
}

// nextExtent returns the first offset of rc's content from off (which
// the caller has bounded by rc.Size) that is in a hole (hole) or in data
// (!hole), or rc.Size if none is. The caller holds r.mu.
func (r *Reader) nextExtent(rc packformat.Record, off int64, hole bool) (int64, error) {
	pos := rc.Off + uint64(off)
	end := rc.Off + rc.Size
	i, err := r.findFrame(rc, pos)
	if err != nil {
		return 0, err
	}
	for pos < end {
		f, raw, err := r.frame(i)
		if err != nil {
			return 0, err
		}
		if pos < f.Pos || pos-f.Pos >= raw {
			return 0, corrupt("frame %d does not hold stream byte %d", i, pos)
		}
		if (f.Stored == 0) == hole {
			return int64(pos - rc.Off), nil
		}
		pos = f.Pos + raw
		i++
	}
	return int64(rc.Size), nil
}

// readContent fills p with the bytes of rc's content from offset off,
// which the caller has bounded by rc.Size. The caller holds r.mu.
func (r *Reader) readContent(p []byte, rc packformat.Record, off uint64) error {
	_, err := r.readContentAt(p, rc, off, nil)
	return err
}

// readContentAt is readContent starting from at, the frame a read of the
// same content used last (a file's), which it updates; at may be nil.
// On an error it returns how many bytes of p it filled before the frame
// that failed.
func (r *Reader) readContentAt(p []byte, rc packformat.Record, off uint64, at *frameAt) (done int, err error) {
	if len(p) == 0 {
		return 0, nil
	}
	want := len(p)
	defer func() {
		if err != nil {
			done = want - len(p)
		}
	}()
	pos := rc.Off + off
	var cur frameAt
	if at != nil && at.holds(pos) {
		cur = *at
	} else if cur, err = r.findFrameAt(rc, pos); err != nil {
		return 0, err
	}
	for len(p) > 0 {
		if !cur.valid {
			f, raw, err := r.frame(cur.i)
			if err != nil {
				return 0, err
			}
			cur.f, cur.raw, cur.valid = f, raw, true
		}
		i, f, raw := cur.i, cur.f, cur.raw
		if pos < f.Pos || pos-f.Pos >= raw {
			return 0, corrupt("frame %d does not hold stream byte %d", i, pos)
		}
		in := pos - f.Pos
		n := min(uint64(len(p)), raw-in)
		switch {
		case f.Stored == 0:
			clear(p[:n])
		case r.mapped == nil && uint64(f.Stored) == raw && (r.frameChecked(i) || n == raw):
			// A raw frame through an io.ReaderAt: once checked, read
			// what is asked for in place, as format 2 reads a checked
			// content; a read of the whole frame checks it on the way.
			if err := readFull(r.ra, p[:n], int64(f.Off+in)); err != nil {
				return 0, err
			}
			if !r.frameChecked(i) {
				if crc32.Checksum(p[:n], packformat.Castagnoli) != f.CRC {
					return 0, corrupt("frame %d: checksum mismatch", i)
				}
				r.markFrame(i)
			}
		default:
			b, e, err := r.frameBytes(i, f, raw)
			if err != nil {
				return 0, err
			}
			copy(p[:n], b[in:])
			if e != nil {
				e.release()
			}
		}
		p = p[n:]
		pos += n
		if at != nil {
			*at = cur
		}
		cur = frameAt{i: i + 1}
	}
	return want, nil
}

// frameBytes returns the raw bytes of frame i (f, of raw size raw), which
// holds data, and the cache entry to release once done with them (nil
// for a raw frame of a mapped pack, read in place). The caller holds r.mu.
func (r *Reader) frameBytes(i uint64, f packformat.Frame, raw uint64) ([]byte, *cacheEntry, error) {
	if r.mapped != nil && uint64(f.Stored) == raw {
		b := r.mapped[f.Off : f.Off+raw : f.Off+raw]
		if !r.frameChecked(i) {
			if crc32.Checksum(b, packformat.Castagnoli) != f.CRC {
				return nil, nil, corrupt("frame %d: checksum mismatch", i)
			}
			r.markFrame(i)
		}
		return b, nil, nil
	}
	// The frame is decoded once, by the read that claims it; reads that
	// come to it meanwhile (or a read ahead's, fetch) wait for it.
	e, mine := r.cache.claim(uint32(i), int(raw), false)
	if mine {
		if err := r.decodeClaimed(e, i, f, raw); err != nil {
			e.release()
			return nil, nil, err
		}
		return e.b, e, nil
	}
	if e.wait() {
		return e.b, e, nil
	}
	// Whoever claimed it failed: decode it here, which gives this read
	// the error if there is one.
	e.release()
	buf := r.cache.buffer(int(raw))
	b, err := r.loadFrame(i, f, raw, buf)
	if err != nil {
		r.cache.recycle(buf)
		return nil, nil, err
	}
	if len(b) > 0 && cap(buf) >= len(b) && &buf[:1][0] == &b[0] {
		b = buf[:len(b)] // the buffer's whole capacity, for its reuse
	}
	e = r.cache.put(uint32(i), b)
	return e.b, e, nil
}

// decodeClaimed loads frame i (f, of raw size raw, which holds zstd data)
// into e, which the caller claimed, and finishes e: filled, or failed
// with the error (also when loadFrame panics on a fault in the mapping,
// so that no read waits on e for ever). The caller holds r.mu and its
// reference to e.
func (r *Reader) decodeClaimed(e *cacheEntry, i uint64, f packformat.Frame, raw uint64) (err error) {
	done := false
	defer func() {
		if !done {
			r.cache.fail(e)
		}
	}()
	buf := e.b
	b, err := r.loadFrame(i, f, raw, buf)
	if err != nil {
		return err
	}
	if len(b) > 0 && cap(buf) >= len(b) && &buf[:1][0] == &b[0] {
		b = buf[:len(b)] // the buffer's whole capacity, for its reuse
	}
	r.cache.finish(e, b)
	done = true
	return nil
}

// loadFrame reads frame i's stored bytes, checks them and decompresses
// them into buf (capacity raw or more). The caller holds r.mu.
func (r *Reader) loadFrame(i uint64, f packformat.Frame, raw uint64, buf []byte) ([]byte, error) {
	var stored []byte
	if r.mapped != nil {
		stored = r.mapped[f.Off : f.Off+uint64(f.Stored)]
	} else if uint64(f.Stored) == raw {
		stored = buf[:raw]
		if err := readFull(r.ra, stored, int64(f.Off)); err != nil {
			return nil, err
		}
	} else {
		sb := getBuf()
		defer putBuf(sb)
		if f.Stored > uint32(len(sb)) {
			tmp := make([]byte, f.Stored) // f.Stored < raw <= MaxFrame
			stored = tmp
		} else {
			stored = sb[:f.Stored]
		}
		if err := readFull(r.ra, stored, int64(f.Off)); err != nil {
			return nil, err
		}
	}
	if crc32.Checksum(stored, packformat.Castagnoli) != f.CRC {
		return nil, corrupt("frame %d: checksum mismatch", i)
	}
	r.markFrame(i)
	if uint64(f.Stored) == raw {
		if r.mapped != nil {
			return append(buf[:0], stored...), nil
		}
		return stored, nil
	}
	d, err := decoder()
	if err != nil {
		return nil, corrupt("frame %d: %v", i, err)
	}
	out, err := d.DecodeAll(stored, buf[:0:min(uint64(cap(buf)), raw+decodeSlack)])
	if err != nil || uint64(len(out)) != raw {
		return nil, corrupt("frame %d: bad zstd frame (%d of %d bytes): %v", i, len(out), raw, err)
	}
	if f.Filter == packformat.FilterX86 {
		x86filter.Decode(out)
	}
	return out, nil
}

func (r *Reader) frameChecked(i uint64) bool {
	g := r.frameOK.Load()
	return g != nil && (*g)[i/64].Load()&(1<<(i%64)) != 0
}

func (r *Reader) markFrame(i uint64) {
	g := r.frameOK.Load()
	if g == nil {
		fresh := make([]atomic.Uint64, (r.footer.FrameCount+63)/64)
		if r.frameOK.CompareAndSwap(nil, &fresh) {
			g = &fresh
		} else {
			g = r.frameOK.Load()
		}
	}
	(*g)[i/64].Or(1 << (i % 64))
}

// contiguous returns the mapped bytes of rc's content (record i's) when
// every frame of it is raw and the frames follow one another in the file
// (an uncompressed pack, no holes), after checking them, and remembers
// where they are for the record's next read (placedAt); ok is false
// otherwise. The caller holds r.mu.
func (r *Reader) contiguous(rec uint64, rc packformat.Record) (_ []byte, ok bool, err error) {
	if r.mapped == nil || rc.Size == 0 {
		return nil, false, nil
	}
	if start, ok := r.placedAt(rec, rc); ok {
		return r.mapped[start : start+rc.Size : start+rc.Size], true, nil
	}
	i := uint64(rc.CRC)
	f, raw, err := r.checkedFrame(i)
	if err != nil {
		return nil, false, err
	}
	if rc.Off < f.Pos || rc.Off-f.Pos >= raw {
		return nil, false, corrupt("content at %d is not in its frame %d", rc.Off, i)
	}
	start := f.Off + (rc.Off - f.Pos)
	end := rc.Off + rc.Size // stream position of the content's end
	for {
		if uint64(f.Stored) != raw {
			return nil, false, nil
		}
		if !r.frameChecked(i) {
			if crc32.Checksum(r.mapped[f.Off:f.Off+raw], packformat.Castagnoli) != f.CRC {
				return nil, false, corrupt("frame %d: checksum mismatch", i)
			}
			r.markFrame(i)
		}
		if f.Pos+raw >= end {
			break
		}
		i++
		g, graw, err := r.checkedFrame(i)
		if err != nil {
			return nil, false, err
		}
		if g.Off != f.Off+raw {
			return nil, false, nil
		}
		f, raw = g, graw
	}
	b := r.mapped[start : start+rc.Size : start+rc.Size]
	r.place(rec, rc, start)
	return b, true, nil
}

// checkedFrame is frame for a mapped pack, without frame's checks once
// the frame's checksum matched: frame(i) passed them before it was
// checked, on the same bytes. Small files read whole from an uncompressed
// pack spent a tenth of their time in those checks.
func (r *Reader) checkedFrame(i uint64) (packformat.Frame, uint64, error) {
	if !r.frameChecked(i) {
		return r.frame(i)
	}
	b := r.frames[i*packformat.FrameEntrySize : (i+2)*packformat.FrameEntrySize]
	f := packformat.DecodeFrame(b)
	return f, binary.LittleEndian.Uint64(b[packformat.FrameEntrySize:]) - f.Pos, nil
}

// decodeSlack is the room a frame buffer has past its frame's raw size.
// With 16 bytes to spare (zstd's compressedBlockOverAlloc), the decoder
// copies literals and matches 16 bytes at a time, which may write up to
// 15 bytes past their end; without it, it takes byte-exact copies, which
// measured 5% more instructions on the frames of bench/packsize's 64 MiB
// file. The decoder may fill the slack (WithDecodeAllCapLimit bounds it
// by the capacity it is given), but a frame that decodes to more than its
// raw size is corrupt all the same.
const decodeSlack = 16

// framePools keep, by power of two, the frame buffers Readers dropped (at
// Close, or past their cache's spares), for the next Reader's frames:
// memory the process touched already, which needs neither the clearing
// of a new allocation nor, where the heap takes new memory from the
// system, a page fault per 4 KiB on first touch (about 2.8 ms per MiB on
// the test machine, more than decompressing the frame takes). Beside the
// decoder's slack, their own gain was too small to tell apart from the
// noise of a loaded machine (bench/packsize, SeqRead cold). The garbage
// collector empties them as it does any sync.Pool.
var framePools [bits.UintSize]sync.Pool

// bufferSize returns the size class of a frame of raw size n: n rounded
// up to a power of two (at least 4 KiB), so that a buffer fits the
// frames of about its size that come after it.
func bufferSize(n int) int { return max(4<<10, 1<<bits.Len(uint(n-1))) }

// poolBuffer returns a buffer of size class size from framePools, or nil.
func poolBuffer(size int) []byte {
	if p, ok := framePools[bits.Len(uint(size))].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

// dropBuffer gives b to framePools if it is a buffer of one of their
// classes (frameCache.buffer's); other buffers are left to the garbage
// collector.
func dropBuffer(b []byte) {
	size := cap(b) - decodeSlack
	if size < 4<<10 || size&(size-1) != 0 {
		return
	}
	b = b[:0]
	framePools[bits.Len(uint(size))].Put(&b)
}

// cost is what b counts for against a cache's bound: its capacity
// without the decoder's slack.
func cost(b []byte) int64 { return int64(max(len(b), cap(b)-decodeSlack)) }

// frameCache keeps decompressed frames, up to a bound in bytes, evicting
// by CLOCK (a frame read since the hand last passed gets a second
// chance). Buffers of evicted frames are reused for the next ones, so a
// walk of a whole compressed pack allocates about the cache's bound, not
// the pack's raw size; those it drops go to framePools. Entries are reference-counted: a buffer is reused
// only once no read is copying from it.
type frameCache struct {
	mu    sync.Mutex
	max   int64
	used  int64
	m     map[uint32]*cacheEntry
	ring  []*cacheEntry
	hand  int
	spare [][]byte
}

type cacheEntry struct {
	c    *frameCache
	i    uint32
	b    []byte
	refs int32 // reads copying from b, plus one while cached
	used atomic.Bool

	// An entry claimed for decoding is in the cache before its bytes
	// are: ready is closed once they are in b (done set before), or
	// once the decode failed (failed set before, and the entry out of
	// the cache). Entries cached ready-made have done set and a nil
	// ready.
	ready  chan struct{}
	done   atomic.Bool
	failed bool
}

// wait waits until e's bytes are in b, and reports whether they are
// (false: the decode failed). The caller holds a reference to e.
func (e *cacheEntry) wait() bool {
	if e.done.Load() {
		return true
	}
	<-e.ready
	return !e.failed
}

func newFrameCache(max int64) *frameCache {
	return &frameCache{max: max, m: map[uint32]*cacheEntry{}}
}

func (c *frameCache) get(i uint32) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[i]
	if e == nil {
		return nil
	}
	e.refs++
	e.used.Store(true)
	return e
}

// claim returns frame i's entry, referenced once for the caller, and
// whether the caller claimed it: then the caller must decode the frame
// into the entry's buffer (of capacity n+decodeSlack or more, length 0)
// and finish or fail it, and other reads of frame i wait for that. An
// entry that does not fit the bound is not cached and no other read sees
// it. used gives a new entry a second chance before the CLOCK hand
// evicts it (a frame read ahead of its reader).
func (c *frameCache) claim(i uint32, n int, used bool) (*cacheEntry, bool) {
	if e := c.get(i); e != nil {
		return e, false
	}
	buf := c.buffer(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[i]; e != nil {
		c.spareLocked(buf)
		e.refs++
		e.used.Store(true)
		return e, false
	}
	e := &cacheEntry{c: c, i: i, b: buf, refs: 1, ready: make(chan struct{})}
	size := cost(buf)
	if size > c.max {
		return e, true
	}
	for c.used+size > c.max && len(c.ring) > 0 {
		c.evictLocked()
	}
	e.used.Store(used)
	e.refs++
	c.m[i] = e
	c.ring = append(c.ring, e)
	c.used += size
	return e, true
}

// finish publishes b, the bytes decoded into the buffer of e (claimed),
// to the reads waiting for them.
func (c *frameCache) finish(e *cacheEntry, b []byte) {
	c.mu.Lock()
	if c.m[e.i] == e {
		c.used += cost(b) - cost(e.b)
	}
	e.b = b
	e.done.Store(true)
	c.mu.Unlock()
	close(e.ready)
}

// fail takes e (claimed, not finished) out of the cache and wakes the
// reads waiting on it, which decode the frame themselves. The caller
// keeps its reference.
func (c *frameCache) fail(e *cacheEntry) {
	c.mu.Lock()
	e.failed = true
	if c.m[e.i] == e {
		delete(c.m, e.i)
		for k, x := range c.ring {
			if x == e {
				last := len(c.ring) - 1
				c.ring[k] = c.ring[last]
				c.ring[last] = nil
				c.ring = c.ring[:last]
				break
			}
		}
		c.used -= cost(e.b)
		c.unrefLocked(e)
	}
	c.mu.Unlock()
	close(e.ready)
}

// buffer returns a buffer of capacity n+decodeSlack or more.
func (c *frameCache) buffer(n int) []byte {
	c.mu.Lock()
	for k := len(c.spare) - 1; k >= 0; k-- {
		if b := c.spare[k]; cap(b) >= n+decodeSlack {
			c.spare[k] = c.spare[len(c.spare)-1]
			c.spare = c.spare[:len(c.spare)-1]
			c.mu.Unlock()
			return b[:0]
		}
	}
	c.mu.Unlock()
	size := bufferSize(n)
	if b := poolBuffer(size); b != nil {
		return b
	}
	return make([]byte, 0, size+decodeSlack)
}

// spares is how many free buffers the cache keeps.
func (c *frameCache) spares() int { return int(max(4, c.max/packformat.FrameSize/4)) }

func (c *frameCache) recycle(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spareLocked(b)
}

// put caches b as frame i (unless another read did first, or the bound
// keeps nothing) and returns its entry, referenced once for the caller.
func (c *frameCache) put(i uint32, b []byte) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[i]; e != nil {
		e.refs++
		c.spareLocked(b)
		return e
	}
	e := &cacheEntry{c: c, i: i, b: b, refs: 1}
	e.done.Store(true)
	size := cost(b)
	if size > c.max {
		return e // not cached: released to the spares when done
	}
	for c.used+size > c.max && len(c.ring) > 0 {
		c.evictLocked()
	}
	e.refs++
	c.m[i] = e
	c.ring = append(c.ring, e)
	c.used += size
	return e
}

// evictLocked drops one frame, by CLOCK.
func (c *frameCache) evictLocked() {
	for {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		e := c.ring[c.hand]
		if e.used.Swap(false) {
			c.hand++
			continue
		}
		last := len(c.ring) - 1
		c.ring[c.hand] = c.ring[last]
		c.ring[last] = nil
		c.ring = c.ring[:last]
		delete(c.m, e.i)
		c.used -= cost(e.b)
		c.unrefLocked(e)
		return
	}
}

func (c *frameCache) unrefLocked(e *cacheEntry) {
	if e.refs--; e.refs == 0 {
		c.spareLocked(e.b)
		e.b = nil
	}
}

func (c *frameCache) spareLocked(b []byte) {
	if len(c.spare) < c.spares() {
		c.spare = append(c.spare, b)
	} else {
		dropBuffer(b)
	}
}

func (e *cacheEntry) release() {
	e.c.mu.Lock()
	e.c.unrefLocked(e)
	e.c.mu.Unlock()
}

// clear drops every frame, giving to framePools the buffers no read is
// copying from (a read that is will give its own to the cache's spares
// once done) and the spares.
func (c *frameCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.ring {
		if e.refs--; e.refs == 0 {
			dropBuffer(e.b)
			e.b = nil
		}
	}
	for _, b := range c.spare {
		dropBuffer(b)
	}
	c.m = map[uint32]*cacheEntry{}
	c.ring, c.spare, c.used = nil, nil, 0
}
