package mem_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// The probes of this file attack the chunk tree of the in-memory layer
// (chunks of 64 KiB under a radix tree of fan-out 8) and WriteShared,
// through the public API only, and compare with a model of the file kept
// at chunk granularity and, where ext4 in t.TempDir can hold the file,
// with os on the host.

const ctChunk = 64 << 10

// ctFile is what the probes use of a file of the layer or of the host.
type ctFile interface {
	io.ReaderAt
	io.WriterAt
	io.Seeker
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
}

type ctSharedWriter interface {
	WriteShared(p []byte, off int64, advance bool, log func() ([]byte, any, error)) (int, error)
}

// ctModel is a file at chunk granularity: chunks holds the chunks ever
// written since the last truncation that dropped them, as the layer
// keeps them (a missing chunk is a hole for SEEK_DATA and SEEK_HOLE).
// Chunk arrays are never changed once in the map (copy on write), so a
// clone shares them.
type ctModel struct {
	size   int64
	chunks map[int64][]byte
}

func newCtModel() *ctModel { return &ctModel{chunks: map[int64][]byte{}} }

func (m *ctModel) clone() *ctModel {
	c := &ctModel{size: m.size, chunks: make(map[int64][]byte, len(m.chunks))}
	for k, v := range m.chunks {
		c.chunks[k] = v
	}
	return c
}

func ctPastMax(off int64, n int) bool { return off > math.MaxInt64-int64(n) }

func (m *ctModel) write(p []byte, off int64) {
	for n := 0; n < len(p); {
		pos := off + int64(n)
		i := pos / ctChunk
		in := int(pos % ctChunk)
		want := min(len(p)-n, ctChunk-in)
		b := make([]byte, ctChunk)
		if old := m.chunks[i]; old != nil {
			copy(b, old)
		}
		copy(b[in:], p[n:n+want])
		m.chunks[i] = b
		n += want
	}
	m.size = max(m.size, off+int64(len(p)))
}

func (m *ctModel) truncate(size int64) {
	if size < m.size {
		last := int64(-1)
		if size > 0 {
			last = (size - 1) / ctChunk
		}
		for k := range m.chunks {
			if k > last {
				delete(m.chunks, k)
			}
		}
		if old := m.chunks[last]; old != nil && last >= 0 {
			b := make([]byte, ctChunk)
			copy(b, old[:size-last*ctChunk])
			m.chunks[last] = b
		}
	}
	m.size = size
}

// read returns what ReadAt(n bytes at off) gives: the bytes and whether
// it ends with io.EOF; off+n must not pass math.MaxInt64.
func (m *ctModel) read(off int64, n int) ([]byte, bool) {
	if off >= m.size {
		return nil, n > 0
	}
	end := min(m.size, off+int64(n))
	b := make([]byte, end-off)
	for x := off; x < end; {
		i := x / ctChunk
		in := x % ctChunk
		k := min(end-x, ctChunk-in)
		if c := m.chunks[i]; c != nil {
			copy(b[x-off:x-off+k], c[in:])
		}
		x += k
	}
	return b, int64(len(b)) < int64(n)
}

// seek is Seek(off, SeekData or SeekHole) at chunk granularity: the
// result, or -1 for ENXIO.
func (m *ctModel) seek(off int64, hole bool) int64 {
	if off < 0 || off >= m.size {
		return -1
	}
	last := (m.size - 1) / ctChunk
	i := off / ctChunk
	if hole {
		for i <= last && m.chunks[i] != nil {
			i++
		}
		if i > last {
			return m.size
		}
		return min(max(i*ctChunk, off), m.size)
	}
	best := int64(-1)
	for k := range m.chunks {
		if k >= i && (best < 0 || k < best) {
			best = k
		}
	}
	if best < 0 {
		return -1
	}
	return max(best*ctChunk, off)
}

// ctPattern returns n bytes, none zero, that depend on id and on each
// byte's offset.
func ctPattern(id int, off int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		x := uint64(off+int64(i))*0x9E3779B97F4A7C15 + uint64(id)*0xBF58476D1CE4E5B9
		x ^= x >> 29
		b[i] = byte(x) | 1
	}
	return b
}

func ctSeek(f io.Seeker, off int64, hole bool) (int64, error) {
	w := layer.SeekData
	if hole {
		w = layer.SeekHole
	}
	return f.Seek(off, w)
}

