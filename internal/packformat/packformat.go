// Package packformat holds the constants and record codecs of the pack file
// format shared by packwriter and packreader. The format is specified in
// packreader/FORMAT.md; this package only encodes and decodes fixed-size
// records and validates nothing beyond their shape.
package packformat

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

// Magic opens every pack (header) and closes it (last 8 bytes of the footer).
const (
	Magic    = "\x89PACKFS\n"
	EndMagic = "PACKEND\n"
)

// Versions this code reads and writes. Version 1 checked its index and
// string table with one CRC-32C at open; version 2 checks them block by
// block (see BlockSize) and adds the key table (see Key); version 3 cuts
// contents into checksummed, optionally compressed frames (see Frame) and
// adds owners and hard links (see Attr).
const (
	Version2 = 2
	Version3 = 3
	Version  = Version3 // what packwriter writes unless told otherwise
)

// Header flags (header bytes 16 to 19), version 3 only.
const (
	// FlagZstd says that frames whose stored size is below their raw size
	// are zstd frames.
	FlagZstd = 1 << 0
	// FlagPackedTables says that the tables (index to attribute table)
	// are stored in groups of GroupSize raw bytes, each zstd-compressed
	// after Shuffle, found through a group directory (FORMAT.md). It
	// requires FlagZstd.
	FlagPackedTables = 1 << 1
	// FlagFilters says that zstd frames may name a filter (Frame.Filter)
	// that their decompressed bytes must go through. It requires
	// FlagZstd.
	FlagFilters = 1 << 2
	// HeaderFlagsKnown is the set of header flags the format defines.
	HeaderFlagsKnown = FlagZstd | FlagPackedTables | FlagFilters
)

// Packed tables (FlagPackedTables).
const (
	// GroupSize is the raw size of a group of the packed tables; the
	// last may be shorter.
	GroupSize = 64 << 10
	// GroupEntrySize is the size of a group-directory entry: the end of
	// the group's stored bytes, counted from IndexOff.
	GroupEntrySize = 8
	// MaxTablesRatio bounds the raw size of packed tables against the
	// pack's size: a reader allocates the raw tables' size, and refuses
	// a footer claiming more, so that no pack makes it allocate more
	// than a few times its size. The writer pads the data region of a
	// pack whose tables compress better than that (FORMAT.md).
	MaxTablesRatio = 8
)

// Groups returns the number of groups of packed tables of n raw bytes.
func Groups(n uint64) uint64 { return (n + GroupSize - 1) / GroupSize }

// TablesLayout gives the raw tables' regions, counted from IndexOff:
// index, key table, string table, frame table, attribute table.
type TablesLayout struct {
	Count, StringsSize, FrameCount uint64
}

// Len returns the raw tables' length.
func (l TablesLayout) Len() uint64 {
	return l.Count*(RecordSize+KeySize+AttrSize) + l.StringsSize + l.FrameCount*FrameEntrySize
}

// fixed returns the regions of fixed-size entries: start, width, count.
func (l TablesLayout) fixed() [4][3]uint64 {
	keys := l.Count * RecordSize
	frames := keys + l.Count*KeySize + l.StringsSize
	attrs := frames + l.FrameCount*FrameEntrySize
	return [4][3]uint64{{0, RecordSize, l.Count}, {keys, KeySize, l.Count}, {frames, FrameEntrySize, l.FrameCount}, {attrs, AttrSize, l.Count}}
}

// Shuffle writes to dst the stored form of src, the raw tables' bytes
// from off: within each region of fixed-size entries, the entries that
// lie whole in src are stored column by column (byte j of every entry,
// then byte j+1), which puts alike bytes together for zstd; other bytes
// are stored as they are. len(dst) == len(src).
func (l TablesLayout) Shuffle(dst, src []byte, off uint64) { l.shuffle(dst, src, off, false) }

// Unshuffle undoes Shuffle.
func (l TablesLayout) Unshuffle(dst, src []byte, off uint64) { l.shuffle(dst, src, off, true) }

