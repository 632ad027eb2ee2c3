package packreader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/packfs/packfs/internal/packformat"
)

// ErrCorrupt is wrapped by every error that reports a damaged pack: bad
// magic, version, checksum, offsets, records or content.
var ErrCorrupt = errors.New("packreader: corrupt pack")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// Reader is an open pack. It implements fs.FS, fs.ReadDirFS, fs.ReadFileFS,
// fs.StatFS, fs.ReadLinkFS, fs.SubFS and fs.GlobFS. It is safe for
// concurrent use, and Close is safe while other goroutines read.
type Reader struct {
	// mu guards the mapping: every access to mapped, index or strs holds
	// it for reading; Close holds it for writing while it unmaps.
	mu     sync.RWMutex
	closed bool

	mapped []byte      // the whole file, when opened by Open
	ra     io.ReaderAt // the file, when opened by OpenReaderAt
	unmap  func([]byte) error

	size    uint64
	version uint32 // 2 or 3
	zstd    bool   // version 3 with FlagZstd: frames may be zstd frames
	filters bool   // FlagFilters: zstd frames may name a filter
	footSz  uint64 // the footer's size
	footer  packformat.Footer
	count   uint64
	index   []byte // count records
	keys    []byte // the key table: count big-endian name prefixes
	strs    []byte // the string table
	frames  []byte // version 3: the frame table
	attrs   []byte // version 3: the attribute table
	table   []byte // the check table: a CRC-32C per index, key and string block (and frame and attribute block)
	dataEnd uint64 // end of the data region (= index offset)
	tabOff  uint64 // file offset of the check table

	// Block b of the check table is index block b if b < keyBase, key
	// block b-keyBase if b < strBase, string block b-strBase if b <
	// frameBase, frame block b-frameBase if b < attrBase, else attribute
	// block b-attrBase (version 2 has neither: both bases are the end).
	keyBase, strBase, frameBase, attrBase uint64

	// Version 3: frameOK has bit i set once frame i's stored bytes
	// matched their CRC-32C (allocated at the first check), cache holds
	// decompressed frames.
	frameOK atomic.Pointer[[]atomic.Uint64]
	cache   *frameCache
	opts    options
	// checked has bit b set once block b matched its CRC-32C; nChecked
	// counts the bits set, and allChecked is set once all are.
	ownerNames ownerNames // version 3: the owner-names table
	checked    []atomic.Uint64
	nChecked   atomic.Uint64
	allChecked atomic.Bool
	// keysChecked is set once every block of the key table is checked
	// (nKeysChecked counts them): a lookup's binary search then checks
	// no block per probe (see compareKey). Format 3's attribute and frame
	// tables, which ReadFile of a small file never reads whole, would
	// keep allChecked unset for good.
	nKeysChecked atomic.Uint64
	keysChecked  atomic.Bool
	// lazy says the tables are read on first touch into meta, the
	// bytes from the index to the footer (see ensureBlock): filled has
	// bit g set once group g of meta is present; filling holds the
	// fills in progress, under fillMu.
	lazy bool
	meta []byte
	// packed: the tables are stored in groups (FlagPackedTables); dir
	// is the group directory, tablesLen the raw tables' length, and
	// tableAt where the check table starts in meta (a group boundary).
	packed    bool
	dir       []byte
	tablesLen uint64
	tableAt   uint64
	filled    []atomic.Uint64
	fillMu    sync.Mutex
	filling   map[uint64]chan struct{}
	root      packformat.Record // record 0, checked at open

	// placed: version 3, mapped: where the contents that contiguous
	// checked whole lie in the mapping, by record (see placed.go).
	placed []atomic.Pointer[placedWords]

	// good and contents remember the contents checked (see
	// checkContent): good has bit i set once record i's content matched.
	good      atomic.Pointer[[]atomic.Uint64]
	contents  sync.Map      // span → the CRC-32C of its bytes
	spanBytes atomic.Uint64 // the sizes of the spans in contents, added up
}

