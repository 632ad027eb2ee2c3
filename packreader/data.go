package packreader

import (
	"hash/crc32"
	"sync"

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

// checkCRC checks data against the record's CRC-32C.
func checkCRC(rc packformat.Record, data []byte) error {
	if crc32.Checksum(data, packformat.Castagnoli) != rc.CRC {
		return corrupt("content checksum mismatch")
	}
	return nil
}

// contentCRC computes the CRC-32C of rc's content. The caller holds r.mu.
func (r *Reader) contentCRC(rc packformat.Record) (uint32, error) {
	if r.mapped != nil {
		return crc32.Checksum(r.mapped[rc.Off:rc.Off+rc.Size], packformat.Castagnoli), nil
	}
	buf := getBuf()
	defer putBuf(buf)
	crc := uint32(0)
	for off, left := rc.Off, rc.Size; left > 0; {
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

// checkContent verifies rc's content against its CRC-32C.
func (r *Reader) checkContent(rc packformat.Record) error {
	crc, err := r.contentCRC(rc)
	if err != nil {
		return err
	}
	if crc != rc.CRC {
		return corrupt("content checksum mismatch")
	}
	return nil
}
