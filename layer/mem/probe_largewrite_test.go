package mem_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// The probes of this file attack the layer's write path for writes of
// many chunks: such a write sets its chunks in one pass over the chunk
// tree, and a write's new state and content come in one allocation. They
// write runs of up to 200 chunks across the edges of chunks, of leaves
// (64 chunks), of the tree's levels and near math.MaxInt64, and compare
// with os on tmpfs where Linux defines the result, with a model of the
// writes elsewhere, with readers and snapshots beside.

// lwChunk is the layer's chunk, whose edges the writes straddle.
const lwChunk = 64 << 10

// lwDir returns a new directory on tmpfs where the machine has one, else
// t.TempDir: tmpfs is the file system whose limits the layer follows.
func lwDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "packfs-probe-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// lwSrcPeriod is the period of the writes' data: a prime number of bytes,
// so that no chunk of a write repeats another's.
const lwSrcPeriod = 1<<20 + 7

// lwSrc holds random bytes that the writes take their data from: write id
// at off writes lwData(id, off, n), whose byte at x depends on id and x,
// so that a chunk set at the wrong index, a stale chunk or a write applied
// in part shows. It is never written to.
var lwSrc = sync.OnceValue(func() []byte {
	b := make([]byte, lwSrcPeriod+210*lwChunk)
	rand.NewChaCha8([32]byte{'l', 'w'}).Read(b)
	return b
})

// lwData returns the n bytes write id puts at off (n is at most 210
// chunks). The slice is lwSrc's: a caller must not change it.
func lwData(id int, off int64, n int) []byte {
	start := (int64(id)*7919 + off%lwSrcPeriod) % lwSrcPeriod
	return lwSrc()[start : start+int64(n) : start+int64(n)]
}

// lwErr names an error as the probes compare it with os's: nil, EOF,
// EINVAL or another.
func lwErr(err error) string {
	switch {
	case err == nil:
		return "nil"
	case err == io.EOF:
		return "EOF"
	case errors.Is(err, syscall.EINVAL):
		return "EINVAL"
	}
	return "error: " + err.Error()
}

// lwRWFile is what the differential drives of a mem file and an os file.
type lwRWFile interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Seeker
	Truncate(int64) error
	Stat() (fs.FileInfo, error)
}

// lwContents reads the whole of f through ReadAt, at its size.
func lwContents(f lwRWFile) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err == io.EOF && n == len(b) {
		err = nil
	}
	return b[:n], err
}

// lwDiffAt is the first index at which a and b differ.
func lwDiffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// lwStep is one random step of the differential against os.
type lwStep struct {
	what string
	run  func(f lwRWFile, app io.Writer) (int64, error)
}

// lwNextStep returns a random step for a file of the given size: writes
// of 1 to maxChunks chunks at offsets a few bytes off the edges of
// chunks, leaves and the 8 MiB mark, past the end, over holes; appends;
// writes at a Seek; truncations down and up; small writes at chunk
// edges. A file past limit bytes is cut.
func lwNextStep(r *rand.Rand, id int, size int64, maxChunks int, limit int64) lwStep {
	chunks := []int{1, 2, 3, 5, 16, 63, 64, 65, 127, 128, 129, 200}
	length := func() int {
		for {
			n := chunks[r.IntN(len(chunks))]
			if n > maxChunks {
				continue
			}
			return max(1, n*lwChunk+r.IntN(11)-5)
		}
	}
	edge := func() int64 {
		bases := []int64{0, lwChunk, 2 * lwChunk, 63 * lwChunk, 64 * lwChunk, 65 * lwChunk, 128 * lwChunk}
		return max(0, bases[r.IntN(len(bases))]+int64(r.IntN(11)-5))
	}
	// The comparisons read the file whole: a large one is cut first.
	k := r.IntN(100)
	if size > limit {
		k = 75
	}
	switch {
	case k < 35:
		off, n := edge(), length()
		if r.IntN(3) == 0 {
			off = max(0, off-int64(n)/2) // straddling the edge
		}
		return lwStep{fmt.Sprintf("WriteAt(%d bytes, %d)", n, off), func(f lwRWFile, _ io.Writer) (int64, error) {
			n, err := f.WriteAt(lwData(id, off, n), off)
			return int64(n), err
		}}
	case k < 45:
		holes := []int64{1, 5, lwChunk - 1, lwChunk, lwChunk + 3, 64*lwChunk + 1}
		off := size + holes[r.IntN(len(holes))]
		n := length()
		if r.IntN(2) == 0 {
			n = 1 + r.IntN(100)
		}
		return lwStep{fmt.Sprintf("WriteAt(%d bytes, %d) past the end", n, off), func(f lwRWFile, _ io.Writer) (int64, error) {
			n, err := f.WriteAt(lwData(id, off, n), off)
			return int64(n), err
		}}
	case k < 55:
		n := length()
		if r.IntN(2) == 0 {
			n = 1 + r.IntN(3)
		}
		return lwStep{fmt.Sprintf("append %d bytes", n), func(_ lwRWFile, app io.Writer) (int64, error) {
			n, err := app.Write(lwData(id, size, n))
			return int64(n), err
		}}
	case k < 65:
		off, n := edge(), length()
		return lwStep{fmt.Sprintf("Seek(%d), Write(%d bytes)", off, n), func(f lwRWFile, _ io.Writer) (int64, error) {
			if _, err := f.Seek(off, io.SeekStart); err != nil {
				return 0, err
			}
			n, err := f.Write(lwData(id, off, n))
			if err != nil {
				return int64(n), err
			}
			return f.Seek(0, io.SeekCurrent)
		}}
	case k < 85:
		var to int64
		switch r.IntN(4) {
		case 0:
			to = r.Int64N(size + 1)
		case 1:
			to = min(size, edge())
		case 2:
			to = size + r.Int64N(2<<20)
		default:
			to = edge()
		}
		return lwStep{fmt.Sprintf("Truncate(%d) from %d", to, size), func(f lwRWFile, _ io.Writer) (int64, error) {
			return 0, f.Truncate(to)
		}}
	default:
		off := max(0, min(size, edge())+int64(r.IntN(9)-4))
		n := 1 + r.IntN(100)
		return lwStep{fmt.Sprintf("WriteAt(%d bytes, %d), small", n, off), func(f lwRWFile, _ io.Writer) (int64, error) {
			n, err := f.WriteAt(lwData(id, off, n), off)
			return int64(n), err
		}}
	}
}