// Open maps the pack file name into memory and validates its header,
// footer and layout and the root entry, which it reads with pread rather
// than through the mapping. The index, key and string tables are checked
// block by block when a read first touches them, and contents when first
// read: opening a pack of a million entries costs a few system calls, not
// a pass over its index.
func Open(name string, opts ...Option) (*Reader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if int64(int(size)) != size {
		return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("packreader: pack too large to map")}
	}
	r := &Reader{size: uint64(size), opts: makeOptions(opts)}
	if err := r.load(f); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if r.packed {
		data, err := mmap(f, int(size))
		if err != nil {
			return nil, &os.PathError{Op: "mmap", Path: name, Err: err}
		}
		r.mapped, r.unmap = data, munmap
		if err := r.openPacked(f); err != nil {
			r.unmap(data)
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		r.startFrames()
		return r, nil
	}
	// Block 0 holds the root record. Reading it and its CRC with pread
	// keeps the mapping untouched until a lookup needs it.
	b0 := make([]byte, min(packformat.BlockSize, r.count*packformat.RecordSize)+packformat.CRCSize)
	crc0 := b0[len(b0)-packformat.CRCSize:]
	b0 = b0[:len(b0)-packformat.CRCSize]
	if err := readFull(f, b0, int64(r.footer.IndexOff)); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := readFull(f, crc0, int64(r.tabOff)); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := r.checkRoot(b0, binary.LittleEndian.Uint32(crc0)); err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	data, err := mmap(f, int(size))
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: name, Err: err}
	}
	r.mapped, r.unmap = data, munmap
	r.setMeta(data[r.footer.IndexOff : r.size-r.footSz])
	r.startFrames()
	return r, nil
}

// OpenReaderAt serves the pack of size bytes read through ra, without
// mmap. It reads the header, the footer, index block 0 and its
// check-table entry, and validates the pack as Open does. The index, key,
// string and other tables are read through ra on first touch, 64 KiB of
// one table at a time, each 4 KiB block checked against its CRC-32C
// before use, into a buffer of the tables' size (bounded by size);
// contents are read through ra on demand. The caller keeps ra open until
// Close and closes it after.
func OpenReaderAt(ra io.ReaderAt, size int64, opts ...Option) (*Reader, error) {
	if size < 0 {
		return nil, corrupt("negative size %d", size)
	}
	r := &Reader{ra: ra, size: uint64(size), opts: makeOptions(opts)}
	if err := r.load(ra); err != nil {
		return nil, err
	}
	if r.packed {
		if err := r.openPacked(ra); err != nil {
			return nil, err
		}
		r.startFrames()
		return r, nil
	}
	// The tables' pages stay untouched until filled; the layout checks
	// bound their size by the file's.
	r.meta = make([]byte, r.size-r.footSz-r.footer.IndexOff)
	r.setMeta(r.meta)
	r.tableAt = r.tabOff - r.footer.IndexOff
	r.lazy = true
	r.filled = make([]atomic.Uint64, (uint64(len(r.meta))+fillSize-1)/fillSize/64+1)
	r.filling = map[uint64]chan struct{}{}
	// Block 0 and its CRC are read aside: meta is written by fills only.
	// The block is checked again when its group is filled.
	b0 := make([]byte, min(packformat.BlockSize, len(r.index))+packformat.CRCSize)
	crc0 := b0[len(b0)-packformat.CRCSize:]
	b0 = b0[:len(b0)-packformat.CRCSize]
	if err := readFull(ra, b0, int64(r.footer.IndexOff)); err != nil {
		return nil, err
	}
	if err := readFull(ra, crc0, int64(r.tabOff)); err != nil {
		return nil, err
	}
	if err := r.checkRoot(b0, binary.LittleEndian.Uint32(crc0)); err != nil {
		return nil, err
	}
	r.startFrames()
	return r, nil
}