// ctCheck compares f with m around every offset of probes: Stat's size,
// ReadAt of windows around each, and SEEK_DATA and SEEK_HOLE at each.
func ctCheck(t *testing.T, what string, f interface {
	io.ReaderAt
	io.Seeker
	Stat() (fs.FileInfo, error)
}, m *ctModel, probes []int64, window int) bool {
	t.Helper()
	ok := true
	fi, err := f.Stat()
	if err != nil || fi.Size() != m.size {
		t.Errorf("%s: Stat size %v, %v; want %d", what, sizeOf(fi), err, m.size)
		ok = false
	}
	for _, x := range probes {
		for _, start := range []int64{x - int64(window), x} {
			if start < 0 {
				start = 0
			}
			n := 2 * window
			if ctPastMax(start, n) {
				n = int(math.MaxInt64 - start)
			}
			if n == 0 {
				continue
			}
			got := make([]byte, n)
			gn, gerr := f.ReadAt(got, start)
			want, eof := m.read(start, n)
			if gn != len(want) || !bytes.Equal(got[:gn], want) || (gerr == io.EOF) != eof || (gerr != nil && gerr != io.EOF) {
				t.Errorf("%s: ReadAt(%d bytes at %d) = %d, %v (first diff %d); want %d, eof %v",
					what, n, start, gn, gerr, ctFirstDiff(got[:gn], want), len(want), eof)
				ok = false
			}
		}
		if x < 0 {
			continue
		}
		for _, hole := range []bool{false, true} {
			got, err := ctSeek(f, x, hole)
			want := m.seek(x, hole)
			if want < 0 {
				if !errors.Is(err, syscall.ENXIO) {
					t.Errorf("%s: Seek(%d, hole %v) = %d, %v; want ENXIO", what, x, hole, got, err)
					ok = false
				}
			} else if err != nil || got != want {
				t.Errorf("%s: Seek(%d, hole %v) = %d, %v; want %d", what, x, hole, got, err, want)
				ok = false
			}
		}
	}
	return ok
}

func sizeOf(fi fs.FileInfo) any {
	if fi == nil {
		return nil
	}
	return fi.Size()
}

func ctFirstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func ctOpen(t *testing.T, f *mem.FS, name string) ctFile {
	t.Helper()
	h, err := f.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h.(ctFile)
}

// ctLevels are file sizes in chunks at the edges of the tree's levels.
var ctLevels = []int64{1, 8, 64, 512, 4096, 32768, 1 << 18, 1 << 21}

// TestProbeChunkTreeHugeOffsets writes at huge offsets, up to the last
// byte a file can hold, then reads around them, seeks for data and holes,
// truncates down to the edges of the tree's levels and back up, and
// compares every step with the model.
func TestProbeChunkTreeHugeOffsets(t *testing.T) {
	offs := []int64{
		1 << 40, 1<<40 - 1, 1 << 50, 1<<50 + ctChunk - 3,
		math.MaxInt64 - 1, math.MaxInt64 - 65536, math.MaxInt64 - 65537,
		math.MaxInt64 - 3*ctChunk - 5, math.MaxInt64 - 200000,
		8*ctChunk - 1, 64*ctChunk - 2, 512*ctChunk - 1, 4096*ctChunk - 1, 1 << 47, 1<<62 + 12345,
	}
	for i, off := range offs {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			f := checked(t)
			h := ctOpen(t, f, "f")
			m := newCtModel()
			n := int(min(200000, math.MaxInt64-off))
			p := ctPattern(i, off, n)
			if k, err := h.WriteAt(p, off); k != n || err != nil {
				t.Fatalf("WriteAt(%d bytes at %d) = %d, %v", n, off, k, err)
			}
			m.write(p, off)
			end := off + int64(n)
			probes := []int64{0, off - 1, off, off + 1, off + int64(n)/2, end - 1, end, end + 1, end + 70000,
				off &^ (ctChunk - 1), (off &^ (ctChunk - 1)) - 1, (end - 1) &^ (ctChunk - 1)}
			probes = slices.DeleteFunc(probes, func(x int64) bool { return x < 0 })
			// Continue past a failure: the truncations below are
			// probes of their own.
			ctCheck(t, "after write", h, m, probes, 100)
			// A read of bytes past math.MaxInt64 is EINVAL.
			if k, err := h.ReadAt(make([]byte, 10), math.MaxInt64-5); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("ReadAt(10 at MaxInt64-5) = %d, %v; want EINVAL", k, err)
			}
			if k, err := h.WriteAt([]byte("xy"), math.MaxInt64-1); !errors.Is(err, syscall.EINVAL) || k != 0 {
				t.Errorf("WriteAt(2 at MaxInt64-1) = %d, %v; want EINVAL", k, err)
			}
			// Down to each level's edge below the data, ±1, a byte
			// written there, back up: the old data is gone.
			for _, lv := range ctLevels {
				for _, d := range []int64{-1, 0, 1} {
					size := lv*ctChunk + d
					if size <= 0 || size >= off {
						continue
					}
					what := fmt.Sprintf("truncate to %d, write at %d, truncate to %d", size, size-1, end)
					mustCt(t, what, h.Truncate(size))
					m.truncate(size)
					b := ctPattern(100+int(lv), size-1, 1)
					if _, err := h.WriteAt(b, size-1); err != nil {
						t.Fatal(what, err)
					}
					m.write(b, size-1)
					mustCt(t, what, h.Truncate(end))
					m.truncate(end)
					pr := append([]int64{size - 2, size - 1, size, lv * ctChunk, (lv - 1) * ctChunk}, probes...)
					pr = slices.DeleteFunc(pr, func(x int64) bool { return x < 0 })
					ctCheck(t, what, h, m, pr, 80)
				}
			}
			// The data again, then down to one byte inside it and up.
			if _, err := h.WriteAt(p, off); err != nil {
				t.Fatal(err)
			}
			m.write(p, off)
			mustCt(t, "truncate into the data", h.Truncate(off+1))
			m.truncate(off + 1)
			mustCt(t, "truncate up", h.Truncate(end))
			m.truncate(end)
			ctCheck(t, "after truncating into the data and up", h, m, probes, 100)
		})
	}
}