func (l TablesLayout) shuffle(dst, src []byte, off uint64, undo bool) {
	copy(dst, src)
	end := off + uint64(len(src))
	for _, r := range l.fixed() {
		start, w, n := r[0], r[1], r[2]
		lo, hi := max(off, start), min(end, start+w*n)
		if lo >= hi {
			continue
		}
		e0 := (lo - start + w - 1) / w
		e1 := (hi - start) / w
		if e1 <= e0 {
			continue
		}
		k := e1 - e0
		base := start + e0*w - off
		d, s := dst[base:base+k*w], src[base:base+k*w]
		for e := uint64(0); e < k; e++ {
			for j := uint64(0); j < w; j++ {
				if undo {
					d[e*w+j] = s[j*k+e]
				} else {
					d[j*k+e] = s[e*w+j]
				}
			}
		}
	}
}

// Frames (version 3).
const (
	// FrameSize is the raw size of the frames the writer cuts contents
	// into; the last frame of a run may be shorter.
	FrameSize = 64 << 10
	// ZstdFrameSize is the raw size of the frames of a compressed pack:
	// 1 MiB makes Go's src 11% smaller than 128 KiB (FORMAT.md), for
	// eight times the bytes a cold read of a small file decompresses.
	ZstdFrameSize = 1 << 20
	// MaxFrame bounds the raw size of a frame that stores bytes (a hole
	// may be of any size): the reader refuses larger ones, so no frame
	// makes it allocate more than this.
	MaxFrame = 1 << 20
	// FrameEntrySize is the size of one entry of the frame table.
	FrameEntrySize = 24
	// AttrSize is the size of one entry of the attribute table.
	AttrSize = 16
	// FooterSize3 is the size of a version-3 footer.
	FooterSize3 = 128
	// FooterCRCLen3 is how many leading bytes of a version-3 footer its
	// CRC covers.
	FooterCRCLen3 = 112
)

// Frame is one entry of the frame table. Frames cut the raw stream, the
// concatenation of every stored content, into pieces stored one after
// the other in the data region: frame i holds raw bytes Pos(i) to
// Pos(i+1)-1 of the stream. Stored == 0 is a hole (zeros, nothing
// stored); Stored == raw size is raw bytes; 0 < Stored < raw size is a
// zstd frame (packs with FlagZstd only). The table ends with a sentinel
// whose Pos is the stream's length.
//
// The entry's 4-byte stored-size field holds Stored in its low 24 bits
// (frames are at most MaxFrame) and Filter in its high 8, which packs
// without FlagFilters leave zero.
type Frame struct {
	Pos    uint64 // raw stream position of the frame's first byte
	Off    uint64 // file offset of its stored bytes, a multiple of DataAlign
	Stored uint32 // stored bytes, below 1<<24
	Filter uint8  // what the decompressed bytes go through: FilterNone or FilterX86
	CRC    uint32 // CRC-32C of the stored bytes (0 for a hole)
}

// Frame filters (Frame.Filter, in packs with FlagFilters).
const (
	// FilterNone: the decompressed bytes are the raw bytes.
	FilterNone = 0
	// FilterX86: the decompressed bytes went through x86filter.Encode,
	// and x86filter.Decode gives the raw bytes back (FORMAT.md, "Frame
	// filters").
	FilterX86 = 1
)

// storedBits is how many low bits of the stored-size field hold Stored.
const storedBits = 24

// Put writes f into b[:FrameEntrySize].
func (f *Frame) Put(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], f.Pos)
	le.PutUint64(b[8:], f.Off)
	le.PutUint32(b[16:], f.Stored|uint32(f.Filter)<<storedBits)
	le.PutUint32(b[20:], f.CRC)
}

// DecodeFrame decodes b[:FrameEntrySize].
func DecodeFrame(b []byte) Frame {
	le := binary.LittleEndian
	s := le.Uint32(b[16:])
	return Frame{Pos: le.Uint64(b[0:]), Off: le.Uint64(b[8:]), Stored: s & (1<<storedBits - 1), Filter: uint8(s >> storedBits), CRC: le.Uint32(b[20:])}
}

// NoOwner is the Uid and Gid of an entry whose source gave no owner (an
// in-memory layer, a MapFS): not root's 0, so that nothing takes such an
// entry for root's, and chown(2)'s "leave unchanged".
const NoOwner = ^uint32(0)