// openPacked sets up a pack with packed tables, read through ra: it
// reads the group directory, then fills group 0 and the check table's
// first group to check the root.
func (r *Reader) openPacked(ra io.ReaderAt) error {
	n := packformat.Groups(r.tablesLen)
	r.dir = make([]byte, n*packformat.GroupEntrySize)
	if err := readFull(ra, r.dir, int64(r.footer.GroupsOff)); err != nil {
		return err
	}
	r.tableAt = n * packformat.GroupSize
	r.meta = make([]byte, r.tableAt+(r.size-r.footSz-r.tabOff))
	r.setMeta(r.meta)
	r.lazy = true
	r.filled = make([]atomic.Uint64, (uint64(len(r.meta))+fillSize-1)/fillSize/64+1)
	r.filling = map[uint64]chan struct{}{}
	if err := r.fillGroup(0); err != nil {
		return err
	}
	if err := r.fillGroup(r.tableAt / fillSize); err != nil {
		return err
	}
	return r.checkRoot(r.index[:min(packformat.BlockSize, len(r.index))], binary.LittleEndian.Uint32(r.table))
}

// load reads and validates the header, the footer and the layout they
// describe.
func (r *Reader) load(ra io.ReaderAt) error {
	if r.size < packformat.HeaderSize+packformat.FooterSize {
		return corrupt("file of %d bytes is too short", r.size)
	}
	hdr := make([]byte, packformat.HeaderSize)
	if err := readFull(ra, hdr, 0); err != nil {
		return err
	}
	r.footSz = packformat.FooterSize
	if string(hdr[:8]) == packformat.Magic && binary.LittleEndian.Uint32(hdr[8:]) == packformat.Version3 {
		r.footSz = packformat.FooterSize3
		if r.size < packformat.HeaderSize+r.footSz {
			return corrupt("file of %d bytes is too short", r.size)
		}
	}
	foot := make([]byte, r.footSz)
	if err := readFull(ra, foot, int64(r.size-r.footSz)); err != nil {
		return err
	}
	if err := r.init(hdr, foot); err != nil {
		if string(foot[len(foot)-8:]) != packformat.EndMagic && string(hdr[:8]) == packformat.Magic {
			if end, ok := endBefore(ra, r.size); ok {
				return corrupt("%d bytes of trailing data after the pack's end at offset %d", r.size-end, end)
			}
		}
		return err
	}
	crc := crc32.Update(0, packformat.Castagnoli, hdr)
	crc = crc32.Update(crc, packformat.Castagnoli, foot[:len(foot)-16])
	if crc != r.footer.CRC {
		return corrupt("checksum mismatch in header or footer")
	}
	f := &r.footer
	r.keyBase = packformat.Blocks(f.Count * packformat.RecordSize)
	r.strBase = r.keyBase + packformat.Blocks(f.Count*packformat.KeySize)
	r.frameBase = r.strBase + packformat.Blocks(f.StringsSize)
	r.attrBase = r.frameBase + packformat.Blocks(f.FrameCount*packformat.FrameEntrySize)
	tableLen := r.attrBase + packformat.Blocks(f.Count*packformat.AttrSize)
	r.tabOff = f.StringsOff + f.StringsSize
	if r.packed {
		r.tabOff = f.GroupsOff + packformat.Groups(r.tablesLen)*packformat.GroupEntrySize
	} else if r.version == packformat.Version3 {
		r.tabOff = f.AttrsOff + f.Count*packformat.AttrSize
	} else {
		tableLen = r.frameBase
		r.attrBase = r.frameBase
	}
	r.checked = make([]atomic.Uint64, (tableLen+63)/64)
	return nil
}