// TestProbeLargeWriteOS drives a file of the layer and one of os through
// the same random steps of large writes (lwNextStep) and compares each
// step's result, the size, and the whole contents after every step;
// snapshots taken between the steps are read again at the end and must
// not have changed.
func TestProbeLargeWriteOS(t *testing.T) {
	seeds, steps, maxChunks, limit := 1, 10, 70, int64(6<<20)
	if !testsize.Short() && !mem.RaceEnabled {
		seeds, steps, maxChunks, limit = 8, 80, 200, 20<<20
	}
	dir := lwDir(t)
	for seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			lwRunOS(t, filepath.Join(dir, fmt.Sprint("f", seed)), uint64(seed), steps, maxChunks, limit)
		})
	}
}

func lwRunOS(t *testing.T, host string, seed uint64, steps, maxChunks int, limit int64) {
	r := rand.New(rand.NewPCG(seed, 0x1a46e))
	f := checked(t)
	open := func(flag int) (layer.File, *os.File) {
		m, err := f.OpenFile("f", flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		h, err := os.OpenFile(host, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return m, h
	}
	m, hf := open(os.O_RDWR | os.O_CREATE)
	mf := m.(lwRWFile)
	ma, ha := open(os.O_WRONLY | os.O_APPEND)
	type kept struct {
		s    *mem.Snapshot
		step int
		size int64
		sum  uint32
	}
	var snaps []kept
	var size int64
	for i := range steps {
		st := lwNextStep(r, i, size, maxChunks, limit)
		gn, gerr := st.run(mf, ma)
		wn, werr := st.run(hf, ha)
		if gn != wn || lwErr(gerr) != lwErr(werr) {
			t.Fatalf("step %d: %s = %d, %v; os: %d, %v", i, st.what, gn, gerr, wn, werr)
		}
		want, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		size = int64(len(want))
		if fi, err := f.Stat("f"); err != nil || fi.Size() != size {
			t.Fatalf("step %d: %s: Stat = %v, %v; want size %d", i, st.what, fi, err, size)
		}
		got, err := fs.ReadFile(f, "f")
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("step %d: %s: ReadFile = %d bytes, %v; want %d, first difference at %d", i, st.what, len(got), err, len(want), lwDiffAt(got, want))
		}
		if i%2 != 0 {
			// The handle's reads every other step.
		} else if got, err := lwContents(mf); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("step %d: %s: the handle reads %d bytes, %v; want %d, first difference at %d", i, st.what, len(got), err, len(want), lwDiffAt(got, want))
		}
		if i%3 == 0 || r.IntN(4) == 0 {
			snaps = append(snaps, kept{f.Snapshot(), i, size, crc32.Checksum(want, crc32.MakeTable(crc32.Castagnoli))})
		}
	}
	for _, k := range snaps {
		got, err := fs.ReadFile(k.s, "f")
		if err != nil || int64(len(got)) != k.size || crc32.Checksum(got, crc32.MakeTable(crc32.Castagnoli)) != k.sum {
			t.Errorf("the snapshot after step %d reads %d bytes, %v; it read %d", k.step, len(got), err, k.size)
		}
		if fi, err := fs.Stat(k.s, "f"); err != nil || fi.Size() != k.size {
			t.Errorf("the snapshot after step %d: Stat = %v, %v; want size %d", k.step, fi, err, k.size)
		}
	}
}

// lwChange is one change of a file: data written at off, or, with trunc,
// the file cut or extended to off bytes.
type lwChange struct {
	off   int64
	data  []byte
	trunc bool
}

// lwModel is a file as the list of changes that made it: the bytes of any
// range after the first k changes come from replaying them over the range,
// so that files of terabytes cost nothing.
type lwModel []lwChange

func (m lwModel) size(k int) int64 {
	var size int64
	for _, c := range m[:k] {
		if c.trunc {
			size = c.off
		} else {
			size = max(size, c.off+int64(len(c.data)))
		}
	}
	return size
}

// read returns the bytes at off after the first k changes, n at most,
// fewer at the end of the file.
func (m lwModel) read(k int, off int64, n int) []byte {
	size := m.size(k)
	if off >= size {
		return nil
	}
	b := make([]byte, min(int64(n), size-off))
	end := off + int64(len(b))
	for _, c := range m[:k] {
		if c.trunc {
			if c.off < end {
				clear(b[max(0, c.off-off):])
			}
			continue
		}
		lo, hi := max(off, c.off), min(end, c.off+int64(len(c.data)))
		if lo < hi {
			copy(b[lo-off:hi-off], c.data[lo-c.off:hi-c.off])
		}
	}
	return b
}

// lwCheckRange compares n bytes at off read through h with the model
// after k changes.
func lwCheckRange(h io.ReaderAt, m lwModel, k int, off int64, n int) error {
	if off < 0 {
		n += int(off)
		off = 0
	}
	n = int(min(int64(n), math.MaxInt64-off))
	if n <= 0 {
		return nil
	}
	want := m.read(k, off, n)
	got := make([]byte, n)
	gn, err := h.ReadAt(got, off)
	wantErr := error(nil)
	if len(want) < n {
		wantErr = io.EOF
	}
	if gn != len(want) || err != wantErr || !bytes.Equal(got[:gn], want) {
		return fmt.Errorf("ReadAt(%d bytes, %d) = %d, %v, first difference at %d; want %d, %v", n, off, gn, err, off+int64(lwDiffAt(got[:gn], want)), len(want), wantErr)
	}
	return nil
}