func mustCt(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestProbeChunkTreeSeekHoleAtLastChunk is the end of the largest file
// a layer can hold: a file with its last chunk written has data up to
// its size, and the hole that starts at the end is its size.
func TestProbeChunkTreeSeekHoleAtLastChunk(t *testing.T) {
	for _, c := range []struct {
		off int64
		n   int
	}{
		{math.MaxInt64 - 1, 1},
		{math.MaxInt64 - 10, 10},
		{math.MaxInt64 - ctChunk + 1, ctChunk - 1}, // the last chunk whole
		{math.MaxInt64 - 2*ctChunk, 2 * ctChunk},
		{math.MaxInt64 - ctChunk - 5, 5}, // the chunk before the last
	} {
		f := checked(t)
		h := ctOpen(t, f, "f")
		if _, err := h.WriteAt(ctPattern(1, c.off, c.n), c.off); err != nil {
			t.Fatal(err)
		}
		end := c.off + int64(c.n)
		for _, x := range []int64{c.off, end - 1} {
			got, err := ctSeek(h, x, true)
			if err != nil || got != end {
				t.Errorf("write of %d at %d: Seek(%d, SeekHole) = %d, %v; want %d (the size)", c.n, c.off, x, got, err, end)
			}
			got, err = ctSeek(h, x, false)
			if err != nil || got != x {
				t.Errorf("write of %d at %d: Seek(%d, SeekData) = %d, %v; want %d", c.n, c.off, x, got, err, x)
			}
		}
	}
}

// TestProbeChunkTreeHostLevels runs writes and truncations across the
// edges of the tree's levels on the layer, on ext4 (or tmpfs) in
// t.TempDir and on the model, and compares contents, sizes and the seeks
// that both Linux and the layer guarantee: a written byte is data, and
// no written byte lies between an offset and its SEEK_DATA.
func TestProbeChunkTreeHostLevels(t *testing.T) {
	f := checked(t)
	h := ctOpen(t, f, "f")
	hf, err := os.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	m := newCtModel()
	rng := rand.New(rand.NewPCG(7, 11))
	var probes []int64
	edge := func() int64 {
		lv := ctLevels[rng.IntN(5)] // up to 4096 chunks
		return lv*ctChunk + rng.Int64N(5) - 2 + int64(rng.IntN(3)-1)*ctChunk
	}
	for step := range 120 {
		var what string
		switch rng.IntN(4) {
		case 0, 1:
			off := max(0, edge()-int64(rng.IntN(100)))
			n := 1 + rng.IntN(3*ctChunk)
			p := ctPattern(step, off, n)
			what = fmt.Sprintf("step %d: WriteAt(%d at %d)", step, n, off)
			gn, gerr := h.WriteAt(p, off)
			hn, herr := hf.WriteAt(p, off)
			if gn != hn || (gerr == nil) != (herr == nil) {
				t.Fatalf("%s: layer %d, %v; host %d, %v", what, gn, gerr, hn, herr)
			}
			m.write(p, off)
			probes = append(probes, off, off+int64(n)-1, off+int64(n))
		case 2:
			size := max(0, edge())
			what = fmt.Sprintf("step %d: Truncate(%d)", step, size)
			mustCt(t, what, h.Truncate(size))
			mustCt(t, what, hf.Truncate(size))
			m.truncate(size)
			probes = append(probes, size-1, size)
		case 3:
			size := max(0, edge()) + 4096*ctChunk
			what = fmt.Sprintf("step %d: Truncate up (%d)", step, size)
			mustCt(t, what, h.Truncate(size))
			mustCt(t, what, hf.Truncate(size))
			m.truncate(size)
		}
		probes = slices.DeleteFunc(probes, func(x int64) bool { return x < 0 })
		if step%10 != 9 {
			continue
		}
		if !ctCheck(t, what+" (layer against model)", h, m, probes, 64) {
			return
		}
		// Contents of host and model agree.
		for _, x := range probes {
			lo := max(0, x-64)
			got := make([]byte, 128)
			gn, gerr := hf.ReadAt(got, lo)
			want, eof := m.read(lo, 128)
			if gn != len(want) || !bytes.Equal(got[:gn], want) || (gerr == io.EOF) != eof {
				t.Fatalf("%s: host ReadAt(128 at %d) = %d, %v; model %d, eof %v (the model is wrong)", what, lo, gn, gerr, len(want), eof)
			}
			if x >= m.size {
				continue
			}
			b, _ := m.read(x, 1)
			for name, fl := range map[string]io.Seeker{"layer": h, "host": hf} {
				d, derr := ctSeek(fl, x, false)
				hl, herr := ctSeek(fl, x, true)
				if b[0] != 0 && (d != x || derr != nil || hl <= x || herr != nil) {
					t.Errorf("%s: %s: written byte at %d: SeekData %d, %v; SeekHole %d, %v", what, name, x, d, derr, hl, herr)
				}
				if derr == nil {
					if d < x {
						t.Errorf("%s: %s: SeekData(%d) = %d, before it", what, name, x, d)
					}
					between, _ := m.read(x, int(min(d-x, 1<<20)))
					if i := bytes.IndexFunc(between, func(r rune) bool { return r != 0 }); i >= 0 {
						t.Errorf("%s: %s: SeekData(%d) = %d passes written data", what, name, x, d)
					}
				} else if !errors.Is(derr, syscall.ENXIO) {
					t.Errorf("%s: %s: SeekData(%d): %v", what, name, x, derr)
				}
			}
		}
	}
}

// TestProbeChunkTreeSnapshotHistory runs seeded random WriteAt, Truncate,
// WriteShared and Snapshot across the tree's level edges and at huge
// offsets, and checks that every snapshot still reads exactly what the
// file held when it was taken, and seeks the same.
func TestProbeChunkTreeSnapshotHistory(t *testing.T) {
	seeds := uint64(4)
	if mem.RaceEnabled {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { ctSnapshotRun(t, seed) })
	}
}

