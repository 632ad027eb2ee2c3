package mem_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// Hostile probes of the inline first write (up to 132 bytes in the
// allocation of the file's state), through the public API only.

const piInline = 132

type piKept struct {
	s    *mem.Snapshot
	fi   fs.FileInfo
	want []byte
	what string
}

func piFill(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.IntN(255) + 1)
	}
	return p
}

func piGrow(model []byte, end int) []byte {
	if end > len(model) {
		model = append(model, make([]byte, end-len(model))...)
	}
	return model
}

func piReadAll(t *testing.T, h layer.File) []byte {
	t.Helper()
	fi, err := h.Stat()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, fi.Size()+17)
	n, err := h.ReadAt(got, 0)
	if err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return got[:n]
}

// piRun runs one sequence starting with a first write of size bytes at
// off, checking the file, every snapshot and every old Stat after each
// step against a []byte model.
func piRun(t *testing.T, off, size int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(off*1000+size)))
	f := mem.New()
	h, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ap, err := f.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	var model []byte
	var kept []piKept
	trace := []string{}
	check := func(what string) {
		trace = append(trace, what)
		got := piReadAll(t, h)
		if !bytes.Equal(got, model) {
			t.Fatalf("first write %d@%d, steps %v: file reads %q (len %d), want %q (len %d)", size, off, trace, got, len(got), model, len(model))
		}
		b, err := f.ReadFile("f")
		if err != nil || !bytes.Equal(b, model) {
			t.Fatalf("first write %d@%d, steps %v: ReadFile %q %v, want %q", size, off, trace, b, err, model)
		}
		fi, err := f.Stat("f")
		if err != nil || fi.Size() != int64(len(model)) {
			t.Fatalf("first write %d@%d, steps %v: Stat size %v %v, want %d", size, off, trace, sizeOrNil(fi), err, len(model))
		}
		kept = append(kept, piKept{f.Snapshot(), fi, bytes.Clone(model), what})
		for i, k := range kept {
			b, err := k.s.ReadFile("f")
			if err != nil || !bytes.Equal(b, k.want) {
				t.Fatalf("first write %d@%d, steps %v: snapshot %d (after %s) reads %q %v, want %q", size, off, trace, i, k.what, b, err, k.want)
			}
			if k.fi.Size() != int64(len(k.want)) {
				t.Fatalf("first write %d@%d, steps %v: FileInfo %d (after %s) has Size %d, want %d", size, off, trace, i, k.what, k.fi.Size(), len(k.want))
			}
		}
	}
	// First write.
	p := piFill(rng, size)
	if _, err := h.WriteAt(p, int64(off)); err != nil {
		t.Fatal(err)
	}
	model = piGrow(model, off+size)
	copy(model[off:], p)
	check(fmt.Sprintf("writeat %d@%d", size, off))
	for range 10 {
		switch rng.IntN(8) {
		case 0: // O_APPEND write
			p := piFill(rng, 1+rng.IntN(40))
			if n, err := ap.Write(p); err != nil || n != len(p) {
				t.Fatal(n, err)
			}
			model = append(model, p...)
			check(fmt.Sprintf("append %d", len(p)))
		case 1: // WriteAt at the end
			p := piFill(rng, 1+rng.IntN(40))
			if _, err := h.WriteAt(p, int64(len(model))); err != nil {
				t.Fatal(err)
			}
			model = append(model, p...)
			check(fmt.Sprintf("writeat-end %d@%d", len(p), len(model)-len(p)))
		case 2: // overwrite inside
			if len(model) == 0 {
				continue
			}
			o := rng.IntN(len(model))
			p := piFill(rng, 1+rng.IntN(len(model)-o))
			if _, err := h.WriteAt(p, int64(o)); err != nil {
				t.Fatal(err)
			}
			copy(model[o:], p)
			check(fmt.Sprintf("overwrite %d@%d", len(p), o))
		case 3: // truncate down then up
			down := 0
			if len(model) > 0 {
				down = rng.IntN(len(model))
			}
			up := down + 1 + rng.IntN(80)
			if err := h.Truncate(int64(down)); err != nil {
				t.Fatal(err)
			}
			model = model[:down]
			check(fmt.Sprintf("truncate %d", down))
			if err := h.Truncate(int64(up)); err != nil {
				t.Fatal(err)
			}
			model = piGrow(model, up)
			check(fmt.Sprintf("truncate-up %d", up))
		case 4: // seek past the end and write: a hole
			gap := 1 + rng.IntN(60)
			pos := int64(len(model) + gap)
			if got, err := h.Seek(pos, io.SeekStart); err != nil || got != pos {
				t.Fatal(got, err)
			}
			p := piFill(rng, 1+rng.IntN(20))
			if _, err := h.Write(p); err != nil {
				t.Fatal(err)
			}
			model = piGrow(model, int(pos)+len(p))
			copy(model[pos:], p)
			check(fmt.Sprintf("seek+write %d@%d", len(p), pos))
		case 5: // WriteString at the end
			s := strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(30))
			if _, err := h.Seek(0, io.SeekEnd); err != nil {
				t.Fatal(err)
			}
			if _, err := h.WriteString(s); err != nil {
				t.Fatal(err)
			}
			model = append(model, s...)
			check(fmt.Sprintf("writestring %d", len(s)))
		case 6: // truncate to zero, then a new first write
			if err := h.Truncate(0); err != nil {
				t.Fatal(err)
			}
			model = model[:0]
			check("truncate 0")
			o, n := rng.IntN(140), 1+rng.IntN(140)
			p := piFill(rng, n)
			if _, err := h.WriteAt(p, int64(o)); err != nil {
				t.Fatal(err)
			}
			model = piGrow(model, o+n)
			copy(model[o:], p)
			check(fmt.Sprintf("rewrite %d@%d", n, o))
		case 7: // truncate down a little, write just past the new end
			if len(model) < 2 {
				continue
			}
			down := len(model) - 1 - rng.IntN(len(model)-1)
			if err := h.Truncate(int64(down)); err != nil {
				t.Fatal(err)
			}
			model = model[:down]
			check(fmt.Sprintf("truncate %d", down))
			p := piFill(rng, 1+rng.IntN(10))
			at := down + rng.IntN(3)
			if _, err := h.WriteAt(p, int64(at)); err != nil {
				t.Fatal(err)
			}
			model = piGrow(model, at+len(p))
			copy(model[at:], p)
			check(fmt.Sprintf("writeat %d@%d", len(p), at))
		}
	}
}

