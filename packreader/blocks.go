package packreader

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/packfs/packfs/internal/packformat"
)

// The index, the key table and the string table are checked lazily, one
// block of packformat.BlockSize bytes at a time: the first read that
// touches a block computes its CRC-32C and compares it with the block's
// entry in the check table. A block that matches is marked in r.checked
// and never checked again; one that does not (a damaged block or a damaged
// table entry) fails every read that touches it. Any number of goroutines
// may check the same block at once: they compute the same answer, and
// marking is an atomic OR. Once every block is marked, r.allChecked spares
// lookups even the per-block test.

// checkBlock checks block b of the check table. The caller holds r.mu.
func (r *Reader) checkBlock(b uint64) error {
	if r.isChecked(b) {
		return nil
	}
	return r.checkBlockSlow(b)
}

// isChecked reports whether block b has been checked.
func (r *Reader) isChecked(b uint64) bool { return r.checked[b/64].Load()&(1<<(b%64)) != 0 }

func (r *Reader) checkBlockSlow(b uint64) error {
	region, k, what := r.index, b, "index"
	switch {
	case b >= r.attrBase:
		region, k, what = r.attrs, b-r.attrBase, "attribute table"
	case b >= r.frameBase:
		region, k, what = r.frames, b-r.frameBase, "frame table"
	case b >= r.strBase:
		region, k, what = r.strs, b-r.strBase, "string table"
	case b >= r.keyBase:
		region, k, what = r.keys, b-r.keyBase, "key table"
	}
	lo := k * packformat.BlockSize
	hi := min(lo+packformat.BlockSize, uint64(len(region)))
	want := binary.LittleEndian.Uint32(r.table[b*packformat.CRCSize:])
	if crc32.Checksum(region[lo:hi], packformat.Castagnoli) != want {
		return corrupt("%s block %d (bytes %d to %d): checksum mismatch", what, k, lo, hi)
	}
	r.markChecked(b)
	return nil
}

// markChecked sets block b's bit, and allChecked once every block's bit is
// set.
func (r *Reader) markChecked(b uint64) {
	if old := r.checked[b/64].Or(1 << (b % 64)); old&(1<<(b%64)) == 0 {
		if r.nChecked.Add(1) == uint64(len(r.table))/packformat.CRCSize {
			r.allChecked.Store(true)
		}
	}
}

// checkRecords checks the index blocks holding records lo to hi-1, which
// the caller has bounded by r.count. The caller holds r.mu.
func (r *Reader) checkRecords(lo, hi uint64) error {
	if lo >= hi {
		return nil
	}
	for b := lo / packformat.RecordsPerBlock; b <= (hi-1)/packformat.RecordsPerBlock; b++ {
		if err := r.checkBlock(b); err != nil {
			return err
		}
	}
	return nil
}

// checkStrings checks the string-table blocks holding bytes off to
// off+n-1, which the caller has bounded by len(r.strs). The caller holds
// r.mu.
func (r *Reader) checkStrings(off, n uint64) error {
	if n == 0 {
		return nil
	}
	for b := off / packformat.BlockSize; b <= (off+n-1)/packformat.BlockSize; b++ {
		if err := r.checkBlock(r.strBase + b); err != nil {
			return err
		}
	}
	return nil
}

// checkAll checks every block. The caller holds r.mu.
func (r *Reader) checkAll() error {
	for b := range uint64(len(r.table)) / packformat.CRCSize {
		if err := r.checkBlock(b); err != nil {
			return err
		}
	}
	return nil
}
