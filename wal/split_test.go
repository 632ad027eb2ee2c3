package wal

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/packfs/packfs/vfs/vfstest"
)

// splitUnit returns unit i of a workload that mixes Append with
// AppendSplit, small (gathered in the buffer) and large (written to the
// segment directly, with its CRC computed beside the write from
// overlapMin on): the entry replay must give, and how to append it.
func splitUnit(i int) (unit, func(l *Log) (LSN, error)) {
	switch i % 4 {
	case 1, 3:
		size := 100
		switch {
		case i%8 == 7:
			size = overlapMin + 7*i // direct, the CRC beside
		case i%4 == 3:
			size = directMin + 7*i // direct
		}
		head := []byte{byte(i), 'h'}
		tail := bytes.Repeat([]byte{byte(i), 't', byte(i >> 8)}, size/3+1)
		return unit{append(bytes.Clone(head), tail...)}, func(l *Log) (LSN, error) { return l.AppendSplit(head, tail) }
	}
	u := makeUnit(i)
	return u, func(l *Log) (LSN, error) { return l.Append(u...) }
}

// TestIssue19AppendSplit: entries appended in two parts, some written to
// the segment directly past the buffer, replay in order between the
// others, across a Rotate and with preallocation, and the positions
// AppendSplit returns are where its entries end.
func TestIssue19AppendSplit(t *testing.T) {
	for _, prealloc := range []int64{0, 1000, 1 << 20} {
		m := vfstest.NewMemFS()
		l, _, err := replayAll(t, m, Options{Preallocate: prealloc, BufferSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		var want []unit
		for i := range 40 {
			u, app := splitUnit(i)
			want = append(want, u)
			p, err := app(l)
			if err != nil {
				t.Fatal(err)
			}
			if end := l.End(); p != end {
				t.Fatalf("prealloc %d, unit %d: position %x, the log ends at %x", prealloc, i, p, end)
			}
			if i%5 == 0 {
				if err := l.Sync(p); err != nil {
					t.Fatal(err)
				}
			}
			if i == 21 {
				if _, err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l, got, err := replayAll(t, m, Options{Preallocate: prealloc})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		if len(got) != len(want) {
			t.Fatalf("prealloc %d: replay gave %d units, want %d", prealloc, len(got), len(want))
		}
		for i := range want {
			if !unitEqual(got[i], want[i]) {
				t.Fatalf("prealloc %d: unit %d differs", prealloc, i)
			}
		}
	}
}

// TestIssue19AppendSplitCrash crashes at every file operation of a
// workload with direct writes: recovery gives a prefix holding every
// synced unit.
func TestIssue19AppendSplitCrash(t *testing.T) {
	const units = 12
	for _, prealloc := range []int64{0, 1000} {
		for _, keep := range []float64{0, 0.5} {
			for k := 0; ; k++ {
				m := vfstest.NewMemFS()
				m.CrashAt(k)
				acked := 0
				l, _, err := replayAll(t, m, Options{Preallocate: prealloc, BufferSize: 4096})
				if err == nil {
					for i := range units {
						_, app := splitUnit(i)
						p, err := app(l)
						if err == nil && i%3 != 2 {
							err = l.Sync(p)
						}
						if err != nil {
							break
						}
						if i%3 != 2 {
							acked = i + 1
						}
					}
					l.Close()
				}
				if !m.Crashed() {
					break
				}
				rec := m.Recover(vfstest.Torn{Keep: keep, Names: k%2 == 0, Rand: rand.New(rand.NewPCG(uint64(k), 3))})
				l2, got, err := replayAll(t, rec, Options{Preallocate: prealloc})
				if err != nil {
					t.Fatalf("prealloc %d, keep %.1f, crash at %d: reopen: %v", prealloc, keep, k, err)
				}
				l2.Close()
				if len(got) < acked || len(got) > units {
					t.Fatalf("prealloc %d, keep %.1f, crash at %d: %d units replayed, %d acknowledged", prealloc, keep, k, len(got), acked)
				}
				for i, u := range got {
					if w, _ := splitUnit(i); !unitEqual(u, w) {
						t.Fatalf("prealloc %d, keep %.1f, crash at %d: unit %d differs", prealloc, keep, k, i)
					}
				}
			}
		}
	}
}

// TestIssue19Writes: Writes tells an append that only joins the buffer
// from one that writes to the segment (a direct one, or one that fills
// the buffer), and a sync makes the answer false again.
func TestIssue19Writes(t *testing.T) {
	m := vfstest.NewMemFS()
	l, _, err := replayAll(t, m, Options{BufferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Writes(100) || !l.Writes(directMin) || !l.Writes(4096) {
		t.Fatalf("empty buffer: Writes(100) %v, Writes(directMin) %v, Writes(4096) %v", l.Writes(100), l.Writes(directMin), l.Writes(4096))
	}
	flushes := 0
	for range 80 {
		n := 100
		wrote := l.Writes(n)
		if wrote {
			flushes++
		}
		before := m.Ops()
		if _, err := l.Append(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if after := m.Ops(); wrote != (len(after) > len(before)) {
			t.Fatalf("Writes(%d) said %v, but the append made %d file operations", n, wrote, len(after)-len(before))
		}
	}
	if flushes == 0 {
		t.Fatal("no append filled the buffer")
	}
	p, _ := l.Append([]byte("x"))
	if err := l.Sync(p); err != nil {
		t.Fatal(err)
	}
	if l.Writes(100) {
		t.Fatal("Writes(100) after a sync")
	}
}