// checkRoot checks index block 0, given as b, against crc, its entry in
// the check table, then the root record at its start, and marks the block
// checked.
func (r *Reader) checkRoot(b []byte, crc uint32) error {
	if crc32.Checksum(b, packformat.Castagnoli) != crc {
		return corrupt("index block 0 (the root): checksum mismatch")
	}
	root, err := r.decodeFrom(0, b)
	if err != nil {
		return err
	}
	if root.Type != packformat.TypeDir || root.NameLen != 0 || root.Parent != 0 {
		return corrupt("root is not a directory")
	}
	r.root = root
	if !r.lazy {
		r.markChecked(0)
	}
	return nil
}

// setMeta sets the index, the key table, the string table and the check
// table from meta, the bytes from the index to the footer.
func (r *Reader) setMeta(meta []byte) {
	n := r.count * packformat.RecordSize
	k := n + r.count*packformat.KeySize
	m := k + r.footer.StringsSize
	r.index = meta[:n:n]
	r.keys = meta[n:k:k]
	r.strs = meta[k:m:m]
	if r.version == packformat.Version3 {
		fe := m + r.footer.FrameCount*packformat.FrameEntrySize
		ae := fe + r.count*packformat.AttrSize
		r.frames = meta[m:fe:fe]
		r.attrs = meta[fe:ae:ae]
		m = ae
	}
	if r.packed {
		m = r.tableAt
	}
	r.table = meta[m:len(meta):len(meta)]
}

// trailingScan is how far from its end a file is searched for the end of
// a pack that something was appended to.
const trailingScan = 1 << 20

// endBefore looks for the end magic of a pack in the last trailingScan
// bytes of a file of size bytes whose own last bytes are not one, and
// returns where the pack would end: a file with data appended to a pack
// is told apart from a truncated one.
func endBefore(ra io.ReaderAt, size uint64) (uint64, bool) {
	n := min(size, trailingScan)
	tail := make([]byte, n)
	if err := readFull(ra, tail, int64(size-n)); err != nil {
		return 0, false
	}
	i := bytes.LastIndex(tail, []byte(packformat.EndMagic))
	if i < 0 {
		return 0, false
	}
	end := size - n + uint64(i) + uint64(len(packformat.EndMagic))
	return end, end >= packformat.HeaderSize+packformat.FooterSize
}

// readFull reads len(p) bytes at off; a short read means the pack is
// truncated.
func readFull(ra io.ReaderAt, p []byte, off int64) error {
	n, err := ra.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
		return corrupt("truncated: read %d of %d bytes at offset %d", n, len(p), off)
	}
	return err
}

// init validates header and footer and the layout they describe.
func (r *Reader) init(hdr, foot []byte) error {
	le := binary.LittleEndian
	if string(hdr[:8]) != packformat.Magic {
		return corrupt("bad magic (not a pack file)")
	}
	v := le.Uint32(hdr[8:])
	if v != packformat.Version2 && v != packformat.Version3 {
		return corrupt("unsupported version %d", v)
	}
	r.version = v
	flags := le.Uint32(hdr[16:])
	if v == packformat.Version2 && flags != 0 || flags&^packformat.HeaderFlagsKnown != 0 {
		return corrupt("bad header flags %#x", flags)
	}
	r.zstd = flags&packformat.FlagZstd != 0
	r.packed = flags&packformat.FlagPackedTables != 0
	r.filters = flags&packformat.FlagFilters != 0
	if (r.packed || r.filters) && !r.zstd {
		return corrupt("bad header flags %#x", flags)
	}
	if le.Uint32(hdr[12:]) != packformat.HeaderSize || !allZero(hdr[20:]) {
		return corrupt("bad header")
	}
	if v == packformat.Version3 {
		return r.init3(foot)
	}
	if string(foot[56:]) != packformat.EndMagic || le.Uint32(foot[52:]) != 0 {
		return corrupt("bad footer (truncated pack?)")
	}
	f := packformat.DecodeFooter(foot)
	size := r.size
	// Each bound below keeps the sums after it within 4·size, far from
	// overflowing.
	switch {
	case f.DataSize > size || f.IndexOff != packformat.HeaderSize+f.DataSize || f.IndexOff%packformat.DataAlign != 0:
		return corrupt("bad data size %d or index offset %d", f.DataSize, f.IndexOff)
	case f.Count == 0 || f.Count > size/packformat.RecordSize || f.Count > 1<<32-1:
		return corrupt("bad entry count %d", f.Count)
	case f.StringsOff != f.IndexOff+f.Count*(packformat.RecordSize+packformat.KeySize):
		return corrupt("bad string table offset %d", f.StringsOff)
	case f.StringsSize > size || f.StringsOff+f.StringsSize+packformat.TableSize(f.Count, f.StringsSize)+packformat.FooterSize != size:
		return corrupt("bad string table size %d for a file of %d bytes", f.StringsSize, size)
	}
	r.footer = f
	r.count = f.Count
	r.dataEnd = f.IndexOff
	return nil
}