func sizeOrNil(fi fs.FileInfo) any {
	if fi == nil {
		return nil
	}
	return fi.Size()
}

// TestProbeInlineGrid: first writes at every offset 0..140 of every
// size 1..140 (boundary piInline), then a random run of appends, overwrites,
// truncates, holes and WriteString, against a []byte model.
func TestProbeInlineGrid(t *testing.T) {
	step := 1
	if mem.RaceEnabled {
		step = 7
	}
	for off := 0; off <= 140; off += step {
		for size := 1; size <= 140; size++ {
			if mem.RaceEnabled && size%5 != 0 && size != piInline && size != piInline+1 && off+size != piInline && off+size != piInline+1 {
				continue
			}
			piRun(t, off, size, 1)
		}
	}
}

// TestProbeInlineSpareOldBytes: the spare capacity holds bytes of a
// later version when the file is truncated down and up again, or a
// snapshot keeps a shorter version; they must read as zeros / stay.
func TestProbeInlineSpareOldBytes(t *testing.T) {
	for _, first := range []int{1, 10, 60, piInline - 1, piInline} {
		f := mem.New()
		h, err := f.Create("f")
		if err != nil {
			t.Fatal(err)
		}
		a := bytes.Repeat([]byte("A"), first)
		h.Write(a)
		s1 := f.Snapshot()
		fi1, _ := f.Stat("f")
		// Fill the spare capacity in place.
		b := bytes.Repeat([]byte("B"), piInline-first+5)
		h.Write(b)
		s2 := f.Snapshot()
		down := first / 2
		if err := h.Truncate(int64(down)); err != nil {
			t.Fatal(err)
		}
		if err := h.Truncate(200); err != nil {
			t.Fatal(err)
		}
		want := append(bytes.Repeat([]byte("A"), down), make([]byte, 200-down)...)
		if got, _ := f.ReadFile("f"); !bytes.Equal(got, want) {
			t.Fatalf("first %d: after truncate %d then 200 reads %q, want %q", first, down, got, want)
		}
		// Truncate down, append in the old spare area, truncate up.
		h.Truncate(int64(first))
		h.WriteAt([]byte("C"), int64(first))
		h.Truncate(int64(first + 50))
		want = append(append(bytes.Repeat([]byte("A"), down), make([]byte, first-down)...), 'C')
		want = append(want, make([]byte, 49)...)
		if got, _ := f.ReadFile("f"); !bytes.Equal(got, want) {
			t.Fatalf("first %d: reads %q, want %q", first, got, want)
		}
		if got, _ := s1.ReadFile("f"); !bytes.Equal(got, a) {
			t.Fatalf("first %d: snapshot 1 reads %q, want %q", first, got, a)
		}
		if fi1.Size() != int64(first) {
			t.Fatalf("first %d: old Stat says %d", first, fi1.Size())
		}
		if got, _ := s2.ReadFile("f"); !bytes.Equal(got, append(bytes.Clone(a), b...)) {
			t.Fatalf("first %d: snapshot 2 reads %q", first, got)
		}
		h.Close()
	}
}