// TestProbeLargeWriteSparse writes runs of up to 200 chunks, a few bytes
// off the edges where the chunk tree grows a level (256 MiB, 16 GiB,
// 1 TiB, 64 TiB) and near math.MaxInt64, with truncations down and up
// across them, and checks the size and the bytes about every change made
// so far against the model; snapshots taken between the changes read as
// the model did when they were taken.
func TestProbeLargeWriteSparse(t *testing.T) {
	seeds, steps, maxChunks, checks := 1, 24, 70, 15
	switch {
	case mem.RaceEnabled:
		steps = 12
	case !testsize.Short():
		seeds, steps, maxChunks, checks = 8, 100, 200, 27
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { lwRunSparse(t, uint64(seed), steps, maxChunks, checks) })
	}
}

// lwRunSparse runs one seed of TestProbeLargeWriteSparse; after each
// change it checks the bytes about checks of the changes' edges.
func lwRunSparse(t *testing.T, seed uint64, steps, maxChunks, checks int) {
	r := rand.New(rand.NewPCG(seed, 0x5ba45e))
	f := checked(t)
	h, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	edges := []int64{4 << 20, 256 << 20, 16 << 30, 1 << 40, 1 << 46, math.MaxInt64}
	var m lwModel
	// points are where the bytes are checked: about every change's edges.
	var points []int64
	type kept struct {
		s *mem.Snapshot
		k int
	}
	var snaps []kept
	for i := range steps {
		edge := edges[r.IntN(len(edges))]
		n := max(1, (1+r.IntN(maxChunks))*lwChunk+r.IntN(11)-5)
		var c lwChange
		switch r.IntN(8) {
		case 0, 1:
			// Cut below or past an edge, or grow past one.
			c = lwChange{off: max(0, edge-int64(r.IntN(3*lwChunk))+int64(r.IntN(3*lwChunk))), trunc: true}
			if edge == math.MaxInt64 {
				c.off = math.MaxInt64 - int64(r.IntN(3*lwChunk))
			}
			if err := h.Truncate(c.off); err != nil {
				t.Fatalf("step %d: Truncate(%d): %v", i, c.off, err)
			}
		default:
			off := edge - int64(r.IntN(n))
			if r.IntN(3) == 0 {
				off = edge - int64(n)/2 // across the edge
			}
			off = max(0, min(off, math.MaxInt64-int64(n)-5)+int64(r.IntN(11)-5))
			c = lwChange{off: off, data: lwData(i, off, n)}
			if n, err := h.WriteAt(c.data, c.off); n != len(c.data) || err != nil {
				t.Fatalf("step %d: WriteAt(%d bytes, %d) = %d, %v", i, len(c.data), c.off, n, err)
			}
		}
		m = append(m, c)
		k := len(m)
		points = append(points, c.off, c.off+int64(len(c.data)), c.off+int64(len(c.data))/2)
		if fi, err := h.Stat(); err != nil || fi.Size() != m.size(k) {
			t.Fatalf("step %d: Stat = %v, %v; want size %d", i, fi, err, m.size(k))
		}
		if !c.trunc {
			// The whole of the write.
			if err := lwCheckRange(h, m, k, c.off-3, len(c.data)+6); err != nil {
				t.Fatalf("step %d: the write of %d bytes at %d: %v", i, len(c.data), c.off, err)
			}
		}
		// The edges of this change, and of some of the earlier ones.
		for j := range min(len(points), checks) {
			p := points[len(points)-1-j]
			if j >= 3 {
				p = points[r.IntN(len(points))]
			}
			if err := lwCheckRange(h, m, k, p-lwChunk-3, 2*lwChunk+6); err != nil {
				t.Fatalf("step %d, about %d: %v", i, p, err)
			}
		}
		if r.IntN(3) == 0 {
			snaps = append(snaps, kept{f.Snapshot(), k})
		}
	}
	for _, s := range snaps {
		sh, err := s.s.Open("f")
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := sh.Stat(); err != nil || fi.Size() != m.size(s.k) {
			t.Errorf("the snapshot after %d changes: Stat = %v, %v; want size %d", s.k, fi, err, m.size(s.k))
		}
		for _, p := range points {
			if err := lwCheckRange(sh.(io.ReaderAt), m, s.k, p-lwChunk-3, 2*lwChunk+6); err != nil {
				t.Errorf("the snapshot after %d changes, about %d: %v", s.k, p, err)
				break
			}
		}
		sh.Close()
	}
}