// init3 validates a version-3 footer and the layout it describes.
func (r *Reader) init3(foot []byte) error {
	f, ok := packformat.DecodeFooter3(foot)
	if string(foot[packformat.FooterSize3-8:]) != packformat.EndMagic || !ok {
		return corrupt("bad footer (truncated pack?)")
	}
	size := r.size
	if r.packed {
		return r.initPacked(f)
	}
	if f.GroupsOff != 0 {
		return corrupt("bad footer: group directory without packed tables")
	}
	// As in init, each bound keeps the sums after it far from
	// overflowing.
	switch {
	case f.DataSize > size || f.IndexOff != packformat.HeaderSize+f.DataSize || f.IndexOff%packformat.DataAlign != 0:
		return corrupt("bad data size %d or index offset %d", f.DataSize, f.IndexOff)
	case f.Count == 0 || f.Count > size/packformat.RecordSize || f.Count > 1<<32-1:
		return corrupt("bad entry count %d", f.Count)
	case f.StringsOff != f.IndexOff+f.Count*(packformat.RecordSize+packformat.KeySize):
		return corrupt("bad string table offset %d", f.StringsOff)
	case f.StringsSize > size || f.FramesOff != f.StringsOff+f.StringsSize:
		return corrupt("bad string table size %d or frame table offset %d", f.StringsSize, f.FramesOff)
	case f.FrameCount == 0 || f.FrameCount > size/packformat.FrameEntrySize || f.FrameCount > 1<<32-1:
		return corrupt("bad frame count %d", f.FrameCount)
	case f.AttrsOff != f.FramesOff+f.FrameCount*packformat.FrameEntrySize:
		return corrupt("bad attribute table offset %d", f.AttrsOff)
	case f.AttrsOff+f.Count*packformat.AttrSize+packformat.TableSize3(f.Count, f.StringsSize, f.FrameCount)+packformat.FooterSize3 != size:
		return corrupt("bad table sizes for a file of %d bytes", size)
	case f.NamesSize == 0 && (f.NamesPos != 0 || f.NamesFirst != 0),
		f.NamesSize > packformat.MaxNamesSize,
		f.NamesSize != 0 && (f.NamesPos >= f.Stream || f.NamesSize > f.Stream-f.NamesPos || uint64(f.NamesFirst)+1 >= f.FrameCount):
		return corrupt("bad owner-names table at %d, %d bytes", f.NamesPos, f.NamesSize)
	}
	r.footer = f
	r.count = f.Count
	r.dataEnd = f.IndexOff
	return nil
}