// TestProbeInlineVsOS drives mem and os (a file in t.TempDir()) through
// the same random runs and compares bytes and sizes after each step.
func TestProbeInlineVsOS(t *testing.T) {
	dir := t.TempDir()
	seeds := 150
	if mem.RaceEnabled {
		seeds = 30
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 77))
		name := filepath.Join(dir, fmt.Sprintf("f%d", seed))
		oh, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		oa, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := mem.New()
		mh, _ := f.OpenFile("f", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		ma, _ := f.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
		var log []string
		cmp := func() {
			ob, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			mb, err := f.ReadFile("f")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ob, mb) {
				t.Fatalf("seed %d %v: mem %q, os %q", seed, log, mb, ob)
			}
			oo, _ := oh.Seek(0, io.SeekCurrent)
			mo, _ := mh.Seek(0, io.SeekCurrent)
			if oo != mo {
				t.Fatalf("seed %d %v: offset mem %d os %d", seed, log, mo, oo)
			}
		}
		o, n := rng.IntN(141), 1+rng.IntN(140)
		p := piFill(rng, n)
		oh.WriteAt(p, int64(o))
		mh.WriteAt(p, int64(o))
		log = append(log, fmt.Sprintf("writeat %d@%d", n, o))
		cmp()
		for range 12 {
			var a, b error
			switch k := rng.IntN(6); k {
			case 0:
				p := piFill(rng, 1+rng.IntN(40))
				_, a = oa.Write(p)
				_, b = ma.Write(p)
				log = append(log, fmt.Sprintf("append %d", len(p)))
			case 1:
				p := piFill(rng, 1+rng.IntN(40))
				at := rng.Int64N(200)
				_, a = oh.WriteAt(p, at)
				_, b = mh.WriteAt(p, at)
				log = append(log, fmt.Sprintf("writeat %d@%d", len(p), at))
			case 2:
				sz := rng.Int64N(220)
				a, b = oh.Truncate(sz), mh.Truncate(sz)
				log = append(log, fmt.Sprintf("truncate %d", sz))
			case 3:
				at := rng.Int64N(250)
				oh.Seek(at, io.SeekStart)
				mh.Seek(at, io.SeekStart)
				p := piFill(rng, 1+rng.IntN(30))
				_, a = oh.Write(p)
				_, b = mh.Write(p)
				log = append(log, fmt.Sprintf("seek+write %d@%d", len(p), at))
			case 4:
				s := strings.Repeat("z", 1+rng.IntN(20))
				_, a = oh.WriteString(s)
				_, b = mh.WriteString(s)
				log = append(log, fmt.Sprintf("writestring %d", len(s)))
			case 5:
				_, a = oa.WriteAt([]byte("x"), 0)
				_, b = ma.WriteAt([]byte("x"), 0)
				if (a == nil) != (b == nil) {
					t.Fatalf("seed %d: WriteAt on O_APPEND: os %v, mem %v", seed, a, b)
				}
				a, b = nil, nil
				log = append(log, "writeat-on-append")
			}
			if (a == nil) != (b == nil) {
				t.Fatalf("seed %d %v: os %v, mem %v", seed, log, a, b)
			}
			cmp()
		}
		oh.Close()
		oa.Close()
		mh.Close()
		ma.Close()
	}
}