// Attr is one entry of the attribute table (version 3): record i's owner
// and inode.
type Attr struct {
	Uid, Gid uint32 // NoOwner when unknown
	// Ino is the inode number: one plus the index of the first record of
	// the entry's inode (hard links share it; other entries have their
	// own index plus one).
	Ino   uint32
	Nlink uint32 // link count: for a directory 2 plus its subdirectories
}

// Put writes a into b[:AttrSize].
func (a *Attr) Put(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], a.Uid)
	le.PutUint32(b[4:], a.Gid)
	le.PutUint32(b[8:], a.Ino)
	le.PutUint32(b[12:], a.Nlink)
}

// DecodeAttr decodes b[:AttrSize].
func DecodeAttr(b []byte) Attr {
	le := binary.LittleEndian
	return Attr{Uid: le.Uint32(b[0:]), Gid: le.Uint32(b[4:]), Ino: le.Uint32(b[8:]), Nlink: le.Uint32(b[12:])}
}

// TableSize3 returns the size of the check table of a version-3 pack:
// one CRC-32C per block of the index, the key table, the string table,
// the frame table and the attribute table, in that order.
func TableSize3(count, stringsSize, frames uint64) uint64 {
	return CRCSize * (Blocks(count*RecordSize) + Blocks(count*KeySize) + Blocks(stringsSize) +
		Blocks(frames*FrameEntrySize) + Blocks(count*AttrSize))
}

// Sizes of the fixed-size parts.
const (
	HeaderSize = 64
	FooterSize = 64
	RecordSize = 64
	// DataAlign is the alignment of every content's offset in the file.
	DataAlign = 8
	// MaxNameLen bounds an entry name (NAME_MAX on Linux is 255; the
	// record field is 16 bits).
	MaxNameLen = 1<<16 - 1
	// BlockSize is the unit in which the index, the key table and the
	// string table are checksummed: each has one CRC-32C per BlockSize
	// bytes (the last block may be shorter) in the check table before the
	// footer.
	BlockSize = 4096
	// RecordsPerBlock is how many index records one block holds.
	RecordsPerBlock = BlockSize / RecordSize
	// CRCSize is the size of one check-table entry.
	CRCSize = 4
	// KeySize is the size of one entry of the key table.
	KeySize = 8
)

// Blocks returns the number of BlockSize blocks n bytes take.
func Blocks(n uint64) uint64 { return n/BlockSize + min(n%BlockSize, 1) }

// TableSize returns the size in bytes of the check table of a pack with
// count records and a string table of stringsSize bytes: one CRC-32C per
// index block, then one per key-table block, then one per string-table
// block.
func TableSize(count, stringsSize uint64) uint64 {
	return CRCSize * (Blocks(count*RecordSize) + Blocks(count*KeySize) + Blocks(stringsSize))
}

// Key returns the key-table entry of a name: its first 8 bytes, padded
// with zero bytes, as a big-endian integer. Names hold no NUL byte, so
// keys order as names do, and names of up to 8 bytes have distinct keys.
func Key(name string) uint64 {
	var b [KeySize]byte
	copy(b[:], name)
	return binary.BigEndian.Uint64(b[:])
}

// Entry types (record byte 10).
const (
	TypeFile     = 1
	TypeDir      = 2
	TypeSymlink  = 3
	TypeWhiteout = 4
)

// Entry flags (record byte 11).
const (
	// FlagOpaque marks a directory opaque: it holds a whiteout named
	// layer.OpaqueName.
	FlagOpaque = 1 << 0
	// FlagsKnown is the set of flags the format defines.
	FlagsKnown = FlagOpaque
)

// ModeMask is the set of fs.FileMode bits a record's mode field may hold:
// permission bits plus setuid, setgid and sticky.
const ModeMask = 0o777 | 1<<23 | 1<<22 | 1<<20 // ModePerm|ModeSetuid|ModeSetgid|ModeSticky

// Castagnoli is the CRC-32C table.
var Castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is the fixed header at offset 0.
type Header struct {
	Version uint32
	Flags   uint32
}

// Encode returns the 64-byte encoding of h.
func (h Header) Encode() []byte {
	b := make([]byte, HeaderSize)
	copy(b, Magic)
	binary.LittleEndian.PutUint32(b[8:], h.Version)
	binary.LittleEndian.PutUint32(b[12:], HeaderSize)
	binary.LittleEndian.PutUint32(b[16:], h.Flags)
	return b
}

