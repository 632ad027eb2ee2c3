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
	if r.lazy {
		if err := r.ensureBlock(b); err != nil {
			return err
		}
	}
	region, base, _, what := r.regionOf(b)
	k := b - base
	lo := k * packformat.BlockSize
	hi := min(lo+packformat.BlockSize, uint64(len(region)))
	want := binary.LittleEndian.Uint32(r.table[b*packformat.CRCSize:])
	if crc32.Checksum(region[lo:hi], packformat.Castagnoli) != want {
		return corrupt("%s block %d (bytes %d to %d): checksum mismatch", what, k, lo, hi)
	}
	r.markChecked(b)
	return nil
}

// regionOf returns the table block b belongs to, the number of its first
// block, its file offset and its name.
func (r *Reader) regionOf(b uint64) (region []byte, base, off uint64, what string) {
	f := &r.footer
	switch {
	case b >= r.attrBase:
		return r.attrs, r.attrBase, f.AttrsOff, "attribute table"
	case b >= r.frameBase:
		return r.frames, r.frameBase, f.FramesOff, "frame table"
	case b >= r.strBase:
		return r.strs, r.strBase, f.StringsOff, "string table"
	case b >= r.keyBase:
		return r.keys, r.keyBase, f.IndexOff + r.count*packformat.RecordSize, "key table"
	}
	return r.index, 0, f.IndexOff, "index"
}

// A pack opened through an io.ReaderAt reads its tables on first touch.
// The bytes from the index to the footer (the tables and the check
// table) are cut into groups of fillSize bytes, counted from the index;
// the first check of a block fills the groups holding it and its
// check-table entry, so that a walk costs one read per 64 KiB of the
// tables it touches rather than one per 4 KiB, and an open costs none.
// A group is filled once (an atomic OR after its bytes are written, so
// that a reader that sees the bit sees the bytes), and nothing reads a
// group's bytes before its bit is set. Fills of one group are one at a
// time: a reader that finds its group being filled waits for that
// fill, and tries again itself if it failed. Fills of different groups
// write disjoint bytes and run at once. A failed read leaves the group
// unfilled, to be read again by the next touch.
//
// A fill of index bytes also fills the frame-table entries that the
// files among its records start in, when they lie within two groups
// (the writer stores contents in index order, so they do): a walk, which
// reads the index, then leaves a content read with one read, its
// content's, as it would be with the whole tables in memory.

const (
	// fillSize is the unit of the tables' reads through an io.ReaderAt.
	fillSize = 64 << 10
)

// Packed tables are filled a group at a time.
const _ = uint(fillSize-packformat.GroupSize) + uint(packformat.GroupSize-fillSize)

// ensureBlock makes block b's bytes and its check-table entry present.
// The caller holds r.mu.
func (r *Reader) ensureBlock(b uint64) error {
	region, base, off, _ := r.regionOf(b)
	lo := off - r.footer.IndexOff + (b-base)*packformat.BlockSize
	hi := min(lo+packformat.BlockSize, off-r.footer.IndexOff+uint64(len(region)))
	t := r.tableAt + b*packformat.CRCSize
	if r.metaFilled(lo, hi) && r.metaFilled(t, t+packformat.CRCSize) {
		return nil
	}
	if err := r.fillMeta(lo, hi); err != nil {
		return err
	}
	return r.fillMeta(t, t+packformat.CRCSize)
}

// fillFramesOf fills the frame-table entries that the files among the
// index records in tables bytes lo to hi-1 start in, if they lie within
// two groups. The records are not checked yet: they only steer what is
// read, and an error is met again when a read needs the entries.
func (r *Reader) fillFramesOf(lo, hi uint64) {
	n := r.count * packformat.RecordSize
	if r.version != packformat.Version3 || lo >= n {
		return
	}
	first, last := uint64(1<<63), uint64(0)
	for o := lo; o+packformat.RecordSize <= min(hi, n); o += packformat.RecordSize {
		b := r.meta[o : o+packformat.RecordSize]
		if b[10] == packformat.TypeFile && binary.LittleEndian.Uint64(b[24:]) > 0 {
			f := uint64(binary.LittleEndian.Uint32(b[56:]))
			first, last = min(first, f), max(last, f)
		}
	}
	if first > last || last+2 > r.footer.FrameCount {
		return
	}
	a, z := first*packformat.FrameEntrySize, (last+2)*packformat.FrameEntrySize
	if z-a > 2*fillSize {
		return
	}
	fo := r.footer.FramesOff - r.footer.IndexOff
	if r.fillMeta(fo+a, fo+z) != nil {
		return
	}
	// And their check-table entries.
	to := r.tableAt + r.frameBase*packformat.CRCSize
	r.fillMeta(to+a/packformat.BlockSize*packformat.CRCSize, to+((z-1)/packformat.BlockSize+1)*packformat.CRCSize)
}