// piVersions is the set of contents a file has been given; the writer
// adds one before it makes it, so a reader never sees an unknown one.
type piVersions struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (v *piVersions) add(b []byte) {
	v.mu.Lock()
	v.seen[string(b)] = true
	v.mu.Unlock()
}

func (v *piVersions) has(b []byte) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.seen[string(b)]
}

func (v *piVersions) hasSize(n int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for s := range v.seen {
		if int64(len(s)) == n {
			return true
		}
	}
	return false
}

// TestProbeInlineConcurrentReaders: readers (ReadFile, ReadAt of open
// handles, Stat, snapshots re-read later) beside a writer that appends
// small pieces, truncates and rewrites small files, one file and many.
func TestProbeInlineConcurrentReaders(t *testing.T) {
	for _, nfiles := range []int{1, 16} {
		t.Run(fmt.Sprint(nfiles), func(t *testing.T) {
			f := mem.New()
			vers := make([]*piVersions, nfiles)
			hs := make([]layer.File, nfiles)
			models := make([][]byte, nfiles)
			for i := range nfiles {
				vers[i] = &piVersions{seen: map[string]bool{"": true}}
				h, err := f.Create(fmt.Sprintf("f%d", i))
				if err != nil {
					t.Fatal(err)
				}
				hs[i] = h
			}
			var stop atomic.Bool
			var failed atomic.Value
			fail := func(format string, args ...any) {
				failed.CompareAndSwap(nil, fmt.Sprintf(format, args...))
				stop.Store(true)
			}
			var wg sync.WaitGroup
			for r := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(r), 9))
					handles := make([]layer.File, nfiles)
					for i := range nfiles {
						h, err := f.OpenFile(fmt.Sprintf("f%d", i), os.O_RDONLY, 0)
						if err != nil {
							fail("open: %v", err)
							return
						}
						defer h.Close()
						handles[i] = h
					}
					type snap struct {
						s    *mem.Snapshot
						i    int
						want []byte
						fi   fs.FileInfo
					}
					var snaps []snap
					buf := make([]byte, 1024)
					for !stop.Load() {
						i := rng.IntN(nfiles)
						name := fmt.Sprintf("f%d", i)
						switch rng.IntN(4) {
						case 0:
							b, err := f.ReadFile(name)
							if err != nil || !vers[i].has(b) {
								fail("ReadFile %s: %q %v: never written", name, b, err)
							}
						case 1:
							n, err := handles[i].ReadAt(buf, 0)
							if err != nil && err != io.EOF {
								fail("ReadAt: %v", err)
							}
							if !vers[i].has(buf[:n]) {
								fail("ReadAt %s: %q never written", name, buf[:n])
							}
						case 2:
							fi, err := f.Stat(name)
							if err != nil || !vers[i].hasSize(fi.Size()) {
								fail("Stat %s: %v %v", name, sizeOrNil(fi), err)
							}
						case 3:
							s := f.Snapshot()
							b, err := s.ReadFile(name)
							if err != nil || !vers[i].has(b) {
								fail("snapshot %s: %q %v never written", name, b, err)
							}
							fi, _ := s.Stat(name)
							if len(snaps) < 64 {
								snaps = append(snaps, snap{s, i, b, fi})
							}
						}
						for _, k := range snaps {
							b, _ := k.s.ReadFile(fmt.Sprintf("f%d", k.i))
							if !bytes.Equal(b, k.want) {
								fail("snapshot of f%d changed: %q, was %q", k.i, b, k.want)
							}
							if k.fi.Size() != int64(len(k.want)) {
								fail("snapshot Stat of f%d changed size: %d, was %d", k.i, k.fi.Size(), len(k.want))
							}
						}
					}
				}()
			}
			rng := rand.New(rand.NewPCG(5, 5))
			deadline := time.Now().Add(400 * time.Millisecond)
			for ops := 0; time.Now().Before(deadline) && !stop.Load(); ops++ {
				i := rng.IntN(nfiles)
				h, m := hs[i], models[i]
				switch k := rng.IntN(10); {
				case k < 6: // small append
					p := piFill(rng, 1+rng.IntN(12))
					m = append(bytes.Clone(m), p...)
					vers[i].add(m)
					if _, err := h.WriteAt(p, int64(len(m)-len(p))); err != nil {
						t.Fatal(err)
					}
				case k < 8: // truncate down then up
					down := rng.IntN(len(m) + 1)
					up := down + rng.IntN(40)
					m1 := bytes.Clone(m[:down])
					vers[i].add(m1)
					h.Truncate(int64(down))
					m = piGrow(m1, up)
					vers[i].add(m)
					h.Truncate(int64(up))
				case k == 8: // rewrite from zero
					p := piFill(rng, 1+rng.IntN(140))
					o := rng.IntN(20)
					vers[i].add(nil)
					h.Truncate(0)
					m = piGrow(nil, o+len(p))
					copy(m[o:], p)
					vers[i].add(m)
					h.WriteAt(p, int64(o))
				default: // overwrite inside
					if len(m) == 0 {
						continue
					}
					o := rng.IntN(len(m))
					p := piFill(rng, 1+rng.IntN(len(m)-o))
					m = bytes.Clone(m)
					copy(m[o:], p)
					vers[i].add(m)
					h.WriteAt(p, int64(o))
				}
				if len(m) > 600 {
					vers[i].add(nil)
					h.Truncate(0)
					m = nil
				}
				models[i] = m
			}
			stop.Store(true)
			wg.Wait()
			if v := failed.Load(); v != nil {
				t.Fatal(v)
			}
			for i := range nfiles {
				b, _ := f.ReadFile(fmt.Sprintf("f%d", i))
				if !bytes.Equal(b, models[i]) {
					t.Fatalf("f%d: %q, want %q", i, b, models[i])
				}
				hs[i].Close()
			}
		})
	}
}