// Footer is the fixed footer in the last 64 bytes.
type Footer struct {
	IndexOff    uint64 // file offset of the first record
	Count       uint64 // number of records (>= 1: the root)
	StringsOff  uint64 // file offset of the string table
	StringsSize uint64 // its length in bytes
	DataSize    uint64 // bytes of the data region (from HeaderSize)
	Logical     uint64 // sum of regular file sizes before dedup
	CRC         uint32 // CRC-32C of header and footer[0:48] (version 3: [0:112])

	// Version 3 only.
	FramesOff  uint64 // file offset of the frame table (= StringsOff + StringsSize)
	FrameCount uint64 // frame-table entries, the sentinel included (>= 1)
	AttrsOff   uint64 // file offset of the attribute table
	Stream     uint64 // length of the raw stream (the sentinel's Pos)
	// GroupsOff is the file offset of the group directory of packed
	// tables (FlagPackedTables), 0 otherwise. With packed tables, the
	// offsets above are those the tables would have stored raw.
	GroupsOff uint64
	// The owner-names table (see EncodeNames), a content of the stream
	// no record names: NamesSize bytes from stream position NamesPos,
	// from frame NamesFirst. All zero: the pack records no names.
	NamesPos   uint64
	NamesSize  uint64
	NamesFirst uint32
}

// Encode3 returns the 128-byte encoding of a version-3 footer; CRC must
// be set by the caller.
func (f Footer) Encode3() []byte {
	b := make([]byte, FooterSize3)
	f.Put3(b)
	return b
}

// Put3 writes f into b[:FooterSize3] as a version-3 footer.
func (f Footer) Put3(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], f.IndexOff)
	le.PutUint64(b[8:], f.Count)
	le.PutUint64(b[16:], f.StringsOff)
	le.PutUint64(b[24:], f.StringsSize)
	le.PutUint64(b[32:], f.DataSize)
	le.PutUint64(b[40:], f.Logical)
	le.PutUint64(b[48:], f.FramesOff)
	le.PutUint64(b[56:], f.FrameCount)
	le.PutUint64(b[64:], f.AttrsOff)
	le.PutUint64(b[72:], f.Stream)
	le.PutUint64(b[80:], f.GroupsOff)
	le.PutUint64(b[88:], f.NamesPos)
	le.PutUint64(b[96:], f.NamesSize)
	le.PutUint32(b[104:], f.NamesFirst)
	clear(b[108:112])
	le.PutUint32(b[112:], f.CRC)
	le.PutUint32(b[116:], 0)
	copy(b[120:], EndMagic)
}

// DecodeFooter3 decodes a version-3 footer, b[:FooterSize3], and reports
// whether its reserved bytes are zero.
func DecodeFooter3(b []byte) (Footer, bool) {
	le := binary.LittleEndian
	f := Footer{
		IndexOff:    le.Uint64(b[0:]),
		Count:       le.Uint64(b[8:]),
		StringsOff:  le.Uint64(b[16:]),
		StringsSize: le.Uint64(b[24:]),
		DataSize:    le.Uint64(b[32:]),
		Logical:     le.Uint64(b[40:]),
		FramesOff:   le.Uint64(b[48:]),
		FrameCount:  le.Uint64(b[56:]),
		AttrsOff:    le.Uint64(b[64:]),
		Stream:      le.Uint64(b[72:]),
		GroupsOff:   le.Uint64(b[80:]),
		NamesPos:    le.Uint64(b[88:]),
		NamesSize:   le.Uint64(b[96:]),
		NamesFirst:  le.Uint32(b[104:]),
		CRC:         le.Uint32(b[112:]),
	}
	ok := le.Uint32(b[116:]) == 0
	for _, c := range b[108:112] {
		ok = ok && c == 0
	}
	return f, ok
}

// Encode returns the 64-byte encoding of f, computing nothing: CRC must be
// set by the caller.
func (f Footer) Encode() []byte {
	b := make([]byte, FooterSize)
	f.Put(b)
	return b
}