// readRaw reads len(p) bytes of the file at off, from the mapping or
// through ra; the caller has bounded them by the file's size.
func (r *Reader) readRaw(p []byte, off uint64) error {
	if r.mapped != nil {
		copy(p, r.mapped[off:off+uint64(len(p))])
		return nil
	}
	return readFull(r.ra, p, int64(off))
}

// unpackGroup reads group g of packed tables into dst, its raw bytes:
// stored raw if its stored size is theirs, else a zstd frame of the
// shuffled bytes, decoded into a buffer of dst's size that the decoder
// may not grow (a crafted frame header cannot make it allocate what it
// claims). Its blocks' CRC-32C are checked as for any table.
func (r *Reader) unpackGroup(g uint64, dst []byte) error {
	le := binary.LittleEndian
	start := uint64(0)
	if g > 0 {
		start = le.Uint64(r.dir[(g-1)*packformat.GroupEntrySize:])
	}
	end := le.Uint64(r.dir[g*packformat.GroupEntrySize:])
	if start > end || end > r.footer.GroupsOff-r.footer.IndexOff || end-start > uint64(len(dst)) || end == start {
		return corrupt("table group %d: bad stored range %d to %d", g, start, end)
	}
	if end-start == uint64(len(dst)) {
		return r.readRaw(dst, r.footer.IndexOff+start)
	}
	stored := make([]byte, end-start)
	if err := r.readRaw(stored, r.footer.IndexOff+start); err != nil {
		return err
	}
	d, err := decoder()
	if err != nil {
		return corrupt("table group %d: %v", g, err)
	}
	out, err := d.DecodeAll(stored, make([]byte, 0, len(dst)))
	if err != nil || len(out) != len(dst) {
		return corrupt("table group %d: bad zstd frame (%d of %d bytes): %v", g, len(out), len(dst), err)
	}
	packformat.TablesLayout{Count: r.count, StringsSize: r.footer.StringsSize, FrameCount: r.footer.FrameCount}.Unshuffle(dst, out, g*packformat.GroupSize)
	return nil
}

func (r *Reader) groupFilled(g uint64) bool { return r.filled[g/64].Load()&(1<<(g%64)) != 0 }

// metaFilled reports whether bytes lo to hi-1 of the tables are present.
func (r *Reader) metaFilled(lo, hi uint64) bool {
	for g := lo / fillSize; g <= (hi-1)/fillSize; g++ {
		if !r.groupFilled(g) {
			return false
		}
	}
	return true
}

// fillMeta fills the groups holding bytes lo to hi-1 of the tables.
func (r *Reader) fillMeta(lo, hi uint64) error {
	for g := lo / fillSize; g <= (hi-1)/fillSize; g++ {
		if err := r.fillGroup(g); err != nil {
			return err
		}
	}
	return nil
}

// fillGroup reads group g of the tables unless it is present.
func (r *Reader) fillGroup(g uint64) error {
	for {
		if r.groupFilled(g) {
			return nil
		}
		r.fillMu.Lock()
		if r.groupFilled(g) {
			r.fillMu.Unlock()
			return nil
		}
		if ch := r.filling[g]; ch != nil {
			r.fillMu.Unlock()
			<-ch
			continue
		}
		ch := make(chan struct{})
		r.filling[g] = ch
		r.fillMu.Unlock()
		lo := g * fillSize
		hi := min(lo+fillSize, uint64(len(r.meta)))
		var err error
		switch {
		case !r.packed:
			err = r.readRaw(r.meta[lo:hi], r.footer.IndexOff+lo)
		case lo < r.tableAt:
			err = r.unpackGroup(g, r.meta[lo:min(hi, r.tablesLen)])
		default:
			err = r.readRaw(r.meta[lo:hi], r.tabOff+lo-r.tableAt)
		}
		if err == nil {
			r.filled[g/64].Or(1 << (g % 64))
			r.fillFramesOf(lo, hi)
		}
		r.fillMu.Lock()
		delete(r.filling, g)
		r.fillMu.Unlock()
		close(ch)
		return err
	}
}

// markChecked sets block b's bit, allChecked once every block's bit is
// set, and keysChecked once every key block's is.
func (r *Reader) markChecked(b uint64) {
	if old := r.checked[b/64].Or(1 << (b % 64)); old&(1<<(b%64)) == 0 {
		if r.nChecked.Add(1) == uint64(len(r.table))/packformat.CRCSize {
			r.allChecked.Store(true)
		}
		if b >= r.keyBase && b < r.strBase && r.nKeysChecked.Add(1) == r.strBase-r.keyBase {
			r.keysChecked.Store(true)
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