// TestProbeInlineConcurrentAppend: two handles (O_APPEND) of one file
// append records concurrently, after an inline first write; readers
// check every version is whole records; the end has every record once.
func TestProbeInlineConcurrentAppend(t *testing.T) {
	for round := range 20 {
		f := mem.New()
		if err := f.WriteFile("f", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		h0, _ := f.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
		h0.Write([]byte("head\n")) // the inline first write
		var wg sync.WaitGroup
		var stop atomic.Bool
		var bad atomic.Value
		wg.Add(1)
		go func() { // reader
			defer wg.Done()
			for !stop.Load() {
				b, _ := f.ReadFile("f")
				if len(b) > 0 && b[len(b)-1] != '\n' {
					bad.CompareAndSwap(nil, fmt.Sprintf("torn version %q", b))
				}
				if !bytes.HasPrefix(b, []byte("head\n")) {
					bad.CompareAndSwap(nil, fmt.Sprintf("lost head %q", b))
				}
			}
		}()
		const per = 200
		var ww sync.WaitGroup
		for w := range 2 {
			ww.Add(1)
			go func() {
				defer ww.Done()
				h, err := f.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					panic(err)
				}
				defer h.Close()
				for k := range per {
					rec := fmt.Sprintf("%d:%d:%s\n", w, k, strings.Repeat("x", (k*7+w)%9))
					if n, err := h.Write([]byte(rec)); err != nil || n != len(rec) {
						panic(fmt.Sprint(n, err))
					}
				}
			}()
		}
		ww.Wait()
		stop.Store(true)
		wg.Wait()
		h0.Close()
		if v := bad.Load(); v != nil {
			t.Fatalf("round %d: %v", round, v)
		}
		b, _ := f.ReadFile("f")
		var want []string
		total := len("head\n")
		for w := range 2 {
			for k := range per {
				rec := fmt.Sprintf("%d:%d:%s", w, k, strings.Repeat("x", (k*7+w)%9))
				want = append(want, rec)
				total += len(rec) + 1
			}
		}
		if len(b) != total {
			t.Fatalf("round %d: length %d, want %d", round, len(b), total)
		}
		got := strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(b), "head\n"), "\n"), "\n")
		next := [2]int{}
		for _, r := range got {
			var w, k int
			fmt.Sscanf(r, "%d:%d:", &w, &k)
			if w < 0 || w > 1 || k != next[w] {
				t.Fatalf("round %d: record %q out of order (want %d:%d)", round, r, w, next[w])
			}
			next[w]++
		}
		sort.Strings(got)
		sort.Strings(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("round %d: records differ", round)
		}
	}
}