type ctSnap struct {
	s    *mem.Snapshot
	m    *ctModel
	step int
}

func ctSnapshotRun(t *testing.T, seed uint64) {
	f := checked(t)
	h := ctOpen(t, f, "f")
	sw := h.(ctSharedWriter)
	m := newCtModel()
	rng := rand.New(rand.NewPCG(seed, 99))
	var snaps []ctSnap
	probeSet := map[int64]bool{}
	addProbe := func(xs ...int64) {
		for _, x := range xs {
			if x >= 0 {
				probeSet[x] = true
			}
		}
	}
	bases := []int64{0, 0, 0, 1 << 40, 1 << 50, math.MaxInt64 - 9*ctChunk}
	if seed%2 == 1 {
		bases = []int64{0, 0, 0}
	}
	off := func() int64 {
		base := bases[rng.IntN(len(bases))]
		lv := ctLevels[rng.IntN(4)]
		x := base + lv*ctChunk*int64(rng.IntN(2)) + int64(rng.IntN(17)-8)*ctChunk + int64(rng.IntN(7)-3)
		return max(0, x)
	}
	pins := []func(p []byte) any{
		func(p []byte) any { return p },
		func(p []byte) any { return struct{ b []byte }{p} },
		func(p []byte) any { return [1]any{p} },
		func(p []byte) any { return map[int][]byte{0: p} },
		func(p []byte) any { return &p },
		func(p []byte) any { return func() { _ = p } },
		func(p []byte) any { return 42 },
		func(p []byte) any { return nil }, // a nil pin: the write copies
	}
	var last []byte // the previous shared buffer, for a pin used twice
	for step := range 400 {
		switch k := rng.IntN(10); {
		case k < 4:
			o := off()
			n := 1 + rng.IntN(int(min(int64(3*ctChunk), math.MaxInt64-o)))
			if ctPastMax(o, n) {
				continue
			}
			p := ctPattern(step, o, n)
			if _, err := h.WriteAt(p, o); err != nil {
				t.Fatalf("seed %d step %d: WriteAt(%d at %d): %v", seed, step, n, o, err)
			}
			m.write(p, o)
			addProbe(o-1, o, o+int64(n)-1, o+int64(n))
		case k < 6:
			o := off()
			if rng.IntN(2) == 0 {
				o &^= ctChunk - 1
			}
			n := 1 + rng.IntN(4*ctChunk)
			if ctPastMax(o, n) {
				continue
			}
			p := ctPattern(1000+step, o, n)
			shared := p
			pin := pins[rng.IntN(len(pins))](p)
			if last != nil && rng.IntN(4) == 0 {
				pin = last // another write's slice as the pin
			}
			short := rng.IntN(8) == 0
			if short {
				shared = p[:n-1]
			}
			advance := rng.IntN(2) == 0
			gn, err := sw.WriteShared(p, o, advance, func() ([]byte, any, error) { return shared, pin, nil })
			if err != nil || gn != n {
				t.Fatalf("seed %d step %d: WriteShared(%d at %d, pin %T) = %d, %v", seed, step, n, o, pin, gn, err)
			}
			if advance {
				if pos, err := h.Seek(0, io.SeekCurrent); err != nil || pos != o+int64(n) {
					t.Errorf("seed %d step %d: offset after an advancing WriteShared %d, %v; want %d", seed, step, pos, err, o+int64(n))
				}
			}
			m.write(p, o)
			last = p
			addProbe(o-1, o, o+int64(n)-1, o+int64(n), o+ctChunk)
		case k < 8:
			var size int64
			switch rng.IntN(3) {
			case 0:
				size = off()
			case 1:
				size = max(0, m.size-int64(rng.IntN(3*ctChunk)))
			case 2:
				size = m.size + int64(rng.IntN(3*ctChunk))
			}
			if err := h.Truncate(size); err != nil {
				t.Fatalf("seed %d step %d: Truncate(%d): %v", seed, step, size, err)
			}
			m.truncate(size)
			addProbe(size-1, size)
		default:
			snaps = append(snaps, ctSnap{f.Snapshot(), m.clone(), step})
		}
		if step%50 == 49 || step == 399 {
			probes := make([]int64, 0, len(probeSet))
			for x := range probeSet {
				probes = append(probes, x)
			}
			slices.Sort(probes)
			if !ctCheck(t, fmt.Sprintf("seed %d step %d: live", seed, step), h, m, probes, 24) {
				return
			}
			for _, s := range snaps {
				sf, err := s.s.Open("f")
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("seed %d step %d: snapshot of step %d", seed, step, s.step)
				ok := ctCheck(t, what, sf.(ctFile), s.m, probes, 24)
				if ok && s.m.size < 8<<20 {
					b, err := s.s.ReadFile("f")
					want, _ := s.m.read(0, int(s.m.size))
					if err != nil || !bytes.Equal(b, want) {
						t.Errorf("%s: ReadFile differs at %d (%v)", what, ctFirstDiff(b, want), err)
						ok = false
					}
				}
				sf.Close()
				if !ok {
					return
				}
			}
		}
	}
}

