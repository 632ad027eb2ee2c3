package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The byte layout; FORMAT.md has the tables.
const (
	segMagic      = "PACKFSWL"
	segVersion    = 1
	segHeaderSize = 32

	recMagic      = 0x52_4c_41_57 // "WALR" in little-endian order
	recHeaderSize = 24

	// MaxEntry bounds one entry, so that a damaged length can never ask
	// for more memory than a segment could hold.
	MaxEntry = 1<<31 - recHeaderSize
)

// Record types.
const (
	recEntry  = 1 // one entry, committed by itself
	recBegin  = 2 // a transaction starts: payload is its entry count (u32)
	recTx     = 3 // an entry of the open transaction
	recCommit = 4 // the open transaction commits: payload is its entry count
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segmentName is the file name of segment id.
func segmentName(id uint64) string { return fmt.Sprintf("wal-%016x.log", id) }

// parseSegmentName returns the id in a segment's file name.
func parseSegmentName(name string) (uint64, bool) {
	var id uint64
	if len(name) != len("wal-0000000000000000.log") {
		return 0, false
	}
	if _, err := fmt.Sscanf(name, "wal-%016x.log", &id); err != nil || segmentName(id) != name {
		return 0, false
	}
	return id, true
}

// segmentHeader encodes the header of segment id.
func segmentHeader(id uint64) []byte {
	h := make([]byte, segHeaderSize)
	copy(h, segMagic)
	binary.LittleEndian.PutUint32(h[8:], segVersion)
	binary.LittleEndian.PutUint64(h[16:], id)
	binary.LittleEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
	return h
}

// checkSegmentHeader validates h as the header of segment id.
func checkSegmentHeader(h []byte, id uint64) error {
	switch {
	case len(h) < segHeaderSize:
		return fmt.Errorf("segment header: %d bytes", len(h))
	case string(h[:8]) != segMagic:
		return fmt.Errorf("segment header: bad magic")
	case binary.LittleEndian.Uint32(h[24:]) != crc32.Checksum(h[:24], castagnoli):
		return fmt.Errorf("segment header: checksum mismatch")
	case binary.LittleEndian.Uint32(h[8:]) != segVersion:
		return fmt.Errorf("segment header: version %d, want %d", binary.LittleEndian.Uint32(h[8:]), segVersion)
	case binary.LittleEndian.Uint32(h[12:]) != 0 || binary.LittleEndian.Uint32(h[28:]) != 0:
		return fmt.Errorf("segment header: reserved bytes not zero")
	case binary.LittleEndian.Uint64(h[16:]) != id:
		return fmt.Errorf("segment header: id %d in the file of segment %d", binary.LittleEndian.Uint64(h[16:]), id)
	}
	return nil
}

// appendRecord appends a record to b. synced is the segment offset known
// durable when the record was made.
func appendRecord(b []byte, typ byte, synced int64, payload []byte) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, recMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, 0) // the CRC, below
	b = append(b, typ, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(synced))
	b = append(b, payload...)
	crc := crc32.Update(crc32.Checksum(b[start+4:start+8], castagnoli), castagnoli, b[start+12:])
	binary.LittleEndian.PutUint32(b[start+8:], crc)
	return b
}

// record is one decoded record.
type record struct {
	typ     byte
	synced  int64
	payload []byte // aliases the segment's bytes
	size    int    // bytes the record takes
}

// parseRecord decodes the record at the start of b, or says why there is
// none.
func parseRecord(b []byte) (record, error) {
	if len(b) < recHeaderSize {
		return record{}, fmt.Errorf("%d bytes left, a record header takes %d", len(b), recHeaderSize)
	}
	if binary.LittleEndian.Uint32(b) != recMagic {
		return record{}, fmt.Errorf("bad record magic")
	}
	n := binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-recHeaderSize) {
		return record{}, fmt.Errorf("record of %d bytes, %d left", n, len(b)-recHeaderSize)
	}
	end := recHeaderSize + int(n)
	crc := crc32.Update(crc32.Checksum(b[4:8], castagnoli), castagnoli, b[12:end])
	if binary.LittleEndian.Uint32(b[8:]) != crc {
		return record{}, fmt.Errorf("record checksum mismatch")
	}
	r := record{typ: b[12], synced: int64(binary.LittleEndian.Uint64(b[16:])), payload: b[recHeaderSize:end:end], size: end}
	if r.typ < recEntry || r.typ > recCommit || b[13]|b[14]|b[15] != 0 || r.synced < 0 {
		return record{}, fmt.Errorf("record of unknown type %d", r.typ)
	}
	if (r.typ == recBegin || r.typ == recCommit) && len(r.payload) != 4 {
		return record{}, fmt.Errorf("transaction marker of %d bytes", len(r.payload))
	}
	return r, nil
}