// TestProbeLargeWriteHugeOffsets: a file of a few bytes at 1 TiB, or cut
// to math.MaxInt64, costs the heap about its bytes, not its size, and
// reading its holes allocates nothing; writes whose end passes
// math.MaxInt64 fail with EINVAL and change nothing.
func TestProbeLargeWriteHugeOffsets(t *testing.T) {
	f := checked(t)
	h, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	lwSrc() // made before the count
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if n, err := h.WriteAt([]byte("0123456789"), 1<<40); n != 10 || err != nil {
		t.Fatalf("WriteAt(10 bytes, 1 TiB) = %d, %v", n, err)
	}
	p := lwData(1, 1<<46-lwChunk-3, 3*lwChunk)
	if n, err := h.WriteAt(p, 1<<46-lwChunk-3); n != len(p) || err != nil {
		t.Fatalf("WriteAt(3 chunks, 64 TiB - a chunk - 3) = %d, %v", n, err)
	}
	if err := h.Truncate(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	q := lwData(2, math.MaxInt64-2*lwChunk-1, 2*lwChunk+1)
	if n, err := h.WriteAt(q, math.MaxInt64-int64(len(q))); n != len(q) || err != nil {
		t.Fatalf("WriteAt(2 chunks and a byte, ending at MaxInt64) = %d, %v", n, err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The chunks written, 4 of them whole or in part but for the first,
	// and a few tree nodes on each of three paths of 8 levels.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 2<<20 {
		t.Errorf("a few chunks at huge offsets allocated %d bytes", grown)
	}

	// Writes whose end passes MaxInt64 are refused, and change nothing.
	for _, c := range []struct {
		off int64
		n   int
	}{{math.MaxInt64 - 10, 11}, {math.MaxInt64 - lwChunk, 2 * lwChunk}, {math.MaxInt64, 1}, {math.MaxInt64 - 1, 200 * lwChunk}} {
		if n, err := h.WriteAt(make([]byte, c.n), c.off); n != 0 || !errors.Is(err, syscall.EINVAL) {
			t.Errorf("WriteAt(%d bytes, %d) = %d, %v; want EINVAL", c.n, c.off, n, err)
		}
	}
	if fi, err := h.Stat(); err != nil || fi.Size() != math.MaxInt64 {
		t.Fatalf("Stat = %v, %v; want size MaxInt64", fi, err)
	}
	m := lwModel{{off: 1 << 40, data: []byte("0123456789")}, {off: 1<<46 - lwChunk - 3, data: p}, {off: math.MaxInt64, trunc: true}, {off: math.MaxInt64 - int64(len(q)), data: q}}
	for _, at := range []int64{0, 1<<40 - 5, 1<<46 - 2*lwChunk, math.MaxInt64 - 3*lwChunk} {
		if err := lwCheckRange(h, m, len(m), at, 3*lwChunk); err != nil {
			t.Error(err)
		}
	}

	// Reading a megabyte of a hole allocates nothing.
	buf := make([]byte, 1<<20)
	for _, at := range []int64{1 << 39, 1<<40 - 1<<19, 1 << 50, math.MaxInt64 - 1<<21} {
		allocs := testing.AllocsPerRun(5, func() {
			if n, err := h.ReadAt(buf, at); n != len(buf) || err != nil {
				t.Fatalf("ReadAt(1 MiB, %d) = %d, %v", at, n, err)
			}
		})
		if allocs > 0 {
			t.Errorf("ReadAt(1 MiB, %d) allocates %.0f times", at, allocs)
		}
	}

	// Cut back to a byte and grown again: the bytes at the huge offsets
	// are gone, and the heap they took is free.
	if err := h.Truncate(1); err != nil {
		t.Fatal(err)
	}
	if err := h.Truncate(1<<46 + lwChunk); err != nil {
		t.Fatal(err)
	}
	m = append(m, lwChange{off: 1, trunc: true}, lwChange{off: 1<<46 + lwChunk, trunc: true})
	for _, at := range []int64{0, 1<<40 - 5, 1<<46 - 2*lwChunk} {
		if err := lwCheckRange(h, m, len(m), at, 3*lwChunk); err != nil {
			t.Error(err)
		}
	}
}

// TestProbeLargeWriteNearMaxOS makes the same writes, reads and
// truncations near math.MaxInt64 and 1 TiB on the layer and on tmpfs,
// whose limits the layer follows, and compares every result. An O_APPEND
// write at a size of MaxInt64 is left out: Linux gives EFBIG there when
// the handle's offset is small (and EINVAL when it is near MaxInt64, and
// writes in part an append that would pass it), where the layer gives
// EINVAL whatever the offset, as the conformance suite's OffsetsPastMax
// asks.
func TestProbeLargeWriteNearMaxOS(t *testing.T) {
	st, err := os.Stat("/dev/shm")
	if err != nil || !st.IsDir() {
		t.Skip("no tmpfs at /dev/shm")
	}
	host := filepath.Join(lwDir(t), "f")
	f := checked(t)
	var files [2]lwRWFile
	var apps [2]io.Writer
	for i, flag := range []int{os.O_RDWR | os.O_CREATE, os.O_WRONLY | os.O_APPEND} {
		m, err := f.OpenFile("f", flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		h, err := os.OpenFile(host, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if i == 0 {
			files = [2]lwRWFile{m.(lwRWFile), h}
		} else {
			apps = [2]io.Writer{m, h}
		}
	}
	const top = math.MaxInt64
	write := func(off int64, n int) func(f lwRWFile, _ io.Writer) (string, error) {
		return func(f lwRWFile, _ io.Writer) (string, error) {
			n, err := f.WriteAt(lwData(3, off, n), off)
			return fmt.Sprint(n), err
		}
	}
	read := func(off int64, n int) func(f lwRWFile, _ io.Writer) (string, error) {
		return func(f lwRWFile, _ io.Writer) (string, error) {
			b := make([]byte, n)
			n, err := f.ReadAt(b, off)
			return fmt.Sprintf("%d %x", n, crc32.ChecksumIEEE(b[:n])), err
		}
	}
	truncate := func(size int64) func(f lwRWFile, _ io.Writer) (string, error) {
		return func(f lwRWFile, _ io.Writer) (string, error) { return "", f.Truncate(size) }
	}
	seekWrite := func(off int64, n int) func(f lwRWFile, _ io.Writer) (string, error) {
		return func(f lwRWFile, _ io.Writer) (string, error) {
			if _, err := f.Seek(off, io.SeekStart); err != nil {
				return "", err
			}
			n, err := f.Write(lwData(4, off, n))
			pos, _ := f.Seek(0, io.SeekCurrent)
			return fmt.Sprint(n, " at ", pos), err
		}
	}
	appendN := func(n int) func(f lwRWFile, app io.Writer) (string, error) {
		return func(_ lwRWFile, app io.Writer) (string, error) {
			n, err := app.Write(make([]byte, n))
			return fmt.Sprint(n), err
		}
	}
	for i, c := range []struct {
		what string
		run  func(f lwRWFile, app io.Writer) (string, error)
	}{
		{"write 5 at MaxInt64-10", write(top-10, 5)},
		{"write 20 at MaxInt64-10", write(top-10, 20)},
		{"write 3 chunks ending at MaxInt64", write(top-3*lwChunk-3, 3*lwChunk+3)},
		{"write 2 chunks at MaxInt64-chunk", write(top-lwChunk, 2*lwChunk)},
		{"write 1 at MaxInt64", write(top, 1)},
		{"read 10 at MaxInt64-10", read(top-10, 10)},
		{"read 11 at MaxInt64-10", read(top-10, 11)},
		{"read 3 chunks at MaxInt64-4 chunks", read(top-4*lwChunk, 3*lwChunk)},
		{"read 1 at MaxInt64", read(top, 1)},
		{"truncate to MaxInt64-chunk-1", truncate(top - lwChunk - 1)},
		{"read 2 chunks at MaxInt64-2 chunks", read(top-2*lwChunk, 2*lwChunk)},
		{"append a chunk and a byte", appendN(lwChunk + 1)},
		{"append 1 past MaxInt64", appendN(1)},
		{"seek to MaxInt64-3, write 3", seekWrite(top-3, 3)},
		{"seek to MaxInt64, write 1", seekWrite(top, 1)},
		{"truncate to 1 TiB + 5", truncate(1<<40 + 5)},
		{"write 200 chunks across 1 TiB", write(1<<40-100*lwChunk-3, 200*lwChunk)},
		{"read 3 chunks at 1 TiB - 2 chunks", read(1<<40-2*lwChunk, 3*lwChunk)},
		{"read 3 chunks at 1 TiB + 99 chunks", read(1<<40+99*lwChunk, 3*lwChunk)},
		{"truncate to 1 TiB - 1", truncate(1<<40 - 1)},
		{"read 2 chunks at 1 TiB - chunk", read(1<<40-lwChunk, 2*lwChunk)},
		{"truncate to MaxInt64", truncate(top)},
		{"read 2 chunks at 1 TiB - chunk", read(1<<40-lwChunk, 2*lwChunk)},
		{"read 2 chunks at MaxInt64 - 2 chunks", read(top-2*lwChunk, 2*lwChunk)},
		{"truncate to 0", truncate(0)},
		{"write 1 at MaxInt64-1", write(top-1, 1)},
		{"read 2 chunks at MaxInt64 - 2 chunks", read(top-2*lwChunk, 2*lwChunk)},
	} {
		var res [2]string
		for j := range 2 {
			out, err := c.run(files[j], apps[j])
			fi, serr := files[j].Stat()
			if serr != nil {
				t.Fatal(serr)
			}
			res[j] = fmt.Sprintf("%s, %s, size %d", out, lwErr(err), fi.Size())
		}
		if res[0] != res[1] {
			t.Errorf("step %d, %s: %s; os: %s", i, c.what, res[0], res[1])
		}
	}
}

// lwRun is a run of bytes of one value in lwState.
type lwRun struct {
	start, end int64
	v          byte
}

// lwState is a file whose bytes are runs of one value each, zeros
// between them.
type lwState struct {
	size int64
	runs []lwRun // sorted, not overlapping
}

func (s lwState) write(off, n int64, v byte) lwState {
	end := off + n
	var before, after []lwRun
	for _, r := range s.runs {
		if r.start < off {
			before = append(before, lwRun{r.start, min(r.end, off), r.v})
		}
		if r.end > end {
			after = append(after, lwRun{max(r.start, end), r.end, r.v})
		}
	}
	runs := append(append(before, lwRun{off, end, v}), after...)
	return lwState{max(s.size, end), runs}
}

func (s lwState) truncate(size int64) lwState {
	var runs []lwRun
	for _, r := range s.runs {
		if r.start < size {
			runs = append(runs, lwRun{r.start, min(r.end, size), r.v})
		}
	}
	return lwState{size, runs}
}

// check reports whether a read of len(p) bytes at off that returned n and
// err read s.
func (s lwState) check(p []byte, off int64, n int, err error) bool {
	want := int(max(0, min(int64(len(p)), s.size-off)))
	if n != want || (err == io.EOF) != (want < len(p)) || (err != nil && err != io.EOF) {
		return false
	}
	end := off + int64(n)
	at := off
	same := func(to int64, v byte) bool {
		seg := p[at-off : to-off]
		at = to
		return bytes.Count(seg, []byte{v}) == len(seg)
	}
	for _, r := range s.runs {
		if r.end <= at {
			continue
		}
		if r.start >= end {
			break
		}
		if r.start > at && !same(r.start, 0) {
			return false
		}
		if !same(min(r.end, end), r.v) {
			return false
		}
	}
	return at == end || same(end, 0)
}

// lwFillValue sets every byte of p to v.
func lwFillValue(p []byte, v byte) {
	if len(p) == 0 {
		return
	}
	p[0] = v
	for n := 1; n < len(p); n *= 2 {
		copy(p[n:], p[:n])
	}
}

// TestProbeLargeWriteReaders: one writer makes writes of 1 to 70 chunks
// (130 with PACKFS_LONG=1), each of one byte value, truncations down and
// up, and appends, large and small, while readers read the file through a handle's
// ReadAt, ReadFile and Stat, and take snapshots. Every read must show one state the file had while
// it ran (no write in part, no size of another state), and every
// snapshot, read again at the end, the state it showed first.
func TestProbeLargeWriteReaders(t *testing.T) {
	ops, maxChunks, limit := 30, 70, int64(6<<20)
	if !testsize.Short() && !mem.RaceEnabled {
		ops, maxChunks, limit = 600, 130, 12<<20
	}
	r := rand.New(rand.NewPCG(1, 0xead))
	// The writes, and the file's state after each: states[k] after k.
	type op struct {
		off, n int64
		v      byte
		trunc  bool
		append bool
	}
	var plan []op
	states := []lwState{{}}
	for i := range ops {
		s := states[len(states)-1]
		var o op
		switch k := r.IntN(10); {
		case k < 2 || s.size > limit:
			o = op{off: r.Int64N(s.size + 1), trunc: true}
			if r.IntN(2) == 0 {
				o.off = (o.off &^ (lwChunk - 1)) + int64(r.IntN(5)-2)
			}
			o.off = max(0, o.off)
		case k < 3:
			o = op{off: s.size + r.Int64N(3*lwChunk), trunc: true}
		case k < 5:
			o = op{off: s.size, n: int64(1+r.IntN(maxChunks))*lwChunk + int64(r.IntN(7)-3), append: true}
		case k < 6:
			// Small: into the tail's spare room, in place.
			o = op{off: s.size, n: 1 + r.Int64N(300), append: true}
		default:
			o = op{off: max(0, int64(r.IntN(130))*lwChunk+int64(r.IntN(7)-3)), n: int64(1+r.IntN(maxChunks))*lwChunk + int64(r.IntN(7)-3)}
		}
		o.v = byte(i%255 + 1)
		plan = append(plan, o)
		if o.trunc {
			states = append(states, s.truncate(o.off))
		} else {
			states = append(states, s.write(o.off, o.n, o.v))
		}
	}

	f := checked(t)
	w, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// started is the number of operations begun, done of those ended:
	// a read that starts after done was n and ends before started is m
	// shows states[n] to states[m].
	var started, done atomic.Int64
	// matches reports the first state in [lo, hi] that check accepts.
	matches := func(lo, hi int64, check func(lwState) bool) int64 {
		for k := lo; k <= hi; k++ {
			if check(states[k]) {
				return k
			}
		}
		return -1
	}
	errs := make(chan error, 8)
	var stop atomic.Bool
	var wg sync.WaitGroup
	type kept struct {
		s *mem.Snapshot
		k int64
	}
	var snaps []kept
	for g := range 4 {
		wg.Go(func() {
			rr := rand.New(rand.NewPCG(uint64(g), 2))
			h, err := f.Open("f")
			if err != nil {
				errs <- err
				return
			}
			defer h.Close()
			buf := make([]byte, 3*lwChunk+10)
			for !stop.Load() {
				lo := done.Load()
				var what string
				var check func(lwState) bool
				switch g {
				case 0:
					off := max(0, int64(rr.IntN(200))*lwChunk+int64(rr.IntN(9)-4))
					p := buf[:1+rr.IntN(len(buf))]
					n, err := h.(io.ReaderAt).ReadAt(p, off)
					what = fmt.Sprintf("ReadAt(%d bytes, %d) = %d, %v", len(p), off, n, err)
					check = func(s lwState) bool { return s.check(p, off, n, err) }
				case 1:
					b, err := f.ReadFile("f")
					what = fmt.Sprintf("ReadFile = %d bytes, %v", len(b), err)
					check = func(s lwState) bool { return err == nil && s.size == int64(len(b)) && s.check(b, 0, len(b), nil) }
				case 2:
					// The path, then the handle: once the path shows a
					// change, the handle does. (The converse does not
					// hold: the first write after a snapshot shows
					// through the handle before it shows through the
					// path.)
					fi, err := f.Stat("f")
					var fi2 fs.FileInfo
					if err == nil {
						fi2, err = h.Stat()
					}
					if err != nil {
						errs <- err
						return
					}
					hi := started.Load()
					k := matches(lo, hi, func(s lwState) bool { return s.size == fi.Size() })
					if k < 0 || matches(k, hi, func(s lwState) bool { return s.size == fi2.Size() }) < 0 {
						errs <- fmt.Errorf("Stat of the path, then of a handle: sizes %d then %d, not of states %d to %d in order", fi.Size(), fi2.Size(), lo, hi)
						return
					}
					continue
				case 3:
					s := f.Snapshot()
					b, err := fs.ReadFile(s, "f")
					hi := started.Load()
					k := matches(lo, hi, func(st lwState) bool { return err == nil && st.size == int64(len(b)) && st.check(b, 0, len(b), nil) })
					if k < 0 {
						errs <- fmt.Errorf("a snapshot reads %d bytes, %v: not one of states %d to %d", len(b), err, lo, hi)
						return
					}
					if len(snaps) < 64 {
						snaps = append(snaps, kept{s, k})
					}
					continue
				}
				if hi := started.Load(); matches(lo, hi, check) < 0 {
					errs <- fmt.Errorf("%s: not one of states %d to %d", what, lo, hi)
					return
				}
			}
		})
	}
	buf := make([]byte, (maxChunks+1)*lwChunk)
	app, err := f.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	for i, o := range plan {
		started.Store(int64(i + 1))
		switch {
		case o.trunc:
			err = w.Truncate(o.off)
		case o.append:
			p := buf[:o.n]
			lwFillValue(p, o.v)
			_, err = app.Write(p)
		default:
			p := buf[:o.n]
			lwFillValue(p, o.v)
			_, err = w.WriteAt(p, o.off)
		}
		if err != nil {
			t.Fatalf("operation %d %+v: %v", i, o, err)
		}
		done.Store(int64(i + 1))
		if i%8 == 0 {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	last := states[len(states)-1]
	if b, err := f.ReadFile("f"); err != nil || int64(len(b)) != last.size || !last.check(b, 0, len(b), nil) {
		t.Errorf("at the end, ReadFile = %d bytes, %v; not the last state", len(b), err)
	}
	for _, s := range snaps {
		b, err := fs.ReadFile(s.s, "f")
		if st := states[s.k]; err != nil || int64(len(b)) != st.size || !st.check(b, 0, len(b), nil) {
			t.Errorf("a snapshot of state %d now reads %d bytes, %v: it changed", s.k, len(b), err)
		}
	}
}

// TestProbeLargeWriteMovedFile: a handle keeps writing its file, in
// writes of many chunks, after the file is renamed, removed, or replaced
// by a rename over its name, as on Linux; the names show what os shows,
// and a snapshot from before keeps what it had.
func TestProbeLargeWriteMovedFile(t *testing.T) {
	dir := lwDir(t)
	f := checked(t)
	type pair struct {
		m lwRWFile
		o *os.File
	}
	open := func(name string, flag int) pair {
		m, err := f.OpenFile(name, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		o, err := os.OpenFile(filepath.Join(dir, name), flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return pair{m.(lwRWFile), o}
	}
	both := func(what string, fm func() error, fo func() error) {
		t.Helper()
		if em, eo := fm(), fo(); lwErr(em) != lwErr(eo) {
			t.Fatalf("%s: %v; os: %v", what, em, eo)
		}
	}
	rename := func(a, b string) {
		t.Helper()
		both("rename "+a+" "+b, func() error { return f.Rename(a, b) }, func() error { return os.Rename(filepath.Join(dir, a), filepath.Join(dir, b)) })
	}
	remove := func(a string) {
		t.Helper()
		both("remove "+a, func() error { return f.Remove(a) }, func() error { return os.Remove(filepath.Join(dir, a)) })
	}
	id := 0
	writeAt := func(p pair, off int64, n int) {
		t.Helper()
		id++
		data := lwData(id, off, n)
		both(fmt.Sprintf("WriteAt(%d bytes, %d)", n, off), func() error { _, err := p.m.WriteAt(data, off); return err }, func() error { _, err := p.o.WriteAt(data, off); return err })
	}
	write := func(p pair, n int) {
		t.Helper()
		id++
		data := lwData(id, int64(id), n)
		both(fmt.Sprintf("Write(%d bytes)", n), func() error { _, err := p.m.Write(data); return err }, func() error { _, err := p.o.Write(data); return err })
	}
	truncate := func(p pair, size int64) {
		t.Helper()
		both(fmt.Sprint("Truncate ", size), func() error { return p.m.Truncate(size) }, func() error { return p.o.Truncate(size) })
	}
	same := func(what string, p pair) {
		t.Helper()
		got, err := lwContents(p.m)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want, err := lwContents(p.o)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the handle reads %d bytes, os %d, first difference at %d", what, len(got), len(want), lwDiffAt(got, want))
		}
	}
	names := func(what string) {
		t.Helper()
		for _, name := range []string{"a", "b", "c"} {
			got, gerr := f.ReadFile(name)
			want, werr := os.ReadFile(filepath.Join(dir, name))
			if errors.Is(gerr, fs.ErrNotExist) != errors.Is(werr, fs.ErrNotExist) || !bytes.Equal(got, want) {
				t.Fatalf("%s: ReadFile(%s) = %d bytes, %v; os: %d, %v, first difference at %d", what, name, len(got), gerr, len(want), werr, lwDiffAt(got, want))
			}
		}
	}

	a := open("a", os.O_RDWR|os.O_CREATE)
	writeAt(a, 7, 3*lwChunk+5)
	rename("a", "b")
	writeAt(a, lwChunk-3, 70*lwChunk)
	write(a, 65*lwChunk+1) // at the offset, 0
	same("renamed", a)
	names("renamed")
	before := f.Snapshot()
	beforeB, _ := f.ReadFile("b")

	// Replaced: a new a renamed over b; the handle writes on, unlinked.
	c := open("a", os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	writeAt(c, 0, 2*lwChunk)
	rename("a", "b")
	writeAt(a, 4<<20-1, 129*lwChunk+3)
	truncate(a, 5*lwChunk+9)
	write(a, 64*lwChunk)
	same("replaced", a)
	names("replaced")
	writeAt(c, 63*lwChunk, 3*lwChunk)
	same("the file over it", c)

	// Removed while an O_APPEND handle appends to it.
	app := open("b", os.O_WRONLY|os.O_APPEND)
	remove("b")
	write(app, 100*lwChunk-1)
	writeAt(c, lwChunk+1, 64*lwChunk)
	write(app, 2)
	same("removed", c)
	names("removed")

	// A new file at the old name is another file.
	d := open("b", os.O_RDWR|os.O_CREATE|os.O_EXCL)
	writeAt(d, 3, 2*lwChunk)
	writeAt(c, 0, 5)
	same("removed, name reused", c)
	same("the new b", d)
	names("name reused")
	same("the first file", a)

	if got, err := before.ReadFile("b"); err != nil || !bytes.Equal(got, beforeB) {
		t.Errorf("the snapshot reads b as %d bytes, %v; it read %d", len(got), err, len(beforeB))
	}
	if _, err := before.Stat("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the snapshot: Stat(a) = %v; want ErrNotExist", err)
	}
}

// TestProbeAppendsThenOverwrite appends many small pieces, whose tail
// grows in place, takes snapshots between them, then overwrites the
// appended tail with a write of many chunks that starts inside it and
// ends past the end, cuts into the tail and appends again, on the layer
// and on os; the contents match after every step, and the snapshots
// keep theirs.
func TestProbeAppendsThenOverwrite(t *testing.T) {
	rounds, appends := 3, 300
	switch {
	case mem.RaceEnabled:
		appends = 150
	case !testsize.Short():
		rounds, appends = 12, 3000
	}
	host := filepath.Join(lwDir(t), "f")
	f := checked(t)
	var m [2]layer.File
	var o [2]*os.File
	for i, flag := range []int{os.O_WRONLY | os.O_CREATE | os.O_APPEND, os.O_RDWR} {
		var err error
		if m[i], err = f.OpenFile("f", flag, 0o644); err != nil {
			t.Fatal(err)
		}
		defer m[i].Close()
		if o[i], err = os.OpenFile(host, flag, 0o644); err != nil {
			t.Fatal(err)
		}
		defer o[i].Close()
	}
	mw := m[1].(lwRWFile)
	r := rand.New(rand.NewPCG(3, 0xa99))
	type kept struct {
		s    *mem.Snapshot
		size int
		sum  uint32
	}
	var snaps []kept
	keep := func(want []byte) {
		snaps = append(snaps, kept{f.Snapshot(), len(want), crc32.ChecksumIEEE(want)})
	}
	id := 0
	check := func(what string) []byte {
		t.Helper()
		want, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		got, err := lwContents(mw)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v; want %d, first difference at %d", what, len(got), err, len(want), lwDiffAt(got, want))
		}
		return want
	}
	doAppends := func(round int) {
		for j := range appends {
			id++
			p := lwData(id, int64(j), 1+r.IntN(200))
			if r.IntN(50) == 0 {
				p = lwData(id, int64(j), lwChunk-1+r.IntN(3))
			}
			if _, err := m[0].Write(p); err != nil {
				t.Fatal(err)
			}
			if _, err := o[0].Write(p); err != nil {
				t.Fatal(err)
			}
			if j%37 == 0 {
				keep(check(fmt.Sprintf("round %d, append %d", round, j)))
			}
		}
	}
	for round := range rounds {
		// From a file of at most three chunks, so that rounds do not
		// add up.
		if round > 0 {
			cut := r.Int64N(3 * lwChunk)
			if err := mw.Truncate(cut); err != nil {
				t.Fatal(err)
			}
			if err := o[1].Truncate(cut); err != nil {
				t.Fatal(err)
			}
		}
		doAppends(round)
		want := check(fmt.Sprintf("round %d, appended", round))
		size := int64(len(want))
		// From inside the appended tail (a few hundred bytes to a chunk
		// and a half back) to chunks past the end.
		off := max(0, size-int64(r.IntN(3*lwChunk/2))-3)
		id++
		p := lwData(id, off, int(size-off)+(1+r.IntN(70))*lwChunk+r.IntN(100))
		if _, err := mw.WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		if _, err := o[1].WriteAt(p, off); err != nil {
			t.Fatal(err)
		}
		want = check(fmt.Sprintf("round %d, overwritten from %d", round, off))
		keep(want)
		// Cut into the last chunk, append, grow with a hole, append.
		cut := int64(len(want)) - int64(r.IntN(lwChunk))
		for _, step := range []func(f interface{ Truncate(int64) error }) error{
			func(f interface{ Truncate(int64) error }) error { return f.Truncate(cut) },
			nil,
			func(f interface{ Truncate(int64) error }) error { return f.Truncate(cut + 1000) },
			nil,
		} {
			if step == nil {
				id++
				p := lwData(id, cut, 1+r.IntN(300))
				if _, err := m[0].Write(p); err != nil {
					t.Fatal(err)
				}
				if _, err := o[0].Write(p); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := step(mw); err != nil {
					t.Fatal(err)
				}
				if err := step(o[1]); err != nil {
					t.Fatal(err)
				}
			}
			keep(check(fmt.Sprintf("round %d, after the cut to %d", round, cut)))
		}
	}
	for i, s := range snaps {
		if got, err := fs.ReadFile(s.s, "f"); err != nil || len(got) != s.size || crc32.ChecksumIEEE(got) != s.sum {
			t.Fatalf("snapshot %d reads %d bytes, %v; it read %d bytes of other sum", i, len(got), err, s.size)
		}
	}
}

// lwZeros reads as zeros without end, as the holes of a sparse file read.
type lwZeros struct{}

func (lwZeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestProbeCopyInKeepsHoles: CopyIn of a file of 32 MiB whose data is a
// few bytes among zeros (a sparse file's reader, which reads its holes as
// zeros) costs the heap about its bytes, not its size, as the same file
// made by Truncate and WriteAt does; its bytes read back as they were.
func TestProbeCopyInKeepsHoles(t *testing.T) {
	const size = 32 << 20
	data := []struct {
		off int64
		p   string
	}{{0, "head"}, {16<<20 + 1, "middle"}, {size - 3, "end"}}
	var parts []io.Reader
	var at int64
	for _, d := range data {
		parts = append(parts, io.LimitReader(lwZeros{}, d.off-at), strings.NewReader(d.p))
		at = d.off + int64(len(d.p))
	}
	f := checked(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := f.CopyIn(".", []mem.Copy{{Name: "f", Mode: 0o644, Data: io.MultiReader(parts...)}}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Errorf("CopyIn of a file of %d bytes, %d of them not zeros, took %d bytes of heap", size, 13, grown)
	}
	h, err := f.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if fi, err := h.Stat(); err != nil || fi.Size() != size {
		t.Fatalf("Stat = %v, %v; want size %d", fi, err, size)
	}
	m := lwModel{{off: size, trunc: true}}
	for _, d := range data {
		m = append(m, lwChange{off: d.off, data: []byte(d.p)})
	}
	for _, d := range data {
		if err := lwCheckRange(h.(io.ReaderAt), m, len(m), d.off-lwChunk, 2*lwChunk+10); err != nil {
			t.Error(err)
		}
	}
}
