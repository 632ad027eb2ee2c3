package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/packfs/packfs/vfs/vfstest"
)

// syncedLog writes units synced one by one into a log of three segments
// (rotated after units 5 and 10), closes it, and returns its directory.
func syncedLog(t *testing.T, prealloc int64) *vfstest.MemFS {
	t.Helper()
	m := vfstest.NewMemFS()
	l, _, err := replayAll(t, m, Options{Preallocate: prealloc})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 15 {
		p, err := l.Append(makeUnit(i)...)
		if err == nil {
			err = l.Sync(p)
		}
		if err == nil && (i == 5 || i == 10) {
			_, err = l.Rotate()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestIssue14DamageNoCrashExplains damages each segment of a log whose
// every unit was synced: removed, emptied, cut in the middle of its
// records, or cut by its last record. None of it a crash can leave, and
// each loses synced units: replay must fail with ErrCorrupt, never give
// fewer units.
func TestIssue14DamageNoCrashExplains(t *testing.T) {
	for _, prealloc := range []int64{0, 1000} {
		m := syncedLog(t, prealloc)
		for id := uint64(0); id < 3; id++ {
			name := segmentName(id)
			data, _ := m.Contents(name)
			end := recordsEnd(data)
			last := data[:end]
			if r := lastRecord(data); r > 0 {
				last = data[:r]
			}
			for _, d := range []struct {
				what string
				data []byte // nil: removed
			}{
				{"removed", nil},
				{"emptied", []byte{}},
				{"header only", data[:segHeaderSize]},
				{"cut in the middle", data[:segHeaderSize+(end-segHeaderSize)/2]},
				{"cut by its last record", last},
			} {
				c := m.Recover(vfstest.Torn{})
				if d.data == nil {
					c.Remove(name)
				} else {
					c.SetContents(name, d.data)
				}
				for _, ro := range []bool{true, false} {
					_, got, err := replayAll(t, c, Options{ReadOnly: ro, FirstExists: true})
					if !errors.Is(err, ErrCorrupt) {
						t.Errorf("prealloc %d, segment %d %s (read-only %v): %v and %d units, want ErrCorrupt", prealloc, id, d.what, ro, err, len(got))
					}
				}
			}
		}
	}
}

// recordsEnd returns where the records of a segment end.
func recordsEnd(b []byte) int {
	off := segHeaderSize
	for off < len(b) {
		r, err := parseRecord(b[off:])
		if err != nil {
			break
		}
		off += r.size
	}
	return off
}

// lastRecord returns the offset of the last record in a segment.
func lastRecord(b []byte) int {
	off, last := segHeaderSize, 0
	for off < len(b) {
		r, err := parseRecord(b[off:])
		if err != nil {
			break
		}
		last, off = off, off+r.size
	}
	return last
}

// TestIssue14TornTailsStillRecover: what a crash leaves still replays: a
// torn record after the last synced one, the preallocated zeros, and a
// last segment created but never synced.
func TestIssue14TornTailsStillRecover(t *testing.T) {
	m := syncedLog(t, 1000)
	data, _ := m.Contents(segmentName(2))
	c := m.Recover(vfstest.Torn{})
	c.SetContents(segmentName(2), append(bytes.Clone(data), 0x57, 0x41, 0x4c, 0x52, 9, 9))
	c.SetContents(segmentName(3), nil) // Rotate's next, before its header: its predecessor is not sealed
	if _, got, err := replayAll(t, c, Options{FirstExists: true}); !errors.Is(err, ErrCorrupt) {
		// segment 2 is not sealed, yet followed by 3, and ends in a torn
		// record: only a crash in Rotate leaves an unsealed segment
		// before the last, and Rotate cuts the segment first.
		t.Fatalf("unsealed segment with a torn tail before another: %v, %d units", err, len(got))
	}
	c.Remove(segmentName(3))
	l, got, err := replayAll(t, c, Options{FirstExists: true})
	if err != nil || len(got) != 15 {
		t.Fatalf("torn tail: %v, %d units, want 15", err, len(got))
	}
	// A crash in Rotate after the next segment was made, before the seal.
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	c.SetContents(segmentName(2), data[:recordsEnd(data)]) // unsealed, cut to its records
	if _, got, err := replayAll(t, c, Options{ReadOnly: true, FirstExists: true}); err != nil || len(got) != 15 {
		t.Fatalf("crash before the seal, read-only: %v, %d units", err, len(got))
	}
	l, got, err = replayAll(t, c, Options{FirstExists: true})
	if err != nil || len(got) != 15 {
		t.Fatalf("crash before the seal: %v, %d units", err, len(got))
	}
	if _, err := l.Append([]byte("x")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// The reopen sealed segment 2: removing segment 3 is now damage.
	c.Remove(segmentName(3))
	if _, _, err := replayAll(t, c, Options{FirstExists: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("sealed segment's successor removed: %v", err)
	}
}

// TestIssue14Version1Segments: a log of version-1 segments, written before
// the slot existed, still replays, takes appends, and rotates into a
// version-2 segment.
func TestIssue14Version1Segments(t *testing.T) {
	m := vfstest.NewMemFS()
	var want []unit
	for id := uint64(0); id < 2; id++ {
		b := v1Header(id)
		for i := range 4 {
			u := makeUnit(int(id)*4 + i)
			want = append(want, u)
			if len(u) == 1 {
				b = appendRecord(b, recEntry, v1HeaderSize, u[0])
				continue
			}
			var count [4]byte
			binary.LittleEndian.PutUint32(count[:], uint32(len(u)))
			b = appendRecord(b, recBegin, v1HeaderSize, count[:])
			for _, e := range u {
				b = appendRecord(b, recTx, v1HeaderSize, e)
			}
			b = appendRecord(b, recCommit, v1HeaderSize, count[:])
		}
		m.SetContents(segmentName(id), b)
	}
	l, got, err := replayAll(t, m, Options{})
	if err != nil || !slices.EqualFunc(got, want, unitEqual) {
		t.Fatalf("version-1 replay: %v, %d units, want %d", err, len(got), len(want))
	}
	for i := 8; i < 12; i++ {
		u := makeUnit(i)
		want = append(want, u)
		p, err := l.Append(u...)
		if err == nil {
			err = l.Sync(p)
		}
		if err == nil && i == 9 {
			_, err = l.Rotate()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if b, _ := m.Contents(segmentName(2)); binary.LittleEndian.Uint32(b[8:]) != segVersion {
		t.Fatalf("the segment after a version-1 one is version %d", binary.LittleEndian.Uint32(b[8:]))
	}
	if _, got, err = replayAll(t, m, Options{}); err != nil || !slices.EqualFunc(got, want, unitEqual) {
		t.Fatalf("replay after appends: %v, %d units, want %d", err, len(got), len(want))
	}
}

// v1Header is the 32-byte header of a version-1 segment.
func v1Header(id uint64) []byte {
	h := make([]byte, v1HeaderSize)
	copy(h, segMagic)
	binary.LittleEndian.PutUint32(h[8:], 1)
	binary.LittleEndian.PutUint64(h[16:], id)
	binary.LittleEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
	return h
}

// TestIssue14KilledThenPowerCut: a process killed with appends written
// but not synced leaves them in the page cache, where the next process
// replays them; a power cut during its first sync may still lose them.
// The slot and the records that sync writes must not claim them durable.
func TestIssue14KilledThenPowerCut(t *testing.T) {
	for seed := range uint64(40) {
		m := vfstest.NewMemFS()
		l, _, err := replayAll(t, m, Options{BufferSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			p, err := l.Append(makeUnit(i)...) // written at once: the buffer holds one byte
			if err == nil && i < 5 {
				err = l.Sync(p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		// Killed: l is abandoned, its last five units unsynced.
		l2, got, err := replayAll(t, m, Options{})
		if err != nil || len(got) != 10 {
			t.Fatalf("after the kill: %v, %d units", err, len(got))
		}
		p, err := l2.Append(makeUnit(10)...)
		if err != nil {
			t.Fatal(err)
		}
		m.CrashAt(m.Count() + 2) // the data write and the slot's, then the sync fails
		if err := l2.Sync(p); err == nil {
			t.Fatal("sync after the crash succeeded")
		}
		rec := m.Recover(vfstest.Torn{Keep: 0.5, Rand: rand.New(rand.NewPCG(seed, 3))})
		if _, got, err := replayAll(t, rec, Options{}); err != nil || len(got) < 5 {
			t.Fatalf("seed %d: power cut after the kill: %v, %d units, want at least 5", seed, err, len(got))
		}
	}
}
