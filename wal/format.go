package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The byte layout; FORMAT.md has the tables.
const (
	segMagic   = "PACKFSWL"
	segVersion = 2
	// segHeaderSize is the header of a version-2 segment: the fixed
	// header, then the slot, which Sync rewrites.
	segHeaderSize = 64
	// v1HeaderSize is the header of a version-1 segment, which has no
	// slot; such segments are still read, and appended to.
	v1HeaderSize = 32
	slotOff      = 32
	slotSize     = 16

	recMagic      = 0x52_4c_41_57 // "WALR" in little-endian order
	recHeaderSize = 24

	// MaxEntry bounds one entry, so that a damaged length can never ask
	// for more memory than a segment could hold.
	MaxEntry = 1<<31 - recHeaderSize
)

// Slot flags.
const (
	// slotSealed says the log goes on in the next segment, and that this
	// one ends exactly at the slot's offset.
	slotSealed = 1 << 0
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

// segmentHeader encodes the header of a new segment id, its slot saying
// that the header alone is durable.
func segmentHeader(id uint64) []byte {
	h := make([]byte, segHeaderSize)
	copy(h, segMagic)
	binary.LittleEndian.PutUint32(h[8:], segVersion)
	binary.LittleEndian.PutUint64(h[16:], id)
	binary.LittleEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
	copy(h[slotOff:], encodeSlot(id, segHeaderSize, 0))
	return h
}

// encodeSlot encodes the slot of segment id: the offset known durable,
// and the flags.
func encodeSlot(id uint64, durable int64, flags uint32) []byte {
	b := make([]byte, slotSize)
	binary.LittleEndian.PutUint64(b, uint64(durable))
	binary.LittleEndian.PutUint32(b[8:], flags)
	binary.LittleEndian.PutUint32(b[12:], slotCRC(id, b))
	return b
}

// slotCRC is the CRC-32C of the segment id and the slot's first 12 bytes:
// a slot copied from another segment does not check.
func slotCRC(id uint64, slot []byte) uint32 {
	var idb [8]byte
	binary.LittleEndian.PutUint64(idb[:], id)
	return crc32.Update(crc32.Checksum(idb[:], castagnoli), castagnoli, slot[:12])
}

// segHeader is a decoded segment header.
type segHeader struct {
	version uint32
	size    int   // bytes before the first record
	durable int64 // the slot's offset known durable; the header size for version 1
	sealed  bool
}

// checkSegmentHeader validates the header at the start of b as the
// header of segment id, and decodes it.
func checkSegmentHeader(b []byte, id uint64) (segHeader, error) {
	if len(b) < v1HeaderSize {
		return segHeader{}, fmt.Errorf("segment header: %d bytes", len(b))
	}
	le := binary.LittleEndian
	h := segHeader{version: le.Uint32(b[8:])}
	switch {
	case string(b[:8]) != segMagic:
		return h, fmt.Errorf("segment header: bad magic")
	case le.Uint32(b[24:]) != crc32.Checksum(b[:24], castagnoli):
		return h, fmt.Errorf("segment header: checksum mismatch")
	case h.version != 1 && h.version != segVersion:
		return h, fmt.Errorf("segment header: version %d, this code reads 1 and %d", h.version, segVersion)
	case le.Uint32(b[12:]) != 0 || le.Uint32(b[28:]) != 0:
		return h, fmt.Errorf("segment header: reserved bytes not zero")
	case le.Uint64(b[16:]) != id:
		return h, fmt.Errorf("segment header: id %d in the file of segment %d", le.Uint64(b[16:]), id)
	}
	if h.version == 1 {
		h.size, h.durable = v1HeaderSize, v1HeaderSize
		return h, nil
	}
	if len(b) < segHeaderSize {
		return h, fmt.Errorf("segment header: %d bytes", len(b))
	}
	slot := b[slotOff : slotOff+slotSize]
	flags := le.Uint32(slot[8:])
	h.size, h.durable, h.sealed = segHeaderSize, int64(le.Uint64(slot)), flags&slotSealed != 0
	switch {
	case le.Uint32(slot[12:]) != slotCRC(id, slot):
		return h, fmt.Errorf("segment slot: checksum mismatch")
	case flags&^slotSealed != 0 || !allZero(b[slotOff+slotSize:segHeaderSize]):
		return h, fmt.Errorf("segment slot: reserved bits not zero")
	case h.durable < segHeaderSize || h.durable > 1<<offsetBits-1:
		return h, fmt.Errorf("segment slot: durable offset %d", h.durable)
	}
	return h, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
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

// appendRecordSplit appends a record whose payload is head followed by
// tail.
func appendRecordSplit(b []byte, typ byte, synced int64, head, tail []byte) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, recMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(head)+len(tail)))
	b = binary.LittleEndian.AppendUint32(b, 0) // the CRC, below
	b = append(b, typ, 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(synced))
	b = append(b, head...)
	b = append(b, tail...)
	binary.LittleEndian.PutUint32(b[start+8:], recordCRC(b[start:], nil))
	return b
}

// recordCRC is the CRC of the record that starts rec, with more bytes of
// payload after those rec holds: its length field, then its type, synced
// offset and payload.
func recordCRC(rec, more []byte) uint32 {
	crc := crc32.Update(crc32.Checksum(rec[4:8], castagnoli), castagnoli, rec[12:])
	return crc32.Update(crc, castagnoli, more)
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
