package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// The probes of this file write runs of many chunks of the in-memory
// layer through the durable store, whose writes of 64 KiB or more keep
// the log's mapped pages as the file's chunks (WriteShared), and through
// the union, whose first write to a lower file copies it up: against a
// model of the file, with snapshots, checkpoints, reopens and readers
// beside, and against os for handles of files renamed, removed or
// replaced meanwhile.

// plwChunk is the in-memory layer's chunk, whose edges the writes
// straddle; 64 of them make a leaf of its chunk tree.
const plwChunk = 64 << 10

// plwSrcPeriod is the period of the writes' data, a prime number of
// bytes, so that no chunk of a write repeats another's.
const plwSrcPeriod = 1<<20 + 7

// plwSrc holds the random bytes the writes take their data from; it is
// never written to.
var plwSrc = sync.OnceValue(func() []byte {
	b := make([]byte, plwSrcPeriod+130*plwChunk)
	rand.NewChaCha8([32]byte{'p', 'l', 'w'}).Read(b)
	return b
})

// plwData returns the n bytes write id puts at off (n at most 130
// chunks): they depend on the write and the position, so that a chunk
// landing elsewhere, a stale one or a write applied in part shows.
func plwData(id int, off int64, n int) []byte {
	start := (int64(id)*7919 + off%plwSrcPeriod) % plwSrcPeriod
	return plwSrc()[start : start+int64(n) : start+int64(n)]
}

func plwDiffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// plwModel is the file the steps make, as a byte slice.
type plwModel struct {
	b []byte
}

func (m *plwModel) writeAt(p []byte, off int64) {
	if end := int(off) + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	copy(m.b[off:], p)
}

func (m *plwModel) truncate(size int64) {
	if int(size) <= len(m.b) {
		m.b = m.b[:size]
	} else {
		m.b = append(m.b, make([]byte, int(size)-len(m.b))...)
	}
}

// plwFile is what the probes use of a handle.
type plwFile interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Seeker
	io.Closer
	Truncate(int64) error
	Stat() (fs.FileInfo, error)
}

// plwWrite writes data through write from a buffer of the caller's that
// it overwrites once the write returns, as a caller reusing its buffer
// does: a file that kept the caller's memory shows it.
func plwWrite(buf, data []byte, write func(p []byte) (int, error)) (int, error) {
	p := buf[:len(data)]
	copy(p, data)
	n, err := write(p)
	for i := range p {
		p[i] = 0xa5
	}
	return n, err
}

// plwPolicies are the sync policies the store probes run under.
var plwPolicies = map[string]packfs.SyncPolicy{"SyncNone": packfs.SyncNone, "SyncAlways": packfs.SyncAlways}

// TestProbeStoreLargeWriteModel drives a file of the durable store
// through random steps: writes of 1 to 32 chunks (128 with
// PACKFS_LONG=1) a few bytes off the edges of chunks and leaves, past
// the end and over holes, appends, writes at a Seek, truncations down and
// up, small writes, checkpoints, and closes and reopens of the store;
// after each step the file reads as its model, and so do the snapshots
// taken between the steps, read again before the store closes, and the
// file once the store is reopened.
func TestProbeStoreLargeWriteModel(t *testing.T) {
	seeds, steps, maxChunks := 1, 10, 32
	switch {
	case raceEnabled:
		steps = 8
	case !testsize.Short():
		seeds, steps, maxChunks = 4, 120, 128
	}
	for name, policy := range plwPolicies {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed=%d", name, seed), func(t *testing.T) { plwStoreModel(t, policy, uint64(seed), steps, maxChunks) })
		}
	}
}

