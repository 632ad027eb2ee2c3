package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// unit is what a replay gives for one Append.
type unit [][]byte

func replayAll(t testing.TB, fsys vfs.FS, opts Options) (*Log, []unit, error) {
	t.Helper()
	var got []unit
	l, err := Open(fsys, opts, func(entries [][]byte) error {
		u := make(unit, len(entries))
		for i, e := range entries {
			u[i] = bytes.Clone(e)
		}
		got = append(got, u)
		return nil
	})
	return l, got, err
}

// makeUnit returns unit i of a workload: one entry, or a transaction of
// up to five, with sizes that cross sectors.
func makeUnit(i int) unit {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	n := 1
	if i%3 == 0 {
		n = 2 + r.IntN(4)
	}
	u := make(unit, n)
	for j := range u {
		u[j] = bytes.Repeat([]byte{byte(i), byte(j)}, 1+r.IntN(300))
	}
	return u
}

func TestRoundTrip(t *testing.T) {
	m := vfstest.NewMemFS()
	l, got, err := replayAll(t, m, Options{})
	if err != nil || len(got) != 0 {
		t.Fatalf("open empty: %v, %d units", err, len(got))
	}
	var want []unit
	for i := range 50 {
		u := makeUnit(i)
		want = append(want, u)
		if _, err := l.Append(u...); err != nil {
			t.Fatal(err)
		}
		if i == 20 {
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, got, err = replayAll(t, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !slices.EqualFunc(got, want, unitEqual) {
		t.Fatalf("replay gave %d units, want %d", len(got), len(want))
	}
}

func unitEqual(a, b unit) bool { return slices.EqualFunc(a, b, bytes.Equal) }

// TestCrashEveryOperation crashes the machine at every file operation of
// a workload of synced appends, recovers with and without torn tails, and
// checks that replay gives a prefix of the units holding every one whose
// Sync returned.
func TestCrashEveryOperation(t *testing.T) {
	const units = 40
	for _, prealloc := range []int64{0, 1000} {
		for _, keep := range []float64{0, 0.1, 0.5, 0.9} {
			crashEveryOperation(t, units, keep, prealloc)
		}
	}
}

func crashEveryOperation(t *testing.T, units int, keep float64, prealloc int64) {
	{
		for k := 0; ; k++ {
			m := vfstest.NewMemFS()
			m.CrashAt(k)
			acked := 0
			l, _, err := replayAll(t, m, Options{Preallocate: prealloc})
			if err == nil {
				for i := range units {
					p, err := l.Append(makeUnit(i)...)
					if err == nil && i%4 != 3 { // some units ride on a later sync
						err = l.Sync(p)
					}
					if err == nil && i == 17 {
						_, err = l.Rotate()
					}
					if err != nil {
						break
					}
					if i%4 != 3 {
						acked = i + 1
					}
				}
				l.Close()
			}
			if !m.Crashed() {
				if keep == 0 {
					t.Logf("preallocation %d: %d crash points", prealloc, k)
				}
				break
			}
			rec := m.Recover(vfstest.Torn{Keep: keep, Names: k%2 == 0, Rand: rand.New(rand.NewPCG(uint64(k), 1))})
			l2, got, err := replayAll(t, rec, Options{Preallocate: prealloc})
			if err != nil {
				t.Fatalf("keep %.1f, crash at %d: reopen: %v", keep, k, err)
			}
			if len(got) < acked || len(got) > units {
				t.Fatalf("keep %.1f, crash at %d: %d units replayed, %d acknowledged", keep, k, len(got), acked)
			}
			for i, u := range got {
				if !unitEqual(u, makeUnit(i)) {
					t.Fatalf("keep %.1f, crash at %d: unit %d differs", keep, k, i)
				}
			}
			// The log goes on after recovery, and a second replay agrees.
			if _, err := l2.Append([]byte("after")); err != nil {
				t.Fatal(err)
			}
			if err := l2.Close(); err != nil {
				t.Fatal(err)
			}
			_, again, err := replayAll(t, rec, Options{Preallocate: prealloc})
			if err != nil || len(again) != len(got)+1 {
				t.Fatalf("keep %.1f, crash at %d: second replay: %v, %d units, want %d", keep, k, err, len(again), len(got)+1)
			}
		}
	}
}

// TestCorruptDurableRecord flips a byte inside a synced record that later
// synced records follow: replay must fail with ErrCorrupt, not drop them.
func TestCorruptDurableRecord(t *testing.T) {
	m := vfstest.NewMemFS()
	l, _, err := replayAll(t, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		p, _ := l.Append(makeUnit(i)...)
		if err := l.Sync(p); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	name := segmentName(0)
	data, _ := m.Contents(name)
	for _, at := range []int{segHeaderSize + 2, segHeaderSize + 30, len(data) / 2} {
		bad := bytes.Clone(data)
		bad[at] ^= 0x40
		m.SetContents(name, bad)
		if _, _, err := replayAll(t, m, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flip at %d: %v, want ErrCorrupt", at, err)
		}
	}
	// Damage to the header of a segment that has records.
	bad := bytes.Clone(data)
	bad[3] ^= 1
	m.SetContents(name, bad)
	if _, _, err := replayAll(t, m, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("header flip: %v, want ErrCorrupt", err)
	}
	// A missing segment.
	m.SetContents(name, data)
	m2 := vfstest.NewMemFS()
	m2.SetContents(segmentName(0), data)
	m2.SetContents(segmentName(2), segmentHeader(2))
	if _, _, err := replayAll(t, m2, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("gap: %v, want ErrCorrupt", err)
	}
}

// TestStickySyncFailure: after a failed fsync, every commit fails and the
// sync is not retried.
func TestStickySyncFailure(t *testing.T) {
	for fail := 0; fail < 40; fail++ {
		m := vfstest.NewMemFS()
		f := vfstest.NewFaulty(m, fail)
		l, _, err := replayAll(t, f, Options{})
		if err != nil {
			if !errors.Is(err, vfstest.ErrInjected) {
				t.Fatalf("fail %d: open: %v", fail, err)
			}
			continue
		}
		var failed error
		acked := 0
		for i := range 10 {
			p, err := l.Append(makeUnit(i)...)
			if err == nil {
				err = l.Sync(p)
			}
			if failed != nil && err == nil {
				t.Fatalf("fail %d: unit %d committed after a failure", fail, i)
			}
			if err != nil && failed == nil {
				failed = err
			}
			if err == nil {
				acked = i + 1
			}
		}
		l.Close()
		if failed != nil && !errors.Is(failed, vfstest.ErrInjected) {
			t.Fatalf("fail %d: %v does not wrap the injected error", fail, failed)
		}
		_, got, err := replayAll(t, m.Recover(vfstest.Torn{}), Options{})
		if err != nil || len(got) < acked {
			t.Fatalf("fail %d: reopen: %v, %d units, %d acknowledged", fail, err, len(got), acked)
		}
	}
}

// TestGroupCommit: committers syncing at once share fdatasyncs.
func TestGroupCommit(t *testing.T) {
	m := vfstest.NewMemFS()
	m.SyncDelay = 200 * time.Microsecond
	l, _, err := replayAll(t, m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p, err := l.Append([]byte(fmt.Sprint(w, i)))
				if err == nil {
					err = l.Sync(p)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	l.Close()
	syncs := 0
	for _, op := range m.Ops() {
		if op == "sync "+segmentName(0) {
			syncs++
		}
	}
	t.Logf("%d commits, %d fdatasyncs", writers*each, syncs)
	if syncs > writers*each/2 {
		t.Fatalf("%d syncs for %d commits", syncs, writers*each)
	}
	_, got, err := replayAll(t, m, Options{})
	if err != nil || len(got) != writers*each {
		t.Fatalf("replay: %v, %d units", err, len(got))
	}
}

func TestReadOnly(t *testing.T) {
	m := vfstest.NewMemFS()
	l, _, _ := replayAll(t, m, Options{})
	l.Append([]byte("a"))
	l.Close()
	data, _ := m.Contents(segmentName(0))
	m.SetContents(segmentName(0), append(data, 1, 2, 3))
	r, got, err := replayAll(t, m, Options{ReadOnly: true})
	if err != nil || len(got) != 1 {
		t.Fatalf("read-only replay: %v, %d units", err, len(got))
	}
	if _, err := r.Append([]byte("b")); err == nil {
		t.Fatal("append to a read-only log succeeded")
	}
	if after, _ := m.Contents(segmentName(0)); len(after) != len(data)+3 {
		t.Fatal("read-only replay changed the segment")
	}
}

func FuzzReplay(f *testing.F) {
	m := vfstest.NewMemFS()
	l, _, _ := replayAll(f, m, Options{})
	for i := range 6 {
		l.Append(makeUnit(i)...)
	}
	l.Close()
	seed, _ := m.Contents(segmentName(0))
	f.Add(seed)
	f.Add(seed[:len(seed)-7])
	f.Add(segmentHeader(0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := vfstest.NewMemFS()
		m.SetContents(segmentName(0), data)
		l, _, err := replayAll(t, m, Options{})
		if err != nil {
			return
		}
		// Whatever survived, the log must take appends and replay them.
		l.Append([]byte("x"))
		l.Close()
		if _, _, err := replayAll(t, m, Options{}); err != nil {
			t.Fatalf("replay after recovery: %v", err)
		}
	})
}

// TestSegmentIDBound: ids past what a position can hold are refused, not
// wrapped.
func TestSegmentIDBound(t *testing.T) {
	if _, _, err := replayAll(t, vfstest.NewMemFS(), Options{First: maxSegments}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("first segment past the bound: %v", err)
	}
	l, _, err := replayAll(t, vfstest.NewMemFS(), Options{First: maxSegments - 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Rotate(); err == nil {
		t.Fatal("rotation past the last id succeeded")
	}
}
