package wal

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs/internal/testmount"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// segmentSizes returns the size of each segment file in m.
func segmentSizes(t *testing.T, m *vfstest.MemFS) map[string]int {
	t.Helper()
	sizes := map[string]int{}
	for _, n := range m.Files() {
		if strings.HasPrefix(n, "wal-") {
			data, _ := m.Contents(n)
			sizes[n] = len(data)
		}
	}
	return sizes
}

// TestIssue19AllocateAhead: a large direct append reserves the segment's
// blocks ahead of it, in one allocation for several appends; Rotate and
// Close cut the reserve off, so that a closed log ends in its last
// record; and a crash with the reserve in place replays every synced unit.
func TestIssue19AllocateAhead(t *testing.T) {
	const prealloc = 64 << 10
	m := vfstest.NewMemFS()
	l, _, err := replayAll(t, m, Options{Preallocate: prealloc})
	if err != nil {
		t.Fatal(err)
	}
	tail := bytes.Repeat([]byte("t"), directMin)
	var p LSN
	for range 4 {
		if p, err = l.AppendSplit([]byte("h"), tail); err != nil {
			t.Fatal(err)
		}
	}
	allocs := 0
	for _, op := range m.Ops() {
		if strings.HasPrefix(op, "allocate ") {
			allocs++
		}
	}
	if allocs != 1 {
		t.Errorf("4 appends of %d bytes made %d allocations, want 1: %q", directMin, allocs, m.Ops())
	}
	seg := segmentName(0)
	if size := segmentSizes(t, m)[seg]; int64(size) < l.written+prealloc {
		t.Errorf("segment of %d bytes after records ending at %d: nothing reserved", size, l.written)
	}
	if err := l.Sync(p); err != nil {
		t.Fatal(err)
	}
	// A crash now keeps the reserve, written or not: replay reads it as
	// a torn tail.
	for _, keep := range []float64{0, 0.5, 1} {
		_, got, err := replayAll(t, m.Recover(vfstest.Torn{Keep: keep}), Options{Preallocate: prealloc})
		if err != nil || len(got) != 4 {
			t.Fatalf("keep %.1f: replay after a crash with the reserve: %d units, %v", keep, len(got), err)
		}
	}
	end := l.written
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if size := segmentSizes(t, m)[seg]; int64(size) != end {
		t.Errorf("rotated segment of %d bytes, its records end at %d", size, end)
	}
	for range 3 {
		if _, err = l.AppendSplit([]byte("h"), tail); err != nil {
			t.Fatal(err)
		}
	}
	end = int64(uint64(l.End()) & (1<<offsetBits - 1))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if size := segmentSizes(t, m)[segmentName(1)]; int64(size) != end {
		t.Errorf("closed segment of %d bytes, its records end at %d", size, end)
	}
	// The cut is durable: a power cut after Close changes nothing.
	if got := segmentSizes(t, m.Recover(vfstest.Torn{}))[segmentName(1)]; int64(got) != end {
		t.Errorf("closed segment after a power cut: %d bytes, its records end at %d", got, end)
	}
	_, got, err := replayAll(t, m, Options{Preallocate: prealloc})
	if err != nil || len(got) != 7 {
		t.Fatalf("reopen: %d units, %v", len(got), err)
	}
}

// refusingFS gives files whose Allocate fails: with ENOSPC after growing
// the file by all but a byte of what was asked (as a file system that found room
// for part of it), or, with unsupported set, at once with
// errors.ErrUnsupported.
type refusingFS struct {
	*vfstest.MemFS
	unsupported bool
	calls       atomic.Int64
}

func (r *refusingFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := r.MemFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &refusingFile{File: f, r: r}, nil
}

type refusingFile struct {
	vfs.File
	r *refusingFS
}

func (f *refusingFile) Allocate(off, n int64) error {
	f.r.calls.Add(1)
	if f.r.unsupported {
		return &fs.PathError{Op: "fallocate", Path: "wal", Err: errors.ErrUnsupported}
	}
	if err := f.File.(vfs.Allocator).Allocate(off, n-1); err != nil {
		return err
	}
	return &fs.PathError{Op: "fallocate", Path: "wal", Err: syscall.ENOSPC}
}