func plwStoreModel(t *testing.T, policy packfs.SyncPolicy, seed uint64, steps, maxChunks int) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 0x5706e+uint64(policy)))
	var s *packfs.Store
	var w, a plwFile
	open := func() {
		var err error
		if s, err = packfs.Open(dir, &packfs.Options{Sync: policy, CheckpointBytes: -1}); err != nil {
			t.Fatal(err)
		}
		for _, h := range []struct {
			f    *plwFile
			flag int
		}{{&w, os.O_RDWR | os.O_CREATE}, {&a, os.O_WRONLY | os.O_APPEND}} {
			f, err := s.OpenFile("f", h.flag, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			*h.f = f.(plwFile)
		}
	}
	type kept struct {
		fsys *packfs.FS
		step int
		size int
		sum  uint32
	}
	var snaps []kept
	checkSnaps := func() {
		for _, k := range snaps {
			got, err := k.fsys.ReadFile("f")
			if err != nil || len(got) != k.size || crc32.ChecksumIEEE(got) != k.sum {
				t.Errorf("the snapshot after step %d reads %d bytes, %v; it read %d", k.step, len(got), err, k.size)
			}
		}
		snaps = nil
	}
	closeAll := func() {
		checkSnaps()
		w.Close()
		a.Close()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	open()
	var m plwModel
	buf := make([]byte, (maxChunks+1)*plwChunk)
	edge := func() int64 {
		edges := []int64{0, plwChunk, 2 * plwChunk, 63 * plwChunk, 64 * plwChunk, 65 * plwChunk}
		return max(0, edges[r.IntN(len(edges))]+int64(r.IntN(11)-5))
	}
	length := func() int { return max(1, (1+r.IntN(maxChunks))*plwChunk+r.IntN(11)-5) }
	for i := range steps {
		var what string
		var err error
		k := r.IntN(100)
		if len(m.b) > 8<<20 {
			k = 70 // cut it
		}
		switch {
		case k < 35:
			off, n := edge(), length()
			if r.IntN(3) == 0 {
				off = max(0, off-int64(n)/2)
			}
			what = fmt.Sprintf("WriteAt(%d bytes, %d)", n, off)
			data := plwData(i, off, n)
			_, err = plwWrite(buf, data, func(p []byte) (int, error) { return w.WriteAt(p, off) })
			m.writeAt(data, off)
		case k < 45:
			holes := []int64{1, plwChunk - 1, plwChunk, plwChunk + 3, 64*plwChunk + 1}
			off, n := int64(len(m.b))+holes[r.IntN(len(holes))], length()
			what = fmt.Sprintf("WriteAt(%d bytes, %d) past the end", n, off)
			data := plwData(i, off, n)
			_, err = plwWrite(buf, data, func(p []byte) (int, error) { return w.WriteAt(p, off) })
			m.writeAt(data, off)
		case k < 55:
			n := length()
			if r.IntN(3) == 0 {
				n = 1 + r.IntN(100)
			}
			what = fmt.Sprintf("append %d bytes", n)
			data := plwData(i, int64(len(m.b)), n)
			_, err = plwWrite(buf, data, a.Write)
			m.writeAt(data, int64(len(m.b)))
		case k < 65:
			off, n := edge(), length()
			what = fmt.Sprintf("Seek(%d), Write(%d bytes)", off, n)
			if _, err = w.Seek(off, io.SeekStart); err == nil {
				data := plwData(i, off, n)
				_, err = plwWrite(buf, data, w.Write)
				m.writeAt(data, off)
			}
		case k < 80:
			size := r.Int64N(int64(len(m.b)) + 1)
			if r.IntN(3) == 0 {
				size = edge() + int64(r.IntN(2))*int64(len(m.b))
			}
			what = fmt.Sprintf("Truncate(%d) from %d", size, len(m.b))
			err = w.Truncate(size)
			m.truncate(size)
		case k < 88:
			off := max(0, min(int64(len(m.b)), edge())+int64(r.IntN(9)-4))
			n := 1 + r.IntN(100)
			what = fmt.Sprintf("WriteAt(%d bytes, %d), small", n, off)
			data := plwData(i, off, n)
			_, err = plwWrite(buf, data, func(p []byte) (int, error) { return w.WriteAt(p, off) })
			m.writeAt(data, off)
		case k < 94:
			what = "Checkpoint"
			err = s.Checkpoint()
		default:
			what = "close and reopen"
			closeAll()
			open()
		}
		if err != nil {
			t.Fatalf("step %d: %s: %v", i, what, err)
		}
		got, err := s.ReadFile("f")
		if err != nil || !bytes.Equal(got, m.b) {
			t.Fatalf("step %d: %s: ReadFile = %d bytes, %v; want %d, first difference at %d", i, what, len(got), err, len(m.b), plwDiffAt(got, m.b))
		}
		if fi, err := w.Stat(); err != nil || fi.Size() != int64(len(m.b)) {
			t.Fatalf("step %d: %s: the handle's Stat = %v, %v; want size %d", i, what, fi, err, len(m.b))
		}
		if i%3 == 0 {
			snap, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, kept{snap, i, len(m.b), crc32.ChecksumIEEE(m.b)})
		}
	}
	closeAll()
	s, err := packfs.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.ReadFile("f"); err != nil || !bytes.Equal(got, m.b) {
		t.Fatalf("reopened: ReadFile = %d bytes, %v; want %d, first difference at %d", len(got), err, len(m.b), plwDiffAt(got, m.b))
	}
}