// initPacked validates the footer of a pack with packed tables: its
// table offsets are those of the raw tables, which it bounds by
// MaxTablesRatio times the pack's size, since the reader allocates them.
func (r *Reader) initPacked(f packformat.Footer) error {
	size := r.size
	limit := min(size, 1<<50) * packformat.MaxTablesRatio
	switch {
	case f.DataSize > size || f.IndexOff != packformat.HeaderSize+f.DataSize || f.IndexOff%packformat.DataAlign != 0:
		return corrupt("bad data size %d or index offset %d", f.DataSize, f.IndexOff)
	case f.Count == 0 || f.Count > limit/packformat.RecordSize || f.Count > 1<<32-1:
		return corrupt("bad entry count %d", f.Count)
	case f.FrameCount == 0 || f.FrameCount > limit/packformat.FrameEntrySize || f.FrameCount > 1<<32-1:
		return corrupt("bad frame count %d", f.FrameCount)
	case f.StringsSize > limit:
		return corrupt("bad string table size %d", f.StringsSize)
	}
	l := packformat.TablesLayout{Count: f.Count, StringsSize: f.StringsSize, FrameCount: f.FrameCount}
	n := l.Len()
	switch {
	case n > limit:
		return corrupt("tables of %d bytes for a pack of %d", n, size)
	case f.StringsOff != f.IndexOff+f.Count*(packformat.RecordSize+packformat.KeySize) ||
		f.FramesOff != f.StringsOff+f.StringsSize || f.AttrsOff != f.FramesOff+f.FrameCount*packformat.FrameEntrySize:
		return corrupt("bad table offsets")
	case f.GroupsOff < f.IndexOff || f.GroupsOff > size ||
		f.GroupsOff+packformat.Groups(n)*packformat.GroupEntrySize+packformat.TableSize3(f.Count, f.StringsSize, f.FrameCount)+packformat.FooterSize3 != size:
		return corrupt("bad group directory offset %d for a file of %d bytes", f.GroupsOff, size)
	}
	r.footer = f
	r.count = f.Count
	r.dataEnd = f.IndexOff
	r.tablesLen = n
	return nil
}

// Version returns the pack's format version: 2 or 3.
func (r *Reader) Version() int { return int(r.version) }

// Compressed reports whether the pack's frames may be zstd frames (it
// was written with packwriter.WithCompression).
func (r *Reader) Compressed() bool { return r.zstd }

// PackedTables reports whether the pack stores its tables in compressed
// groups (FORMAT.md, "Packed tables"), as compressed packs do since
// packed tables were added.
func (r *Reader) PackedTables() bool { return r.packed }

func allZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }

// Close releases the pack. Files and byte slices obtained from r must not
// be used after Close: files report fs.ErrClosed, and slices from Bytes
// become invalid. Close waits for reads in progress to finish.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return &os.PathError{Op: "close", Path: "pack", Err: os.ErrClosed}
	}
	r.closed = true
	r.index, r.keys, r.strs, r.table, r.frames, r.attrs, r.meta, r.dir = nil, nil, nil, nil, nil, nil, nil, nil
	r.placed = nil
	r.closeFrames()
	if r.mapped != nil {
		m := r.mapped
		r.mapped = nil
		return r.unmap(m)
	}
	return nil
}

// Sum returns the pack's size and the CRC-32C of its bytes from the check
// table to its end (the check table and the footer). The footer pins the
// pack's layout and the check table sums every block of its index, which
// sums every content: another pack has another sum, while computing it
// reads a few bytes per 4 KiB of index. The durable store records it to
// know a lower pack again at its next open.
func (r *Reader) Sum() (size int64, sum uint32, err error) {
	g, err := r.rlock("sum", ".")
	if err != nil {
		return 0, 0, err
	}
	defer r.runlock("sum", ".", g, &err)
	var tail []byte
	if r.mapped != nil {
		tail = r.mapped[r.tabOff:r.size]
	} else {
		tail = make([]byte, r.size-r.tabOff)
		if _, err := r.ra.ReadAt(tail, int64(r.tabOff)); err != nil {
			return 0, 0, pathErr("sum", ".", err)
		}
	}
	return int64(r.size), crc32.Checksum(tail, packformat.Castagnoli), nil
}