// Put writes f into b[:FooterSize].
func (f Footer) Put(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], f.IndexOff)
	le.PutUint64(b[8:], f.Count)
	le.PutUint64(b[16:], f.StringsOff)
	le.PutUint64(b[24:], f.StringsSize)
	le.PutUint64(b[32:], f.DataSize)
	le.PutUint64(b[40:], f.Logical)
	le.PutUint32(b[48:], f.CRC)
	le.PutUint32(b[52:], 0)
	copy(b[56:], EndMagic)
}

// DecodeFooter decodes b[:FooterSize].
func DecodeFooter(b []byte) Footer {
	le := binary.LittleEndian
	return Footer{
		IndexOff:    le.Uint64(b[0:]),
		Count:       le.Uint64(b[8:]),
		StringsOff:  le.Uint64(b[16:]),
		StringsSize: le.Uint64(b[24:]),
		DataSize:    le.Uint64(b[32:]),
		Logical:     le.Uint64(b[40:]),
		CRC:         le.Uint32(b[48:]),
	}
}

// FooterCRCLen is how many leading footer bytes the CRC covers.
const FooterCRCLen = 48

// Record is one 64-byte index record.
type Record struct {
	Parent  uint32   // index of the parent directory; the root's is 0
	NameOff uint32   // offset of the name in the string table
	NameLen uint16   // length of the name; 0 only for the root
	Type    uint8    // Type*
	Flags   uint8    // Flag*
	Mode    uint32   // fs.FileMode bits within ModeMask
	Mtime   int64    // modification time, Unix nanoseconds, or NoTime
	Size    uint64   // file: content length; symlink: target length; dir: child count
	Off     uint64   // file: file offset of content; symlink: string-table offset of target; dir: index of first child
	Sum     [16]byte // file: first 16 bytes of the content's SHA-256
	CRC     uint32   // file: CRC-32C of the content (version 3: index of the frame holding its first byte)
}

// Put writes r into b[:RecordSize].
func (r *Record) Put(b []byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], r.Parent)
	le.PutUint32(b[4:], r.NameOff)
	le.PutUint16(b[8:], r.NameLen)
	b[10] = r.Type
	b[11] = r.Flags
	le.PutUint32(b[12:], r.Mode)
	le.PutUint64(b[16:], uint64(r.Mtime))
	le.PutUint64(b[24:], r.Size)
	le.PutUint64(b[32:], r.Off)
	copy(b[40:56], r.Sum[:])
	le.PutUint32(b[56:], r.CRC)
	le.PutUint32(b[60:], 0)
}

// DecodeRecord decodes b[:RecordSize] and reports whether its reserved
// bytes are zero.
func DecodeRecord(b []byte) (r Record, ok bool) {
	ok = r.Decode(b)
	return r, ok
}

// Decode decodes b[:RecordSize] into r and reports whether its reserved
// bytes are zero.
func (r *Record) Decode(b []byte) bool {
	b = b[:RecordSize]
	le := binary.LittleEndian
	r.Parent = le.Uint32(b[0:])
	r.NameOff = le.Uint32(b[4:])
	r.NameLen = le.Uint16(b[8:])
	r.Type = b[10]
	r.Flags = b[11]
	r.Mode = le.Uint32(b[12:])
	r.Mtime = int64(le.Uint64(b[16:]))
	r.Size = le.Uint64(b[24:])
	r.Off = le.Uint64(b[32:])
	copy(r.Sum[:], b[40:56])
	r.CRC = le.Uint32(b[56:])
	return le.Uint32(b[60:]) == 0
}

// NoTime is the mtime of an entry whose time is the zero time.Time.
const NoTime = -1 << 63

// Align rounds n up to a multiple of DataAlign.
func Align(n uint64) uint64 { return (n + DataAlign - 1) &^ (DataAlign - 1) }

// Tail is what a pack's header and footer say of its layout.
type Tail struct {
	Version    uint32
	Footer     Footer
	FooterSize uint64
	TableOff   uint64 // offset of the check table
	TableSize  uint64 // its length
}

