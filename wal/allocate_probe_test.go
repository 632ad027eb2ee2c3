package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs/internal/testmount"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
	"github.com/packfs/packfs/wal"
)

// Probes of the block reservation that a large direct append makes
// (Allocate, eight preallocation steps past it), through the public API
// only: crashes around it, sizes after Rotate and Close, small appends
// into the reserve, mapped views across its cut, and real full disks.

// apReplay opens the log in fsys and returns what replay gave, one
// [][]byte per unit.
func apReplay(t testing.TB, fsys vfs.FS, opts wal.Options) (*wal.Log, [][][]byte, error) {
	t.Helper()
	var got [][][]byte
	l, err := wal.Open(fsys, opts, func(entries [][]byte) error {
		u := make([][]byte, len(entries))
		for i, e := range entries {
			u[i] = bytes.Clone(e)
		}
		got = append(got, u)
		return nil
	})
	return l, got, err
}

// apOff is the byte offset in its segment of p (FORMAT.md: the low 40
// bits).
func apOff(p wal.LSN) int64 { return int64(uint64(p) & (1<<40 - 1)) }

func apSegment(id uint64) string { return fmt.Sprintf("wal-%016x.log", id) }

// apUnit is unit i of the probes' workload: large direct entries (both
// the plain and the overlapped-CRC path), small ones, split ones under
// the direct size, and transactions.
func apUnit(i int) (head, tail []byte, tx [][]byte) {
	r := rand.New(rand.NewPCG(uint64(i), 19))
	fill := func(n int) []byte {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i) ^ byte(j*7) ^ byte(j>>9)
		}
		return b
	}
	switch i % 5 {
	case 0:
		return fill(1 + r.IntN(40)), fill(32<<10 + r.IntN(20<<10)), nil
	case 1:
		return fill(1 + r.IntN(300)), nil, nil
	case 2:
		return nil, nil, [][]byte{fill(1 + r.IntN(100)), fill(1 + r.IntN(2000)), fill(7)}
	case 3:
		return fill(9), fill(256<<10 + r.IntN(8<<10)), nil
	}
	return fill(5), fill(1 + r.IntN(30<<10)), nil
}

// apWant is unit i as replay gives it.
func apWant(i int) [][]byte {
	head, tail, tx := apUnit(i)
	if tx != nil {
		return tx
	}
	return [][]byte{append(bytes.Clone(head), tail...)}
}

// apAppend appends unit i.
func apAppend(l *wal.Log, i int) (wal.LSN, error) {
	head, tail, tx := apUnit(i)
	switch {
	case tx != nil:
		return l.Append(tx...)
	case tail == nil:
		return l.Append(head)
	}
	return l.AppendSplit(head, tail)
}

// apCheck fails unless got is units from..from+len(got) of the workload,
// at least min of them and at most max.
func apCheck(t *testing.T, what string, got [][][]byte, from, min, max int) {
	t.Helper()
	if len(got) < min || len(got) > max {
		t.Fatalf("%s: %d units replayed, want %d to %d", what, len(got), min, max)
	}
	for i, u := range got {
		if !slices.EqualFunc(u, apWant(from+i), bytes.Equal) {
			t.Fatalf("%s: unit %d differs", what, from+i)
		}
	}
}

// TestAllocateProbeCrashSweep stops the machine at every operation of a
// workload of large direct appends (which reserve), small ones and
// transactions, syncs, two Rotates (which cut the reserve) and a Close
// (which cuts it and syncs the slot), and recovers what a power cut
// leaves, reserved zeros and torn sectors included: every acknowledged
// unit replays, in order, and the recovered log takes large appends again
// and reopens whole.
func TestAllocateProbeCrashSweep(t *testing.T) {
	const units = 18
	opts := wal.Options{Preallocate: 4096, BufferSize: 4096}
	step := 1
	if testsize.Short() {
		step = 2
	}
	crashes := 0
	for k := 0; ; k += step {
		m := vfstest.NewMemFS()
		m.CrashAt(k)
		acked, appended := 0, 0
		l, _, err := apReplay(t, m, opts)
		if err == nil {
			for i := range units {
				var p wal.LSN
				if p, err = apAppend(l, i); err != nil {
					break
				}
				appended = i + 1
				switch {
				case i == 7 || i == 13:
					_, err = l.Rotate()
				case i%3 == 2:
					err = l.Sync(p)
				}
				if err != nil {
					break
				}
				if i == 7 || i == 13 || i%3 == 2 {
					acked = i + 1
				}
			}
			if err == nil {
				if err = l.Close(); err == nil {
					acked = units
				}
			} else {
				l.Close()
			}
		}
		if !m.Crashed() {
			if err != nil {
				t.Fatalf("no crash: %v", err)
			}
			break
		}
		crashes++
		for c, torn := range []vfstest.Torn{
			{},
			{Keep: 0.5, Names: true, Rand: rand.New(rand.NewPCG(uint64(k), 1))},
			{Keep: 1, Names: true},
		} {
			what := fmt.Sprintf("crash at %d (op %d of the run), cut %d", k, len(m.Ops()), c)
			rec := m.Recover(torn)
			l2, got, err := apReplay(t, rec, opts)
			if err != nil {
				t.Fatalf("%s: reopen: %v", what, err)
			}
			apCheck(t, what, got, 0, acked, appended)
			// The recovered log goes on: a large append reserves again
			// in a segment whose reserve replay cut, and all of it
			// reopens.
			n := len(got)
			for i := n; i < n+3; i++ {
				if _, err := apAppend(l2, i); err != nil {
					t.Fatalf("%s: append %d after recovery: %v", what, i, err)
				}
			}
			if err := l2.Close(); err != nil {
				t.Fatalf("%s: close after recovery: %v", what, err)
			}
			l3, got, err := apReplay(t, rec.Recover(vfstest.Torn{}), opts)
			if err != nil {
				t.Fatalf("%s: second reopen: %v", what, err)
			}
			l3.Close()
			apCheck(t, what+", second reopen", got, 0, n+3, n+3)
		}
	}
	if crashes < 30 {
		t.Fatalf("only %d crash points: the workload does not reach its operations", crashes)
	}
}