// plwRun is a run of bytes of one value in plwState.
type plwRun struct {
	start, end int64
	v          byte
}

// plwState is a file whose bytes are runs of one value each, zeros
// between them.
type plwState struct {
	size int64
	runs []plwRun // sorted, not overlapping
}

func (s plwState) write(off, n int64, v byte) plwState {
	end := off + n
	var before, after []plwRun
	for _, r := range s.runs {
		if r.start < off {
			before = append(before, plwRun{r.start, min(r.end, off), r.v})
		}
		if r.end > end {
			after = append(after, plwRun{max(r.start, end), r.end, r.v})
		}
	}
	return plwState{max(s.size, end), append(append(before, plwRun{off, end, v}), after...)}
}

func (s plwState) truncate(size int64) plwState {
	var runs []plwRun
	for _, r := range s.runs {
		if r.start < size {
			runs = append(runs, plwRun{r.start, min(r.end, size), r.v})
		}
	}
	return plwState{size, runs}
}

// check reports whether a read of len(p) bytes at off that returned n and
// err read s.
func (s plwState) check(p []byte, off int64, n int, err error) bool {
	want := int(max(0, min(int64(len(p)), s.size-off)))
	if n != want || (err == io.EOF) != (want < len(p)) || (err != nil && err != io.EOF) {
		return false
	}
	end, at := off+int64(n), off
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

// TestProbeStoreLargeWriteReaders: one writer makes writes of 1 to 40
// chunks (70 with PACKFS_LONG=1) through the store, each of one byte value, truncations down and
// up, and appends, while checkpoints start by themselves (every 4 MiB of
// log) and swap the tree under the readers, who read the file through
// ReadFile, a read-only handle's ReadAt, Stat, and snapshots. Every read
// must show one state the file had while it ran, and every snapshot,
// read again at the end, the state it showed first (or fs.ErrClosed,
// once two flattens have passed it).
func TestProbeStoreLargeWriteReaders(t *testing.T) {
	ops, maxChunks := 20, 40
	if !testsize.Short() && !raceEnabled {
		ops, maxChunks = 400, 70
	}
	r := rand.New(rand.NewPCG(2, 0x5eade))
	type op struct {
		off, n int64
		v      byte
		trunc  bool
		append bool
	}
	var plan []op
	states := []plwState{{}}
	for i := range ops {
		s := states[len(states)-1]
		var o op
		switch k := r.IntN(10); {
		case k < 2 || s.size > 8<<20:
			o = op{off: max(0, (r.Int64N(s.size+1)&^(plwChunk-1))+int64(r.IntN(5)-2)), trunc: true}
		case k < 3:
			o = op{off: s.size + r.Int64N(3*plwChunk), trunc: true}
		case k < 5:
			o = op{off: s.size, n: int64(1+r.IntN(maxChunks))*plwChunk + int64(r.IntN(7)-3), append: true}
		default:
			o = op{off: max(0, int64(r.IntN(100))*plwChunk+int64(r.IntN(7)-3)), n: int64(1+r.IntN(maxChunks))*plwChunk + int64(r.IntN(7)-3)}
		}
		o.v = byte(i%255 + 1)
		plan = append(plan, o)
		if o.trunc {
			states = append(states, s.truncate(o.off))
		} else {
			states = append(states, s.write(o.off, o.n, o.v))
		}
	}

	s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: 4 << 20, MaxPacks: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := s.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	app, err := s.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	// started is the number of operations begun, done of those ended: a
	// read that starts after done was n and ends before started is m
	// shows states[n] to states[m].
	var started, done atomic.Int64
	matches := func(lo, hi int64, check func(plwState) bool) int64 {
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
		fsys *packfs.FS
		k    int64
	}
	var snaps []kept
	for g := range 4 {
		wg.Go(func() {
			rr := rand.New(rand.NewPCG(uint64(g), 3))
			h, err := s.Open("f")
			if err != nil {
				errs <- err
				return
			}
			defer h.Close()
			buf := make([]byte, 3*plwChunk+10)
			for !stop.Load() {
				lo := done.Load()
				var what string
				var check func(plwState) bool
				switch g {
				case 0:
					off := max(0, int64(rr.IntN(140))*plwChunk+int64(rr.IntN(9)-4))
					p := buf[:1+rr.IntN(len(buf))]
					n, err := h.(io.ReaderAt).ReadAt(p, off)
					what = fmt.Sprintf("ReadAt(%d bytes, %d) = %d, %v", len(p), off, n, err)
					check = func(st plwState) bool { return st.check(p, off, n, err) }
				case 1:
					b, err := s.ReadFile("f")
					what = fmt.Sprintf("ReadFile = %d bytes, %v", len(b), err)
					check = func(st plwState) bool { return err == nil && st.size == int64(len(b)) && st.check(b, 0, len(b), nil) }
				case 2:
					fi, err := s.Stat("f")
					if err != nil {
						errs <- err
						return
					}
					what = fmt.Sprintf("Stat: size %d", fi.Size())
					check = func(st plwState) bool { return st.size == fi.Size() }
				case 3:
					snap, err := s.Snapshot()
					if err != nil {
						errs <- err
						return
					}
					b, err := snap.ReadFile("f")
					hi := started.Load()
					k := matches(lo, hi, func(st plwState) bool { return err == nil && st.size == int64(len(b)) && st.check(b, 0, len(b), nil) })
					if k < 0 {
						errs <- fmt.Errorf("a snapshot reads %d bytes, %v: not one of states %d to %d", len(b), err, lo, hi)
						return
					}
					if len(snaps) < 32 {
						snaps = append(snaps, kept{snap, k})
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
	buf := make([]byte, (maxChunks+1)*plwChunk)
	for i, o := range plan {
		started.Store(int64(i + 1))
		var p []byte
		if !o.trunc {
			p = bytes.Repeat([]byte{o.v}, int(o.n))
		}
		switch {
		case o.trunc:
			err = w.Truncate(o.off)
		case o.append:
			_, err = plwWrite(buf, p, app.Write)
		default:
			_, err = plwWrite(buf, p, func(p []byte) (int, error) { return w.WriteAt(p, o.off) })
		}
		if err != nil {
			t.Fatalf("operation %d %+v: %v", i, o, err)
		}
		done.Store(int64(i + 1))
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	last := states[len(states)-1]
	if b, err := s.ReadFile("f"); err != nil || int64(len(b)) != last.size || !last.check(b, 0, len(b), nil) {
		t.Errorf("at the end, ReadFile = %d bytes, %v; not the last state", len(b), err)
	}
	for _, k := range snaps {
		b, err := k.fsys.ReadFile("f")
		if errors.Is(err, fs.ErrClosed) {
			continue // two flattens past it
		}
		if st := states[k.k]; err != nil || int64(len(b)) != st.size || !st.check(b, 0, len(b), nil) {
			t.Errorf("a snapshot of state %d now reads %d bytes, %v: it changed", k.k, len(b), err)
		}
	}
}

// TestProbeStoreLargeWriteMovedFile: through the store, a handle keeps
// writing its file in writes of many chunks after the file is renamed,
// replaced by a rename over its name, or removed, as on Linux (os in a
// host directory gets the same calls); the names read as os's, before
// and after a checkpoint, and after the store is reopened. The quick run
// takes SyncAlways only.
func TestProbeStoreLargeWriteMovedFile(t *testing.T) {
	for name, policy := range plwPolicies {
		if testsize.Short() && policy != packfs.SyncAlways {
			continue // one policy in the quick run
		}
		t.Run(name, func(t *testing.T) { plwMovedFile(t, policy) })
	}
}

func plwMovedFile(t *testing.T, policy packfs.SyncPolicy) {
	dir, host := t.TempDir(), t.TempDir()
	s, err := packfs.Open(dir, &packfs.Options{Sync: policy, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	type pair struct {
		m plwFile
		o *os.File
	}
	open := func(name string, flag int) pair {
		m, err := s.OpenFile(name, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		o, err := os.OpenFile(filepath.Join(host, name), flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return pair{m.(plwFile), o}
	}
	both := func(what string, fm, fo func() error) {
		t.Helper()
		if em, eo := fm(), fo(); (em == nil) != (eo == nil) {
			t.Fatalf("%s: %v; os: %v", what, em, eo)
		}
	}
	buf := make([]byte, 130*plwChunk)
	id := 0
	writeAt := func(p pair, off int64, n int) {
		t.Helper()
		id++
		data := plwData(id, off, n)
		both(fmt.Sprintf("WriteAt(%d bytes, %d)", n, off),
			func() error {
				_, err := plwWrite(buf, data, func(b []byte) (int, error) { return p.m.WriteAt(b, off) })
				return err
			},
			func() error { _, err := p.o.WriteAt(data, off); return err })
	}
	write := func(p pair, n int) {
		t.Helper()
		id++
		data := plwData(id, int64(id), n)
		both(fmt.Sprintf("Write(%d bytes)", n),
			func() error { _, err := plwWrite(buf, data, p.m.Write); return err },
			func() error { _, err := p.o.Write(data); return err })
	}
	same := func(what string, p pair) {
		t.Helper()
		var got [2][]byte
		for i, f := range []interface {
			io.ReaderAt
			Stat() (fs.FileInfo, error)
		}{p.m, p.o} {
			fi, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			got[i] = make([]byte, fi.Size())
			if _, err := f.ReadAt(got[i], 0); err != nil && err != io.EOF {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got[0], got[1]) {
			t.Fatalf("%s: the handle reads %d bytes, os %d, first difference at %d", what, len(got[0]), len(got[1]), plwDiffAt(got[0], got[1]))
		}
	}
	names := func(what string) {
		t.Helper()
		for _, name := range []string{"a", "b"} {
			got, gerr := s.ReadFile(name)
			want, werr := os.ReadFile(filepath.Join(host, name))
			if errors.Is(gerr, fs.ErrNotExist) != errors.Is(werr, fs.ErrNotExist) || !bytes.Equal(got, want) {
				t.Fatalf("%s: ReadFile(%s) = %d bytes, %v; os: %d, %v, first difference at %d", what, name, len(got), gerr, len(want), werr, plwDiffAt(got, want))
			}
		}
	}
	rename := func(a, b string) {
		t.Helper()
		both("rename", func() error { return s.Rename(a, b) }, func() error { return os.Rename(filepath.Join(host, a), filepath.Join(host, b)) })
	}

	a := open("a", os.O_RDWR|os.O_CREATE)
	writeAt(a, 7, 3*plwChunk+5)
	rename("a", "b")
	writeAt(a, plwChunk-3, 70*plwChunk) // logged as b's
	write(a, 65*plwChunk+1)
	same("renamed", a)
	names("renamed")
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	writeAt(a, 4<<20-1, 2*plwChunk+3) // after the checkpoint moved the handle
	same("renamed, after a checkpoint", a)
	names("renamed, after a checkpoint")

	c := open("a", os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	writeAt(c, 0, 2*plwChunk)
	rename("a", "b") // a's file is now unlinked, open through a
	writeAt(a, 64*plwChunk-1, 129*plwChunk+3)
	both("Truncate", func() error { return a.m.Truncate(5*plwChunk + 9) }, func() error { return a.o.Truncate(5*plwChunk + 9) })
	write(a, 64*plwChunk)
	same("replaced", a)
	writeAt(c, 63*plwChunk, 3*plwChunk)
	same("the file over it", c)
	names("replaced")

	app := open("b", os.O_WRONLY|os.O_APPEND)
	both("remove", func() error { return s.Remove("b") }, func() error { return os.Remove(filepath.Join(host, "b")) })
	write(app, 100*plwChunk-1)
	writeAt(c, plwChunk+1, 64*plwChunk)
	same("removed", c)
	d := open("b", os.O_RDWR|os.O_CREATE|os.O_EXCL)
	writeAt(d, 3, 2*plwChunk)
	same("the new b", d)
	same("the first file", a)
	names("removed, the name reused")
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	writeAt(d, 70*plwChunk, plwChunk)
	names("after a second checkpoint")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = packfs.Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	names("reopened")
}

// TestProbeUnionLargeWrite: through a union over a lower holding the
// file, handles open for writing copy it up, then write runs of many
// chunks across the edges of chunks and leaves, truncate, append, while
// the file is renamed and removed through the union; everything reads as
// os does with the same calls, and the union's snapshots keep what they
// showed.
func TestProbeUnionLargeWrite(t *testing.T) {
	host := t.TempDir()
	lower := mem.New()
	// The lower file: bytes, a hole of two chunks, bytes.
	first := append(append(bytes.Clone(plwData(0, 0, 3*plwChunk+5)), make([]byte, 2*plwChunk)...), plwData(0, 5*plwChunk+5, 100)...)
	if err := lower.WriteFile("f", first, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "f"), first, 0o644); err != nil {
		t.Fatal(err)
	}
	u := packfs.New(mem.New(), lower.Snapshot())
	type pair struct {
		m plwFile
		o *os.File
	}
	open := func(name string, flag int) pair {
		m, err := u.OpenFile(name, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		o, err := os.OpenFile(filepath.Join(host, name), flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return pair{m.(plwFile), o}
	}
	type kept struct {
		fsys       *packfs.FS
		name, what string
		want       []byte
	}
	var snaps []kept
	names := func(what string) {
		t.Helper()
		for _, name := range []string{"f", "g"} {
			got, gerr := u.ReadFile(name)
			want, werr := os.ReadFile(filepath.Join(host, name))
			if errors.Is(gerr, fs.ErrNotExist) != errors.Is(werr, fs.ErrNotExist) || !bytes.Equal(got, want) {
				t.Fatalf("%s: ReadFile(%s) = %d bytes, %v; os: %d, %v, first difference at %d", what, name, len(got), gerr, len(want), werr, plwDiffAt(got, want))
			}
			if werr == nil {
				snap, err := u.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				snaps = append(snaps, kept{snap, name, what, want})
			}
		}
	}
	id := 0
	step := func(what string, p pair, fm func(f plwFile) error, fo func(f *os.File) error) {
		t.Helper()
		if em, eo := fm(p.m), fo(p.o); (em == nil) != (eo == nil) {
			t.Fatalf("%s: %v; os: %v", what, em, eo)
		}
		names(what)
	}
	writeAt := func(p pair, off int64, n int) {
		t.Helper()
		id++
		data := plwData(id, off, n)
		step(fmt.Sprintf("WriteAt(%d bytes, %d)", n, off), p,
			func(f plwFile) error { _, err := f.WriteAt(data, off); return err },
			func(f *os.File) error { _, err := f.WriteAt(data, off); return err })
	}
	write := func(p pair, n int) {
		t.Helper()
		id++
		data := plwData(id, int64(id), n)
		step(fmt.Sprintf("Write(%d bytes)", n), p,
			func(f plwFile) error { _, err := f.Write(data); return err },
			func(f *os.File) error { _, err := f.Write(data); return err })
	}
	truncate := func(p pair, size int64) {
		t.Helper()
		step(fmt.Sprint("Truncate ", size), p,
			func(f plwFile) error { return f.Truncate(size) },
			func(f *os.File) error { return f.Truncate(size) })
	}

	names("at first")
	h := open("f", os.O_RDWR)
	writeAt(h, 2*plwChunk-3, 66*plwChunk+7) // copies f up, across a leaf
	writeAt(h, 64*plwChunk-5, 3*plwChunk)
	app := open("f", os.O_WRONLY|os.O_APPEND)
	write(app, 64*plwChunk+1)
	truncate(h, 4*plwChunk+1)
	write(app, 2)
	writeAt(h, 6*plwChunk, 65*plwChunk) // past the end, over a hole
	if err := u.Rename("f", "g"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(host, "f"), filepath.Join(host, "g")); err != nil {
		t.Fatal(err)
	}
	writeAt(h, 1, 70*plwChunk)
	write(app, 3*plwChunk)
	if err := u.Remove("g"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(host, "g")); err != nil {
		t.Fatal(err)
	}
	writeAt(h, 128*plwChunk-7, 2*plwChunk)
	for _, p := range []pair{h} {
		got, err := io.ReadAll(io.NewSectionReader(p.m, 0, 1<<40))
		if err != nil {
			t.Fatal(err)
		}
		want, err := io.ReadAll(io.NewSectionReader(p.o, 0, 1<<40))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the removed file reads %d bytes through its handle, os %d, first difference at %d", len(got), len(want), plwDiffAt(got, want))
		}
	}
	for _, k := range snaps {
		if got, err := k.fsys.ReadFile(k.name); err != nil || !bytes.Equal(got, k.want) {
			t.Errorf("the snapshot after %s reads %s as %d bytes, %v; it read %d", k.what, k.name, len(got), err, len(k.want))
		}
	}
}

// plwHeap returns the bytes of the heap in use after a collection.
func plwHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestProbeCopyUpKeepsHoles: a sparse file of 32 MiB with a few bytes of
// data costs the heap its bytes, not its size, when it is copied into
// the in-memory layer: by the union's copy-up of a lower file opened for
// writing, and by the store's checkpoint, which reopens every open
// handle's file in the tree over the new pack.
func TestProbeCopyUpKeepsHoles(t *testing.T) {
	const size = 32 << 20
	data := []struct {
		off int64
		p   []byte
	}{{3, []byte("head")}, {16<<20 + 1, []byte("middle")}, {size - 3, []byte("end")}}
	check := func(what string, f io.ReaderAt) {
		t.Helper()
		for _, d := range data {
			got := make([]byte, len(d.p)+2)
			n, err := f.ReadAt(got, d.off-1)
			want := append(append([]byte{0}, d.p...), 0)
			if d.off+int64(len(d.p)) == size {
				want = want[:len(want)-1]
			}
			if n != len(want) || (err != nil && err != io.EOF) || !bytes.Equal(got[:n], want) {
				t.Errorf("%s: ReadAt(%d bytes, %d) = %d, %v, %q; want %q", what, len(got), d.off-1, n, err, got[:n], want)
			}
		}
	}
	write := func(f layer.File) {
		t.Helper()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		for _, d := range data {
			if _, err := f.WriteAt(d.p, d.off); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("union", func(t *testing.T) {
		lower := mem.New()
		f, err := lower.Create("f")
		if err != nil {
			t.Fatal(err)
		}
		write(f)
		f.Close()
		u := packfs.New(mem.New(), lower.Snapshot())
		before := plwHeap()
		h, err := u.OpenFile("f", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if grown := plwHeap() - before; grown > 8<<20 {
			t.Errorf("the copy-up of a sparse file of %d bytes took %d bytes of heap", size, grown)
		}
		check("copied up", h.(io.ReaderAt))
	})

	t.Run("store", func(t *testing.T) {
		s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		f, err := s.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		write(f)
		before := plwHeap()
		if err := s.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if grown := plwHeap() - before; grown > 8<<20 {
			t.Errorf("a checkpoint with a sparse file of %d bytes open took %d bytes of heap", size, grown)
		}
		check("after the checkpoint", f.(io.ReaderAt))
	})
}