// FooterSizeOf returns the footer size of a pack whose header is hdr
// (at least 12 bytes), or 0 if hdr is not that of a version-2 or
// version-3 pack.
func FooterSizeOf(hdr []byte) uint64 {
	if len(hdr) < 12 || string(hdr[:8]) != Magic {
		return 0
	}
	switch binary.LittleEndian.Uint32(hdr[8:]) {
	case Version2:
		return FooterSize
	case Version3:
		return FooterSize3
	}
	return 0
}

// DecodeTail decodes the header hdr and the footer foot of a pack of
// size bytes (foot of the size FooterSizeOf(hdr) gives). ok is false when
// they are not those of a version-2 or version-3 pack whose check table
// lies where its footer says. It checks no CRC: packreader does.
func DecodeTail(hdr, foot []byte, size int64) (t Tail, ok bool) {
	t.FooterSize = FooterSizeOf(hdr)
	if len(hdr) < HeaderSize || t.FooterSize == 0 || uint64(len(foot)) != t.FooterSize || size < HeaderSize+int64(t.FooterSize) {
		return t, false
	}
	if string(foot[t.FooterSize-8:]) != EndMagic {
		return t, false
	}
	t.Version = binary.LittleEndian.Uint32(hdr[8:])
	end := uint64(size) - t.FooterSize
	f := &t.Footer
	if t.Version == Version3 {
		*f, _ = DecodeFooter3(foot)
		packed := binary.LittleEndian.Uint32(hdr[16:])&FlagPackedTables != 0
		if !packed && (f.Count > end/RecordSize || f.FrameCount > end/FrameEntrySize || f.StringsSize > end) {
			return t, false
		}
		t.TableOff = f.AttrsOff + f.Count*AttrSize
		t.TableSize = TableSize3(f.Count, f.StringsSize, f.FrameCount)
		ok = f.AttrsOff <= end && t.TableOff >= f.AttrsOff
		if binary.LittleEndian.Uint32(hdr[16:])&FlagPackedTables != 0 {
			if f.Count > 1<<32 || f.FrameCount > 1<<32 || f.StringsSize > 1<<40 {
				return t, false
			}
			n := TablesLayout{f.Count, f.StringsSize, f.FrameCount}.Len()
			t.TableOff = f.GroupsOff + Groups(n)*GroupEntrySize
			ok = f.GroupsOff <= end && f.GroupsOff >= f.IndexOff && t.TableOff <= end
		}
	} else {
		*f = DecodeFooter(foot)
		if f.Count > end/RecordSize || f.StringsSize > end {
			return t, false
		}
		t.TableOff = f.StringsOff + f.StringsSize
		t.TableSize = TableSize(f.Count, f.StringsSize)
		ok = f.StringsOff <= end && t.TableOff >= f.StringsOff
	}
	ok = ok && t.TableOff <= end && end-t.TableOff == t.TableSize && f.IndexOff <= t.TableOff
	return t, ok
}

// ReadTail reads the header and footer of the pack of size bytes behind
// ra and decodes them as DecodeTail does; err reports a failed read.
func ReadTail(ra io.ReaderAt, size int64) (Tail, bool, error) {
	if size < HeaderSize+FooterSize {
		return Tail{}, false, nil
	}
	var hdr [HeaderSize]byte
	if _, err := ra.ReadAt(hdr[:], 0); err != nil {
		return Tail{}, false, err
	}
	fs := FooterSizeOf(hdr[:])
	if fs == 0 || size < HeaderSize+int64(fs) {
		return Tail{}, false, nil
	}
	foot := make([]byte, fs)
	if _, err := ra.ReadAt(foot, size-int64(fs)); err != nil {
		return Tail{}, false, err
	}
	t, ok := DecodeTail(hdr[:], foot, size)
	return t, ok, nil
}

// CheckTable reads the header and footer of the pack of size bytes behind
// ra and returns where its check table starts and how long it is, for
// callers that fingerprint a pack by its check table and footer (the
// store's manifest, the server's ETags). ok is false when the header and
// footer are not those of a version-2 or version-3 pack whose check table
// lies where its footer says; err reports a failed read.
func CheckTable(ra io.ReaderAt, size int64) (off, n uint64, ok bool, err error) {
	t, ok, err := ReadTail(ra, size)
	if !ok || err != nil {
		return 0, 0, false, err
	}
	return t.TableOff, t.TableSize, true, nil
}