// TestIssue19AllocateRefused: an allocation that fails, part of the way
// or because the file system has none, fails no append and loses no
// unit; a closed log ends in its last record still; a file system
// without allocation is asked once, not at every append, and one that
// ran out of room once in a segment is not asked again there. What a
// refused allocation grew is cut at once (ext4 keeps the blocks it found
// before it ran out): the segment never holds more than its records and
// extend's zeros, so that the disk stays free for other writers.
func TestIssue19AllocateRefused(t *testing.T) {
	for _, unsupported := range []bool{false, true} {
		r := &refusingFS{MemFS: vfstest.NewMemFS(), unsupported: unsupported}
		l, _, err := replayAll(t, r, Options{Preallocate: 4096, BufferSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		var want []unit
		for i := range 24 {
			u, app := splitUnit(i)
			want = append(want, u)
			p, err := app(l)
			if err == nil && i%3 == 0 {
				err = l.Sync(p)
			}
			if err != nil {
				t.Fatalf("unsupported %v, unit %d: %v", unsupported, i, err)
			}
			end := int64(uint64(l.End()) & (1<<offsetBits - 1))
			if size, bound := int64(segmentSizes(t, r.MemFS)[segmentName(0)]), (end/4096+1)*4096; size > bound {
				t.Fatalf("unsupported %v, unit %d: segment of %d bytes, past its records and zeros (%d): a refused allocation kept what it grew", unsupported, i, size, bound)
			}
		}
		end := int64(uint64(l.End()) & (1<<offsetBits - 1))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if r.calls.Load() != 1 {
			t.Errorf("unsupported %v: allocation asked %d times in one segment, want once", unsupported, r.calls.Load())
		}
		if size := segmentSizes(t, r.MemFS)[segmentName(0)]; int64(size) != end {
			t.Errorf("unsupported %v: closed segment of %d bytes, its records end at %d", unsupported, size, end)
		}
		_, got, err := replayAll(t, r.MemFS.Recover(vfstest.Torn{}), Options{})
		if err != nil || len(got) != len(want) {
			t.Fatalf("unsupported %v: reopen: %d units of %d, %v", unsupported, len(got), len(want), err)
		}
		for i := range want {
			if !unitEqual(got[i], want[i]) {
				t.Fatalf("unsupported %v: unit %d differs", unsupported, i)
			}
		}
	}
}

// TestIssue19AllocateFaults fails each operation in turn of a workload of
// large appends, syncs and a Rotate, the allocations among them: a failed
// allocation fails nothing, any other failure costs no acknowledged unit,
// and what is left reopens, after a power cut too.
func TestIssue19AllocateFaults(t *testing.T) {
	const units = 16
	allocs := 0
	for fail := 0; ; fail++ {
		m := vfstest.NewMemFS()
		f := vfstest.NewFaulty(m, fail)
		l, _, err := replayAll(t, f, Options{Preallocate: 4096, BufferSize: 4096})
		if err != nil {
			if !errors.Is(err, vfstest.ErrInjected) {
				t.Fatalf("fail %d: open: %v", fail, err)
			}
			continue
		}
		acked := 0
		for i := range units {
			_, app := splitUnit(i)
			p, err := app(l)
			if err == nil && i%2 == 1 {
				err = l.Sync(p)
			}
			if err == nil && i == 9 {
				_, err = l.Rotate()
			}
			if err != nil {
				if !errors.Is(err, vfstest.ErrInjected) {
					t.Fatalf("fail %d (%s), unit %d: %v", fail, f.Failure(), i, err)
				}
				break
			}
			if i%2 == 1 {
				acked = i + 1
			}
		}
		closeErr := l.Close()
		if !f.Failed() {
			if closeErr != nil {
				t.Fatalf("no fault: close: %v", closeErr)
			}
			break
		}
		if strings.HasPrefix(f.Failure(), "allocate ") {
			allocs++
			if acked != units || closeErr != nil {
				t.Fatalf("fail %d, a failed allocation: %d of %d units acknowledged, close: %v", fail, acked, units, closeErr)
			}
		}
		for _, keep := range []float64{0, 0.5} {
			rec := m.Recover(vfstest.Torn{Keep: keep, Names: fail%2 == 0, Rand: rand.New(rand.NewPCG(uint64(fail), 9))})
			l2, got, err := replayAll(t, rec, Options{Preallocate: 4096})
			if err != nil {
				t.Fatalf("fail %d (%s), keep %.1f: reopen: %v", fail, f.Failure(), keep, err)
			}
			l2.Close()
			if len(got) < acked || len(got) > units {
				t.Fatalf("fail %d (%s), keep %.1f: %d units replayed, %d acknowledged", fail, f.Failure(), keep, len(got), acked)
			}
			for i, u := range got {
				if w, _ := splitUnit(i); !unitEqual(u, w) {
					t.Fatalf("fail %d (%s), keep %.1f: unit %d differs", fail, f.Failure(), keep, i)
				}
			}
		}
	}
	if allocs < 2 {
		t.Errorf("%d allocations failed: the workload does not reach them", allocs)
	}
}

// TestIssue19AllocateOS: on the host's file system the reserve is real
// blocks (fallocate), within the file's size, and Close gives them back.
func TestIssue19AllocateOS(t *testing.T) {
	dir := t.TempDir()
	d, err := vfs.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := replayAll(t, d, Options{Preallocate: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.AppendSplit([]byte("h"), bytes.Repeat([]byte("t"), 1<<20))
	if err == nil {
		err = l.Sync(p)
	}
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, segmentName(0))
	st, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	end := int64(uint64(l.End()) & (1<<offsetBits - 1))
	if st.Size() <= end {
		t.Errorf("segment of %d bytes with records ending at %d: nothing reserved", st.Size(), end)
	}
	if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks < st.Size()-4096 {
		t.Logf("the file system reserved %d of %d bytes (sparse: no fallocate here)", blocks, st.Size())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = os.Stat(name); err != nil || st.Size() != end {
		t.Fatalf("closed segment: %v, %d bytes, records end at %d", err, st.Size(), end)
	}
	_, got, err := replayAll(t, d, Options{})
	if err != nil || len(got) != 1 || len(got[0][0]) != 1<<20+1 {
		t.Fatalf("reopen: %d units, %v", len(got), err)
	}
}

// TestSyncWithoutRoomForZeros: a disk with room for the records but not
// for the preallocation step of zeros that a sync writes ahead of them
// (1 MiB here) fails no sync and no later append: the zeros are no part
// of the records. On a real tmpfs and an ext4 image.
func TestSyncWithoutRoomForZeros(t *testing.T) {
	for _, kind := range []string{"tmpfs", "ext4"} {
		t.Run(kind, func(t *testing.T) {
			mnt := testmount.Mount(t, kind, 8<<20)
			dir := filepath.Join(mnt, "log")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			const prealloc = 1 << 20
			fsys, err := vfs.OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			l, _, err := replayAll(t, fsys, Options{Preallocate: prealloc})
			if err != nil {
				t.Fatal(err)
			}
			// Fill the disk beside the log to 256 KiB short of full.
			filler, err := os.Create(filepath.Join(mnt, "filler"))
			if err != nil {
				t.Fatal(err)
			}
			chunk := make([]byte, 64<<10)
			for testmount.Free(t, mnt) > 256<<10 {
				if _, err := filler.Write(chunk); err != nil {
					break
				}
			}
			if err := filler.Sync(); err != nil {
				t.Fatal(err)
			}
			filler.Close()
			free := testmount.Free(t, mnt)
			// Each sync would write zeros to the next MiB, which the disk
			// has not; the records, half the room left, fit.
			var want []unit
			for i := 0; int64(i)*4000 < free/2; i++ {
				u := unit{bytes.Repeat([]byte{byte(i)}, 4000)}
				want = append(want, u)
				p, err := l.Append(u...)
				if err == nil {
					err = l.Sync(p)
				}
				if err != nil {
					t.Fatalf("%d bytes free at the start, unit %d of 4000 bytes: %v", free, i, err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			_, got, err := replayAll(t, fsys, Options{Preallocate: prealloc})
			if err != nil || len(got) != len(want) {
				t.Fatalf("reopen: %d units of %d, %v", len(got), len(want), err)
			}
		})
	}
}
