// Package packformat holds the constants and record codecs of the pack file
// format shared by packwriter and packreader. The format is specified in
// packreader/FORMAT.md; this package only encodes and decodes fixed-size
// records and validates nothing beyond their shape.
package packformat

import (
	"encoding/binary"
	"hash/crc32"
)

// Magic opens every pack (header) and closes it (last 8 bytes of the footer).
const (
	Magic    = "\x89PACKFS\n"
	EndMagic = "PACKEND\n"
)

// Version is the only format version this code reads and writes.
// Version 1 checked its index and string table with one CRC-32C at open;
// version 2 checks them block by block (see BlockSize) and adds the key
// table (see Key).
const Version = 2

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
	CRC         uint32 // CRC-32C of header and footer[0:48]
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
	CRC     uint32   // file: CRC-32C of the content
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