// TestAllocateProbeSmallIntoReserve: after a large append has reserved
// blocks and been synced, small appends (gathered, flushed when the
// buffer fills, and synced) write into the reserve rather than grow the
// file, and a power cut that keeps any share of the reserve and of them
// replays every synced unit; Close then ends the file in its last record.
func TestAllocateProbeSmallIntoReserve(t *testing.T) {
	const prealloc = 16 << 10
	m := vfstest.NewMemFS()
	opts := wal.Options{Preallocate: prealloc, BufferSize: 4096}
	l, _, err := apReplay(t, m, opts)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("B"), 40<<10)
	p, err := l.AppendSplit([]byte("h"), big)
	if err == nil {
		err = l.Sync(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	seg := apSegment(0)
	reserved, _ := m.Contents(seg)
	if int64(len(reserved)) < apOff(p)+7*prealloc {
		t.Fatalf("segment of %d bytes after a large append ending at %d: no reserve", len(reserved), apOff(p))
	}
	// 60 small entries of 100 bytes: 7.4 KiB, well within the reserve.
	small := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 100) }
	for i := range 60 {
		if p, err = l.Append(small(i)); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			if err := l.Sync(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if now, _ := m.Contents(seg); len(now) != len(reserved) {
		t.Errorf("small appends into the reserve changed the segment's size from %d to %d", len(reserved), len(now))
	}
	for _, keep := range []float64{0, 0.3, 1} {
		_, got, err := apReplay(t, m.Recover(vfstest.Torn{Keep: keep}), opts)
		if err != nil || len(got) != 61 {
			t.Fatalf("keep %.1f: power cut after small appends into the reserve: %d units of 61, %v", keep, len(got), err)
		}
		if !bytes.Equal(got[0][0], append([]byte("h"), big...)) {
			t.Fatalf("keep %.1f: the large entry differs", keep)
		}
		for i := range 60 {
			if !bytes.Equal(got[1+i][0], small(i)) {
				t.Fatalf("keep %.1f: small entry %d differs", keep, i)
			}
		}
	}
	end := apOff(l.End())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if now, _ := m.Contents(seg); int64(len(now)) != end {
		t.Fatalf("closed segment of %d bytes, its records end at %d", len(now), end)
	}
}

// TestAllocateProbeHostSizes runs large and small appends, Rotates and
// reopens on the host's file system, where Allocate is fallocate: every
// segment a Rotate leaves, and the last one once closed, is exactly its
// records long and holds no blocks past them, and each reopen replays
// all.
func TestAllocateProbeHostSizes(t *testing.T) {
	const prealloc = 64 << 10
	dir := t.TempDir()
	d, err := vfs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := wal.Options{Preallocate: prealloc, BufferSize: 8192}
	ends := map[uint64]int64{} // a segment's records' end, as its log said
	next := 0
	for round := range 3 {
		l, got, err := apReplay(t, d, opts)
		if err != nil {
			t.Fatalf("round %d: open: %v", round, err)
		}
		apCheck(t, fmt.Sprintf("round %d", round), got, 0, next, next)
		fresh := true // no large append since the open or the Rotate
		for i := next; i < next+12; i++ {
			if _, err := apAppend(l, i); err != nil {
				t.Fatal(err)
			}
			if _, tail, _ := apUnit(i); fresh && len(tail) >= 32<<10 {
				// The first large append of a segment reserves real
				// blocks, eight steps past itself.
				fresh = false
				st, err := os.Stat(filepath.Join(dir, apSegment(l.End().Segment())))
				if err != nil {
					t.Fatal(err)
				}
				if end := apOff(l.End()); st.Size() < end+8*prealloc {
					t.Errorf("round %d, unit %d: segment of %d bytes, records end at %d: no reserve", round, i, st.Size(), end)
				}
			}
			if i%6 == 5 {
				e := l.End()
				if _, err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
				ends[e.Segment()] = apOff(e)
				fresh = true
			}
		}
		next += 12
		e := l.End()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		ends[e.Segment()] = apOff(e)
		for id, end := range ends {
			st, err := os.Stat(filepath.Join(dir, apSegment(id)))
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() != end {
				t.Errorf("round %d: %s of %d bytes, its records end at %d", round, apSegment(id), st.Size(), end)
			}
			// fallocate's blocks past the cut are given back (a 4 KiB
			// block and an extent block of slack).
			if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks > (end+4095)/4096*4096+8192 {
				t.Errorf("round %d: %s of %d bytes holds %d bytes of blocks", round, apSegment(id), end, blocks)
			}
		}
	}
}

// TestAllocateProbeMappedAcrossCut: views of large entries that
// AppendMapped hands out, across 64 MiB windows, stay readable and
// exact after the Rotate and the Close that cut the reserve past them:
// a cut below a view's bytes would fault (SIGBUS) or read zeros.
func TestAllocateProbeMappedAcrossCut(t *testing.T) {
	dir := t.TempDir()
	d, err := vfs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := apReplay(t, d, wal.Options{Preallocate: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	n := 20
	if !testsize.Short() {
		n = 80 // past the first 64 MiB window
	}
	type kept struct {
		view []byte
		m    *wal.Mapping
		i    int
	}
	var views []kept
	data := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8), 0x5a}, (1<<20+i*4099)/3) }
	for i := range n {
		_, v, m, err := l.AppendMapped([]byte{byte(i)}, data(i))
		if err != nil {
			t.Fatal(err)
		}
		if v != nil {
			views = append(views, kept{v, m, i})
		}
		if i == n/2 {
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(views) < n/2 {
		t.Fatalf("%d views of %d appends", len(views), n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, k := range views {
		if !bytes.Equal(k.view, data(k.i)) {
			t.Fatalf("view of entry %d differs after Rotate and Close", k.i)
		}
	}
}

// TestAllocateProbeFullTmpfs fills a real, small disk with large synced
// appends: the append or sync that finds no room fails with ENOSPC, and
// everything synced before it replays after a reopen, in a last segment
// exactly its records long; once room is made the log takes appends
// again, and they replay too.
func TestAllocateProbeFullTmpfs(t *testing.T) {
	mnt := testmount.Mount(t, "tmpfs", 4<<20)
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := vfs.OpenDir(filepath.Join(mnt, "log"))
	if err != nil {
		t.Fatal(err)
	}
	opts := wal.Options{Preallocate: 64 << 10}
	l, _, err := apReplay(t, d, opts)
	if err != nil {
		t.Fatal(err)
	}
	entry := func(i int) []byte { return bytes.Repeat([]byte{byte(i), 0xa5}, 100<<10+i*611) }
	acked := 0
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("the disk never filled")
		}
		p, err := l.AppendSplit(nil, entry(i))
		if err == nil {
			err = l.Sync(p)
		}
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("entry %d on a full disk: %v, want ENOSPC", i, err)
			}
			break
		}
		acked = i + 1
	}
	l.Close() // fails: the log failed
	check := func(what string, want int) *wal.Log {
		t.Helper()
		l, got, err := apReplay(t, d, opts)
		if err != nil {
			t.Fatalf("%s: reopen: %v", what, err)
		}
		if len(got) != want {
			t.Fatalf("%s: %d units replayed, want %d", what, len(got), want)
		}
		for i, u := range got {
			if len(u) != 1 || !bytes.Equal(u[0], entry(i)) {
				t.Fatalf("%s: entry %d differs", what, i)
			}
		}
		st, err := os.Stat(filepath.Join(mnt, "log", apSegment(l.End().Segment())))
		if err != nil || st.Size() != apOff(l.End()) {
			t.Fatalf("%s: last segment: %v, %d bytes, records end at %d", what, err, st.Size(), apOff(l.End()))
		}
		return l
	}
	l = check("after the full disk", acked)
	l.Close()
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	l = check("with room again", acked)
	for i := acked; i < acked+4; i++ {
		p, err := l.AppendSplit(nil, entry(i))
		if err == nil {
			err = l.Sync(p)
		}
		if err != nil {
			t.Fatalf("entry %d with 1 MiB free again: %v", i, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check("after the room was used", acked+4).Close()
}

// TestAllocateProbeRefusedReserveHoldsNoDisk: a large append on a disk
// with room for it but not for it and its reserve, synced and not yet
// closed, leaves the rest of the disk free for others, as it did before
// the reserve: "a refused reservation fails nothing". On tmpfs a
// refused fallocate gives back what it took; on ext4 it keeps the blocks
// it found, the file grown over them, until Rotate or Close, so that the
// disk is full and a 1 MiB write beside the log fails with ENOSPC.
func TestAllocateProbeRefusedReserveHoldsNoDisk(t *testing.T) {
	for _, kind := range []string{"tmpfs", "ext4"} {
		t.Run(kind, func(t *testing.T) {
			const prealloc = 1 << 20 // the store's step on a host directory
			mnt := testmount.Mount(t, kind, 32<<20)
			d, err := vfs.OpenDir(filepath.Join(mnt, "log"))
			if err != nil {
				t.Fatal(err)
			}
			l, _, err := apReplay(t, d, wal.Options{Preallocate: prealloc})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			free := testmount.Free(t, mnt)
			// Room for the entry and the step of zeros its sync writes,
			// with 3 MiB to spare: not for eight steps past it.
			big := make([]byte, free-prealloc-3<<20)
			p, err := l.AppendSplit(nil, big)
			if err == nil {
				err = l.Sync(p)
			}
			if err != nil {
				t.Fatalf("an entry of %d bytes with %d free: %v", len(big), free, err)
			}
			left := testmount.Free(t, mnt)
			werr := os.WriteFile(filepath.Join(mnt, "beside"), make([]byte, 1<<20), 0o644)
			if werr == nil {
				werr = os.Remove(filepath.Join(mnt, "beside"))
			}
			if left < 2<<20 || werr != nil {
				t.Errorf("%d bytes free before an entry of %d bytes, %d after it (its log open): a 1 MiB file beside it: %v", free, len(big), left, werr)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if after := testmount.Free(t, mnt); after < free-int64(len(big))-1<<20 {
				t.Errorf("%d bytes free after Close, %d before an entry of %d bytes: the reserve was not given back", after, free, len(big))
			}
		})
	}
}

// TestAllocateProbeFaultSweepRotateClose fails every operation in turn of
// a workload that reserves, rotates, reserves again and closes, in each
// way a failure can go: no failure but a refused allocation fails an
// append or Close, and any failure leaves a log that reopens with every
// acknowledged unit, the cut or not of its reserve notwithstanding.
func TestAllocateProbeFaultSweepRotateClose(t *testing.T) {
	const units = 15
	opts := wal.Options{Preallocate: 4096, BufferSize: 4096}
	allocs := 0
	for fail := 0; ; fail++ {
		m := vfstest.NewMemFS()
		f := vfstest.NewFaulty(m, fail)
		l, _, err := apReplay(t, f, opts)
		if err != nil {
			continue
		}
		acked := 0
		for i := range units {
			var p wal.LSN
			if p, err = apAppend(l, i); err != nil {
				break
			}
			if i == 6 || i == 11 {
				_, err = l.Rotate()
			} else if i%4 == 3 {
				err = l.Sync(p)
			}
			if err != nil {
				break
			}
			if i == 6 || i == 11 || i%4 == 3 {
				acked = i + 1
			}
		}
		var closeErr error
		if err == nil {
			if closeErr = l.Close(); closeErr == nil {
				acked = units
			}
		} else {
			l.Close()
		}
		if !f.Failed() {
			if err != nil || closeErr != nil {
				t.Fatalf("no fault: %v, close %v", err, closeErr)
			}
			break
		}
		if strings.HasPrefix(f.Failure(), "allocate ") {
			allocs++
			if err != nil || closeErr != nil {
				t.Fatalf("fail %d (%s): a refused allocation failed the log: %v, close %v", fail, f.Failure(), err, closeErr)
			}
		}
		for _, torn := range []vfstest.Torn{{}, {Keep: 1, Names: true}} {
			what := fmt.Sprintf("fail %d (%s), keep %.0f", fail, f.Failure(), torn.Keep)
			for _, fsys := range []*vfstest.MemFS{m, m.Recover(torn)} {
				l2, got, err := apReplay(t, fsys, opts)
				if err != nil {
					t.Fatalf("%s: reopen: %v", what, err)
				}
				l2.Close()
				apCheck(t, what, got, 0, acked, units)
			}
		}
	}
	if allocs < 3 {
		t.Fatalf("%d allocations failed: the workload does not reach them", allocs)
	}
}