// TestProbeChunkTreeReadersBesideWriter reads a snapshot and the live file
// in goroutines while a writer appends, rewrites (with WriteAt and
// WriteShared) and truncates down: the snapshot reads its bytes exactly,
// and every byte the live file reads is one the writer put there.
func TestProbeChunkTreeReadersBesideWriter(t *testing.T) {
	f := checked(t)
	h := ctOpen(t, f, "f")
	sw := h.(ctSharedWriter)
	val := func(x int64, flip bool) byte {
		b := byte(x*31+7) | 1
		if flip {
			b = ^b | 1
			if b == byte(x*31+7)|1 {
				b ^= 2
			}
		}
		return b
	}
	fill := func(off int64, n int, flip bool) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = val(off+int64(i), flip)
		}
		return b
	}
	first := fill(0, 9*ctChunk+5, false)
	if _, err := h.WriteAt(first, 0); err != nil {
		t.Fatal(err)
	}
	snap := f.Snapshot()
	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
		stop.Store(true)
	}
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 3))
			sf, err := snap.Open("f")
			if err != nil {
				report(err)
				return
			}
			defer sf.Close()
			live, err := f.Open("f")
			if err != nil {
				report(err)
				return
			}
			defer live.Close()
			buf := make([]byte, 3*ctChunk)
			for !stop.Load() {
				off := rng.Int64N(int64(len(first)))
				n, err := sf.(io.ReaderAt).ReadAt(buf, off)
				if want := first[off:min(off+int64(len(buf)), int64(len(first)))]; n != len(want) || !bytes.Equal(buf[:n], want) || (n < len(buf) && err != io.EOF) {
					report(fmt.Errorf("snapshot ReadAt(%d) = %d, %v: differs at %d", off, n, err, ctFirstDiff(buf[:n], want)))
					return
				}
				off = rng.Int64N(64 * ctChunk)
				n, _ = live.(io.ReaderAt).ReadAt(buf, off)
				for i, b := range buf[:n] {
					x := off + int64(i)
					if b != val(x, false) && b != val(x, true) {
						report(fmt.Errorf("live ReadAt(%d): byte %d is %#x, neither %#x nor %#x", off, x, b, val(x, false), val(x, true)))
						return
					}
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(5, 5))
	deadline := time.Now().Add(600 * time.Millisecond)
	for step := 0; time.Now().Before(deadline) && !stop.Load(); step++ {
		fi, _ := h.Stat()
		size := fi.Size()
		switch rng.IntN(5) {
		case 0: // append
			if size > 60*ctChunk {
				if err := h.Truncate(int64(rng.IntN(20 * ctChunk))); err != nil {
					t.Fatal(err)
				}
				continue
			}
			n := 1 + rng.IntN(2*ctChunk)
			if _, err := h.WriteAt(fill(size, n, rng.IntN(2) == 0), size); err != nil {
				t.Fatal(err)
			}
		case 1, 2: // rewrite
			if size == 0 {
				continue
			}
			off := rng.Int64N(size)
			n := int(min(size-off, int64(1+rng.IntN(2*ctChunk))))
			if _, err := h.WriteAt(fill(off, n, rng.IntN(2) == 0), off); err != nil {
				t.Fatal(err)
			}
		case 3: // shared rewrite or append of whole chunks
			off := rng.Int64N(size+1) &^ (ctChunk - 1)
			n := ctChunk * (1 + rng.IntN(3))
			p := fill(off, n, rng.IntN(2) == 0)
			if _, err := sw.WriteShared(p, off, false, func() ([]byte, any, error) { return p, p, nil }); err != nil {
				t.Fatal(err)
			}
		case 4: // truncate down
			if size > 0 {
				if err := h.Truncate(size - rng.Int64N(size)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if step%64 == 0 {
			runtime.Gosched()
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

// TestProbeWriteSharedOddPins writes with WriteShared under pins of odd
// types, and logs that return a shorter shared slice, nil or an error,
// and compares the file with a file of the host written with WriteAt.
func TestProbeWriteSharedOddPins(t *testing.T) {
	type holder struct {
		b []byte
		n int
	}
	var nilPtr *int
	var nilMap map[int]int
	var nilFunc func()
	var nilSlice []byte
	var iface error = (*os.PathError)(nil)
	data := ctPattern(9, 0, 6*ctChunk+77)
	dataB := ctPattern(10, 0, 6*ctChunk+77)
	pins := map[string]func(p []byte) any{
		"nil":              func([]byte) any { return nil },
		"typed nil ptr":    func([]byte) any { return nilPtr },
		"nil map":          func([]byte) any { return nilMap },
		"nil func":         func([]byte) any { return nilFunc },
		"nil slice":        func([]byte) any { return nilSlice },
		"nil error iface":  func([]byte) any { return iface },
		"slice":            func(p []byte) any { return p },
		"data slice":       func([]byte) any { return data },
		"holder":           func(p []byte) any { return holder{p, 1} },
		"array of any":     func(p []byte) any { return [2]any{1, p} },
		"array of ints":    func([]byte) any { return [2]int{1, 2} },
		"array any int":    func([]byte) any { return [2]any{1, 2} },
		"map":              func(p []byte) any { return map[string][]byte{"p": p} },
		"func":             func(p []byte) any { return func() []byte { return p } },
		"chan":             func([]byte) any { return make(chan int) },
		"pointer":          func(p []byte) any { return &p },
		"string":           func([]byte) any { return "pin" },
		"zero-size struct": func([]byte) any { return struct{}{} },
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range pins {
			if !yield(k) {
				return
			}
		}
	})
	// Write each pin after every other, so that samePin compares every
	// pair of types, in both orders.
	for _, name := range names {
		for _, other := range names {
			t.Run(name+"/"+other, func(t *testing.T) {
				f := checked(t)
				h := ctOpen(t, f, "f")
				sw := h.(ctSharedWriter)
				m := newCtModel()
				src := [2][]byte{data, dataB}
				for i, pf := range []func([]byte) any{pins[name], pins[other], pins[name], pins[name]} {
					off := int64(i) * ctChunk / 2 * 3 // chunk aligned or not
					p := src[i%2][:ctChunk*2+int(off%5)]
					pin := pf(p)
					n, err := sw.WriteShared(p, off, false, func() ([]byte, any, error) { return p, pin, nil })
					if err != nil || n != len(p) {
						t.Fatalf("write %d (pin %T): %d, %v", i, pin, n, err)
					}
					m.write(p, off)
				}
				ctCheck(t, "after writes", h, m, []int64{0, ctChunk, 2 * ctChunk, 3*ctChunk + 1, 5 * ctChunk}, 40000)
			})
		}
	}
}

// TestProbeWriteSharedLogResults checks WriteShared against WriteAt of
// the host: a log that returns a shorter slice or nil makes the write
// copy p; one that fails fails the write and changes nothing, the offset
// included; a failing write never calls the log.
func TestProbeWriteSharedLogResults(t *testing.T) {
	f := checked(t)
	h := ctOpen(t, f, "f")
	sw := h.(ctSharedWriter)
	hf, err := os.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	m := newCtModel()
	boom := errors.New("log failed")
	p := ctPattern(3, 0, 3*ctChunk+10)
	other := ctPattern(4, 0, 3*ctChunk+10)
	for i, c := range []struct {
		what string
		log  func() ([]byte, any, error)
		fail bool
	}{
		{"shared shorter", func() ([]byte, any, error) { return other[:len(p)-1], other, nil }, false},
		{"shared longer", func() ([]byte, any, error) { return other, other, nil }, false},
		{"nil shared", func() ([]byte, any, error) { return nil, other, nil }, false},
		{"nil pin", func() ([]byte, any, error) { return other[:len(p)], nil, nil }, false},
		{"error", func() ([]byte, any, error) { return p, p, boom }, true},
		{"error, nil shared", func() ([]byte, any, error) { return nil, nil, boom }, true},
		{"shared", func() ([]byte, any, error) { return p, p, nil }, false},
	} {
		off := int64(i)*ctChunk + int64(i)
		q := p
		if c.what == "shared longer" {
			q = p[:len(p)-3]
		}
		if _, err := h.Seek(17, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		n, err := sw.WriteShared(q, off, true, c.log)
		pos, _ := h.Seek(0, io.SeekCurrent)
		if c.fail {
			if !errors.Is(err, boom) || n != 0 || pos != 17 {
				t.Errorf("%s: WriteShared = %d, %v, offset %d; want 0, %v, 17", c.what, n, err, pos, boom)
			}
		} else {
			if err != nil || n != len(q) || pos != off+int64(len(q)) {
				t.Errorf("%s: WriteShared = %d, %v, offset %d; want %d, nil, %d", c.what, n, err, pos, len(q), off+int64(len(q)))
			}
			if _, err := hf.WriteAt(q, off); err != nil {
				t.Fatal(err)
			}
			m.write(q, off)
		}
		if !ctCheck(t, c.what, h, m, []int64{0, off, off + ctChunk, off + int64(len(q)) - 1}, 3*ctChunk) {
			continue
		}
		want, _ := os.ReadFile(hf.Name())
		if got, _ := f.ReadFile("f"); !bytes.Equal(got, want) {
			t.Errorf("%s: the file differs from the host's at %d", c.what, ctFirstDiff(got, want))
		}
	}
	// Writes that fail before the log: never call it.
	called := false
	logf := func() ([]byte, any, error) { called = true; return p, p, nil }
	for _, c := range []struct {
		what string
		off  int64
		p    []byte
		want error
	}{
		{"negative offset", -1, p, nil},
		{"past MaxInt64", math.MaxInt64 - 2, p[:3], syscall.EINVAL},
		{"past MaxInt64 by 1", math.MaxInt64 - 1, p[:2], syscall.EINVAL},
	} {
		called = false
		n, err := sw.WriteShared(c.p, c.off, true, logf)
		if err == nil || n != 0 || called || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: WriteShared = %d, %v, log called %v; want an error (%v) before the log", c.what, n, err, called, c.want)
		}
	}
	// The last byte a file holds, shared.
	called = false
	if n, err := sw.WriteShared(p[:1], math.MaxInt64-1, false, logf); err != nil || n != 1 || !called {
		t.Errorf("WriteShared(1 at MaxInt64-1) = %d, %v, log called %v", n, err, called)
	}
	ro, err := f.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if rsw, ok := ro.(ctSharedWriter); ok {
		called = false
		if n, err := rsw.WriteShared(p, 0, false, logf); !errors.Is(err, syscall.EBADF) || n != 0 || called {
			t.Errorf("WriteShared on a read-only handle = %d, %v, log called %v; want EBADF", n, err, called)
		}
	}
	h2, err := f.OpenFile("f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	h2.Close()
	called = false
	if n, err := h2.(ctSharedWriter).WriteShared(p, 0, false, logf); !errors.Is(err, fs.ErrClosed) || n != 0 || called {
		t.Errorf("WriteShared on a closed handle = %d, %v, log called %v; want ErrClosed", n, err, called)
	}
}

// TestProbeWriteSharedWatched: a WriteShared is a change of the file's
// content as WriteAt is, and a watcher hears of it.
func TestProbeWriteSharedWatched(t *testing.T) {
	f := checked(t)
	h := ctOpen(t, f, "f")
	sw := h.(ctSharedWriter)
	w, err := f.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := ctPattern(1, 0, 2*ctChunk)
	if _, err := h.WriteAt(p, 0); err != nil {
		t.Fatal(err)
	}
	byWriteAt := w.Changes()
	if _, err := sw.WriteShared(p, 0, false, func() ([]byte, any, error) { return p, p, nil }); err != nil {
		t.Fatal(err)
	}
	byShared := w.Changes()
	if len(byWriteAt) == 0 || fmt.Sprint(byShared) != fmt.Sprint(byWriteAt) {
		t.Errorf("changes of WriteAt %v, of WriteShared %v; want the same", byWriteAt, byShared)
	}
}

// ctAllocRun makes n WriteShared calls of one 64 KiB chunk, at offsets
// cycling over 64 chunks, with the pins pin(i) gives, and returns the
// bytes allocated.
func ctAllocRun(t *testing.T, n int, buf []byte, pin func(i int) any) uint64 {
	f := mem.New()
	hh, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer hh.Close()
	sw := hh.(ctSharedWriter)
	log := func(i int) func() ([]byte, any, error) {
		return func() ([]byte, any, error) { return buf, pin(i), nil }
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		if _, err := sw.WriteShared(buf, int64(i%64)*ctChunk, false, log(i)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	got, _ := f.ReadFile("f")
	if len(got) != 64*ctChunk || !bytes.Equal(got[:ctChunk], buf) || !bytes.Equal(got[63*ctChunk:], buf) {
		t.Errorf("the file reads other bytes than were written")
	}
	return after.TotalAlloc - before.TotalAlloc
}

// TestProbeWriteSharedPinMemory: a run of writes with one pin allocates
// about the same per write in a run of 10,000 as in one of 1,000: no
// quadratic growth, for any type of pin, a slice or a struct holding one
// included, and for two pins that alternate.
func TestProbeWriteSharedPinMemory(t *testing.T) {
	type holder struct{ b []byte }
	buf := ctPattern(77, 0, ctChunk)
	other := ctPattern(78, 0, ctChunk)
	fn := func() {}
	mp := map[int]int{}
	cases := []struct {
		what string
		pin  func(i int) any
	}{
		{"the same slice", func(int) any { return buf }},
		{"the same pointer", func(int) any { return &buf }},
		{"the same map", func(int) any { return mp }},
		{"the same func", func(int) any { return fn }},
		{"the same struct holding a slice", func(int) any { return holder{buf} }},
		{"the same array holding a slice", func(int) any { return [1]any{buf} }},
		{"two slices alternating", func(i int) any {
			if i%2 == 0 {
				return buf
			}
			return other
		}},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			ns, nb := 1000, 10000
			if mem.RaceEnabled {
				ns, nb = 500, 5000
			}
			small := ctAllocRun(t, ns, buf, c.pin)
			big := ctAllocRun(t, nb, buf, c.pin)
			perSmall, perBig := float64(small)/float64(ns), float64(big)/float64(nb)
			t.Logf("%s: %.0f bytes a write over %d writes, %.0f over %d", c.what, perSmall, ns, perBig, nb)
			if perBig > 3*perSmall+1024 {
				t.Errorf("%s: %d writes allocate %d bytes, %.0f a write; %d allocate %.0f a write: not linear",
					c.what, nb, big, perBig, ns, perSmall)
			}
		})
	}
}

// ctMapping stands for a mapping of a log, whose memory Go does not
// manage: once unreachable it is "unmapped" (its bytes scribbled over),
// so a file that lost its pin reads other bytes.
type ctMapping struct{ buf []byte }

func (m *ctMapping) Release() {}

func newCtMapping(b []byte, released *atomic.Int32) *ctMapping {
	m := &ctMapping{buf: b}
	runtime.AddCleanup(m, func(b []byte) {
		for i := range b {
			b[i] = 0xEE
		}
		released.Add(1)
	}, b)
	return m
}

// TestProbeWriteSharedPinKeepsMapping: each write's pin keeps its own
// mapping alive while the file holds its chunks, for pins that are the
// mapping itself, a closure over it or a method value of it: two
// closures of one function literal, or two method values, over two
// mappings are two pins.
func TestProbeWriteSharedPinKeepsMapping(t *testing.T) {
	for _, c := range []struct {
		what string
		pin  func(m *ctMapping) any
	}{
		{"pointer", func(m *ctMapping) any { return m }},
		{"closure", func(m *ctMapping) any { return func() { runtime.KeepAlive(m) } }},
		{"method value", func(m *ctMapping) any { return m.Release }},
		{"struct holding the mapping", func(m *ctMapping) any { return struct{ m *ctMapping }{m} }},
	} {
		t.Run(c.what, func(t *testing.T) {
			var released atomic.Int32
			f := checked(t)
			h := ctOpen(t, f, "f")
			sw := h.(ctSharedWriter)
			const k = 4
			want := make([][]byte, k)
			write := func(i int) {
				b := ctPattern(i, 0, ctChunk)
				want[i] = append([]byte(nil), b...)
				m := newCtMapping(b, &released)
				pin := c.pin(m)
				if _, err := sw.WriteShared(m.buf, int64(i)*ctChunk, false, func() ([]byte, any, error) { return m.buf, pin, nil }); err != nil {
					t.Fatal(err)
				}
			}
			for i := range k {
				write(i)
			}
			// A control mapping nobody pins: once it is released, the
			// cleanups have run for what the file let go.
			var control atomic.Int32
			func() { newCtMapping(make([]byte, 10), &control) }()
			for deadline := time.Now().Add(10 * time.Second); control.Load() == 0 && time.Now().Before(deadline); {
				runtime.GC()
				time.Sleep(time.Millisecond)
			}
			if control.Load() == 0 {
				t.Fatal("no cleanup ran in 10 s of collections: the probe would show nothing")
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
			_ = released.Load() // the cleanups that ran happen before the reads
			for i := range k {
				got := make([]byte, ctChunk)
				if _, err := h.ReadAt(got, int64(i)*ctChunk); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want[i]) {
					t.Errorf("pin %s: chunk %d reads other bytes (byte 0 %#x, want %#x): its mapping was released while the file holds it (%d of %d released)",
						c.what, i, got[0], want[i][0], released.Load(), k)
				}
			}
			runtime.KeepAlive(h)
		})
	}
}
