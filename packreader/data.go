package packreader

import (
	"hash/crc32"
	"sync"
	"sync/atomic"

	"github.com/packfs/packfs/internal/packformat"
)

// readData fills p from file offset off, which rec has checked lies in the
// data region. The caller holds r.mu.
func (r *Reader) readData(p []byte, off uint64) error {
	if r.mapped != nil {
		copy(p, r.mapped[off:])
		return nil
	}
	return readFull(r.ra, p, int64(off))
}

// contentCRC computes the CRC-32C of rc's content. The caller holds r.mu.
func (r *Reader) contentCRC(rc packformat.Record) (uint32, error) {
	return r.rangeCRC(rc.Off, rc.Size)
}

// rangeCRC computes the CRC-32C of the size bytes of the pack at off,
// which the caller has checked lie in it. The caller holds r.mu.
func (r *Reader) rangeCRC(off, size uint64) (uint32, error) {
	if r.mapped != nil {
		return crc32.Checksum(r.mapped[off:off+size], packformat.Castagnoli), nil
	}
	buf := getBuf()
	defer putBuf(buf)
	crc := uint32(0)
	for left := size; left > 0; {
		n := min(left, uint64(len(buf)))
		if err := readFull(r.ra, buf[:n], int64(off)); err != nil {
			return 0, err
		}
		crc = crc32.Update(crc, packformat.Castagnoli, buf[:n])
		off += n
		left -= n
	}
	return crc, nil
}

// bufPool holds the buffers that checks read contents through an
// io.ReaderAt with. A buffer handed to an io.ReaderAt escapes to the
// heap: one per check would allocate 64 KiB for every first read of a
// file, however small, and a walk of a pack of small files many times the
// pack's size.
var bufPool = sync.Pool{New: func() any { return new([64 << 10]byte) }}

func getBuf() *[64 << 10]byte  { return bufPool.Get().(*[64 << 10]byte) }
func putBuf(b *[64 << 10]byte) { bufPool.Put(b) }

// Contents are checked against their CRC-32C once per Reader, not once
// per read or per open file: entries that share a content (identical files
// are stored once) share its check, so that reading a thousand names of
// one large content costs one pass over it, and a damaged content shared
// by many entries fails their reads before ReadFile allocates a copy.
// r.good has bit i set once record i's content matched (the fast path,
// one atomic load); r.contents maps a content's span (offset, size) to
// the CRC-32C its bytes have, which each record's is compared with: a
// crafted pack whose records give one span different checksums costs one
// pass too. I/O errors from an io.ReaderAt are not kept.
//
// The distinct contents of a pack do not overlap, so together they are no
// larger than the data region: r.spanBytes adds up the spans checked, and
// a span that would take it past the data region's size is refused
// unread. So crafted records that cut one region into many overlapping
// spans cost at most one pass over the region, not one per span.

// span is a content's place in the data region: a key of r.contents, and
// what Verify sorts.
type span struct{ off, size uint64 }

// knownContent reports whether the CRC-32C of record i's content (rc's) is
// known, and the mismatch if it differs from rc's.
func (r *Reader) knownContent(i uint64, rc packformat.Record) (bool, error) {
	if g := r.good.Load(); g != nil && (*g)[i/64].Load()&(1<<(i%64)) != 0 {
		return true, nil
	}
	v, ok := r.contents.Load(span{rc.Off, rc.Size})
	if !ok {
		return false, nil
	}
	return true, r.noteContent(i, rc, v.(uint32))
}

// errContentMismatch and errContentOverlap are made once: a damaged
// content shared by many entries fails each of their reads, at no cost
// each.
var (
	errContentMismatch = corrupt("content checksum mismatch")
	errContentOverlap  = corrupt("content overlaps the contents already checked")
)

// noteContent records crc, the CRC-32C of record i's content, and reports
// a mismatch with the record's.
func (r *Reader) noteContent(i uint64, rc packformat.Record, crc uint32) error {
	r.storeCRC(span{rc.Off, rc.Size}, crc)
	if crc != rc.CRC {
		return errContentMismatch
	}
	g := r.good.Load()
	if g == nil {
		// Allocated at the first content checked, not at Open, which
		// costs the same for ten entries or a million.
		fresh := make([]atomic.Uint64, (r.count+63)/64)
		if !r.good.CompareAndSwap(nil, &fresh) {
			g = r.good.Load()
		} else {
			g = &fresh
		}
	}
	(*g)[i/64].Or(1 << (i % 64))
	return nil
}

// storeCRC records crc as the CRC-32C of the content at sp.
func (r *Reader) storeCRC(sp span, crc uint32) {
	if _, loaded := r.contents.LoadOrStore(sp, crc); !loaded {
		r.spanBytes.Add(sp.size)
	}
}

// checkContent checks record i's content (rc's) against its CRC-32C,
// unless that was done. The caller holds r.mu.
func (r *Reader) checkContent(i uint64, rc packformat.Record) error {
	if known, err := r.knownContent(i, rc); known {
		return err
	}
	if r.spanBytes.Load()+rc.Size > r.footer.DataSize {
		// A reader beside this one may have just checked this very span,
		// after the look above and before the sum: it counts once.
		if known, err := r.knownContent(i, rc); known {
			return err
		}
		return errContentOverlap
	}
	crc, err := r.contentCRC(rc)
	if err != nil {
		return err
	}
	return r.noteContent(i, rc, crc)
}