// TestProbeInlineRenameAndCopy: after an inline first write, the file
// is renamed, copied with CopyIn sharing a snapshot's content, and (if
// the layer had Link) hard-linked; then every name is written.
func TestProbeInlineRenameAndCopy(t *testing.T) {
	for _, first := range []int{1, 10, 100, piInline} {
		f := mem.New()
		h, _ := f.Create("a")
		a := bytes.Repeat([]byte("a"), first)
		h.Write(a)
		if err := f.Rename("a", "b"); err != nil {
			t.Fatal(err)
		}
		h.Write([]byte("1")) // through the handle, in place
		s := f.Snapshot()
		c, ok := s.Content("b")
		if !ok {
			t.Fatal("no content")
		}
		if err := f.CopyIn(".", []mem.Copy{{Name: "c", Mode: 0o644, Share: c}}); err != nil {
			t.Fatal(err)
		}
		hc, err := f.OpenFile("c", os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		hb, _ := f.OpenFile("b", os.O_WRONLY|os.O_APPEND, 0)
		// Both names append at the same length into the shared spare.
		hb.Write([]byte("BBB"))
		hc.Write([]byte("CC"))
		hb.Write([]byte("b"))
		hc.Write([]byte("c"))
		base := append(bytes.Clone(a), '1')
		wantB := append(bytes.Clone(base), "BBBb"...)
		wantC := append(bytes.Clone(base), "CCc"...)
		if got, _ := f.ReadFile("b"); !bytes.Equal(got, wantB) {
			t.Fatalf("first %d: b reads %q, want %q", first, got, wantB)
		}
		if got, _ := f.ReadFile("c"); !bytes.Equal(got, wantC) {
			t.Fatalf("first %d: c reads %q, want %q", first, got, wantC)
		}
		if got, _ := s.ReadFile("b"); !bytes.Equal(got, base) {
			t.Fatalf("first %d: snapshot reads %q, want %q", first, got, base)
		}
		if _, ok := any(f).(interface{ Link(string, string) error }); ok {
			t.Log("layer has Link: not probed")
		}
		h.Close()
		hb.Close()
		hc.Close()
	}
}

// TestProbeInlineSharedAcrossLayers: a snapshot's content of a small
// file made by an inline first write is shared (CopyIn Share) into a
// second layer, as the durable store's checkpoint does; then the file
// is appended in both layers at once. Each layer's writer holds only
// its own lock, yet both see the shared high-water mark equal to their
// length and may append in place into the same spare bytes.
func TestProbeInlineSharedAcrossLayers(t *testing.T) {
	rounds := 20000
	if mem.RaceEnabled {
		rounds = 200
	}
	for round := range rounds {
		f1 := mem.New()
		h1, _ := f1.Create("f")
		h1.Write([]byte("0123456789")) // inline: 126 bytes of spare
		c, _ := f1.Snapshot().Content("f")
		f2 := mem.New()
		if err := f2.CopyIn(".", []mem.Copy{{Name: "f", Mode: 0o644, Share: c}}); err != nil {
			t.Fatal(err)
		}
		h2, _ := f2.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			h1.Write([]byte("AAAAAAAA"))
		}()
		go func() {
			defer wg.Done()
			<-start
			h2.Write([]byte("BBBBBBBB"))
		}()
		close(start)
		wg.Wait()
		b1, _ := f1.ReadFile("f")
		b2, _ := f2.ReadFile("f")
		if string(b1) != "0123456789AAAAAAAA" || string(b2) != "0123456789BBBBBBBB" {
			t.Fatalf("round %d: layer 1 reads %q, layer 2 reads %q", round, b1, b2)
		}
		h1.Close()
		h2.Close()
	}
}

func piHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestProbeInlineManyFilesMemory: 100,000 files of tiny first writes
// cost about their 256-byte object and the rest of a file; removing them
// gives the memory back.
func TestProbeInlineManyFilesMemory(t *testing.T) {
	n := 100_000
	if mem.RaceEnabled {
		n = 20_000
	}
	for _, size := range []int{1, 16, piInline, piInline + 1} {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("d/f%06d", i)
		}
		p := bytes.Repeat([]byte("q"), size)
		base := piHeap()
		f := mem.New()
		f.Mkdir("d", 0o755)
		for _, name := range names {
			h, err := f.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(p)
			h.Close()
		}
		full := piHeap()
		per := float64(full-base) / float64(n)
		t.Logf("first write %d bytes: %.0f heap bytes a file", size, per)
		// 256 for the state's object, and as much again for the inode,
		// entry, directory index and name; twice that is the limit.
		if limit := 2 * float64(256+256+max(size-piInline, 0)); per > limit {
			t.Errorf("first write %d bytes: %.0f heap bytes a file, more than %.0f", size, per, limit)
		}
		for i, name := range names {
			if i%2 == 0 {
				continue
			}
			b, err := f.ReadFile(name)
			if err != nil || !bytes.Equal(b, p) {
				t.Fatalf("%s: %q %v", name, b, err)
			}
		}
		for _, name := range names {
			if err := f.Remove(name); err != nil {
				t.Fatal(err)
			}
		}
		after := piHeap()
		runtime.KeepAlive(f)
		t.Logf("after removing: %d bytes above the start (full %d)", int64(after)-int64(base), full-base)
		if after > base+(full-base)/10 {
			t.Errorf("first write %d bytes: removing %d files left %d of %d bytes", size, n, after-base, full-base)
		}
	}
}

// TestProbeInlineSharedAcrossLayersControl is the same race with files
// made otherwise: by WriteFile (its tail has no spare capacity, so it
// must pass) and by a large first write then an append (the doubled
// tail has spare capacity: the same hazard, older than the inline path).
func TestProbeInlineSharedAcrossLayersControl(t *testing.T) {
	rounds := 20000
	if mem.RaceEnabled {
		rounds = 200
	}
	for _, how := range []string{"writefile", "append-doubled"} {
		t.Run(how, func(t *testing.T) {
			base := strings.Repeat("0", 140)
			for round := range rounds {
				f1 := mem.New()
				if how == "writefile" {
					f1.WriteFile("f", []byte(base), 0o644)
				} else {
					h, _ := f1.Create("f")
					h.Write([]byte(base[:139]))
					h.Write([]byte(base[139:])) // tail doubled: spare capacity
					h.Close()
				}
				h1, _ := f1.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
				c, _ := f1.Snapshot().Content("f")
				f2 := mem.New()
				if err := f2.CopyIn(".", []mem.Copy{{Name: "f", Mode: 0o644, Share: c}}); err != nil {
					t.Fatal(err)
				}
				h2, _ := f2.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
				var wg sync.WaitGroup
				start := make(chan struct{})
				wg.Add(2)
				go func() { defer wg.Done(); <-start; h1.Write([]byte("AAAAAAAA")) }()
				go func() { defer wg.Done(); <-start; h2.Write([]byte("BBBBBBBB")) }()
				close(start)
				wg.Wait()
				b1, _ := f1.ReadFile("f")
				b2, _ := f2.ReadFile("f")
				if string(b1) != base+"AAAAAAAA" || string(b2) != base+"BBBBBBBB" {
					t.Fatalf("round %d: layer 1 ends %q, layer 2 ends %q", round, b1[len(base):], b2[len(base):])
				}
				h1.Close()
				h2.Close()
			}
		})
	}
}
