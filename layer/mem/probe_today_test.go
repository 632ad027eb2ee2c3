package mem_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// errClass names an error as the probes compare them with os: nil, EOF,
// or anything else.
func errClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case err == io.EOF:
		return "EOF"
	case errors.Is(err, fs.ErrClosed):
		return "closed"
	}
	return "error"
}

// TestProbeReadOnlyHandleDifferential drives a read-only handle (Read,
// ReadAt, Seek) and a read-write handle of the same file (WriteAt,
// Write, Truncate, Seek) through one random sequence, on the memory
// layer and on os (a file under /dev/shm where there is one), and
// compares every result: counts, bytes, offsets and errors.
func TestProbeReadOnlyHandleDifferential(t *testing.T) {
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "packfs-probe-"); err == nil {
			dir = d
			t.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	seeds := 8
	if !testsize.Short() && !mem.RaceEnabled { // full size, but not under the race detector (10x)
		seeds = 64
	}
	for seed := range seeds {
		name := filepath.Join(dir, fmt.Sprintf("f%d", seed))
		if err := os.WriteFile(name, bytes.Repeat([]byte("a"), 5000), 0o644); err != nil {
			t.Fatal(err)
		}
		m := mem.New()
		if err := m.WriteFile("f", bytes.Repeat([]byte("a"), 5000), 0o644); err != nil {
			t.Fatal(err)
		}
		var oh [2]layer.File
		var mh [2]layer.File
		for k, flag := range []int{os.O_RDONLY, os.O_RDWR} {
			of, err := os.OpenFile(name, flag, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer of.Close()
			mf, err := m.OpenFile("f", flag, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer mf.Close()
			oh[k], mh[k] = of, mf
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 9))
		off := func() int64 {
			if rng.IntN(20) == 0 {
				return rng.Int64N(1 << 40)
			}
			return rng.Int64N(12000) - 100
		}
		for step := range 400 {
			var oRes, mRes string
			do := func(f layer.File, op int, a int64, b int, fill byte) string {
				switch op {
				case 0, 1: // Read on the read-only handle, or the other
					p := make([]byte, b)
					n, err := f.Read(p)
					return fmt.Sprintf("read %d %s %q", n, errClass(err), p[:n])
				case 2:
					p := make([]byte, b)
					n, err := f.ReadAt(p, a)
					return fmt.Sprintf("readat %d %s %q", n, errClass(err), p[:n])
				case 3:
					got, err := f.Seek(a, b%3)
					if err != nil {
						got = -1
					}
					return fmt.Sprintf("seek %d %s", got, errClass(err))
				case 4:
					n, err := f.WriteAt(bytes.Repeat([]byte{fill}, b), a)
					return fmt.Sprintf("writeat %d %s", n, errClass(err))
				case 5:
					n, err := f.Write(bytes.Repeat([]byte{fill}, b))
					return fmt.Sprintf("write %d %s", n, errClass(err))
				case 6:
					return fmt.Sprintf("truncate %s", errClass(f.Truncate(a)))
				}
				panic(op)
			}
			op := rng.IntN(7)
			h := 0
			switch op {
			case 1, 4, 5, 6:
				h = 1
			case 2, 3:
				h = rng.IntN(2)
			}
			a := off()
			if op == 6 {
				a = rng.Int64N(12000) - 10
			}
			if op == 4 && a < 0 {
				a = -a
			}
			if op == 4 && a > 1<<20 {
				a = a % 20000
			}
			if op == 3 && rng.IntN(2) == 0 {
				a = rng.Int64N(400) - 200
			}
			b := rng.IntN(3000)
			fill := byte('b' + step%20)
			oRes = do(oh[h], op, a, b, fill)
			mRes = do(mh[h], op, a, b, fill)
			if oRes != mRes {
				t.Fatalf("seed %d step %d: handle %d op %d (%d, %d):\n os  %.200s\n mem %.200s", seed, step, h, op, a, b, oRes, mRes)
			}
		}
	}
}

// TestProbeReadOnlyHandleBesideTruncate: one read-only handle read by
// Read, ReadAt and Seek from several goroutines while another handle
// writes the file whole, byte v at each round, and truncates it to
// random sizes; then the handle is closed while they run. Every read
// returns at most what it asked for, bytes only of a round written so
// far or the zeros a truncation leaves; Seek(0, SeekCurrent) never goes
// negative; and once Close has returned, every call fails with
// fs.ErrClosed.
func TestProbeReadOnlyHandleBesideTruncate(t *testing.T) {
	const size = 1 << 14
	m := mem.New()
	if err := m.WriteFile("f", bytes.Repeat([]byte{1}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := m.OpenFile("f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := m.OpenFile("f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	rounds := 300
	if !testsize.Short() && !mem.RaceEnabled { // full size, but not under the race detector (10x)
		rounds = 3000
	}
	var version atomic.Int32
	version.Store(1)
	var closed atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	check := func(what string, p []byte, n int, err error, wasClosed bool) bool {
		if n < 0 || n > len(p) {
			t.Errorf("%s: %d bytes into %d", what, n, len(p))
			return false
		}
		v := byte(version.Load())
		for _, c := range p[:n] {
			if c > v {
				t.Errorf("%s: byte %d, past version %d", what, c, v)
				return false
			}
		}
		if wasClosed && !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s after Close: %d, %v", what, n, err)
			return false
		}
		if err != nil && err != io.EOF && !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s: %v", what, err)
			return false
		}
		return true
	}
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			p := make([]byte, 1+g*700)
			for {
				select {
				case <-stop:
					return
				default:
				}
				wasClosed := closed.Load()
				switch rng.IntN(4) {
				case 0, 1:
					n, err := r.Read(p)
					if !check("Read", p, n, err, wasClosed) {
						return
					}
				case 2:
					n, err := r.ReadAt(p, rng.Int64N(size+100))
					if !check("ReadAt", p, n, err, wasClosed) {
						return
					}
				case 3:
					whence := rng.IntN(3)
					off := rng.Int64N(size) - size/2
					if whence == io.SeekStart {
						off = max(off, 0)
					}
					got, err := r.Seek(off, whence)
					if err == nil && got < 0 || wasClosed && !errors.Is(err, fs.ErrClosed) {
						t.Errorf("Seek(%d, %d) = %d, %v (closed %v)", off, whence, got, err, wasClosed)
						return
					}
					if cur, err := r.Seek(0, io.SeekCurrent); err == nil && cur < 0 {
						t.Errorf("offset %d", cur)
						return
					}
				}
			}
		})
	}
	for round := range rounds {
		v := byte(2 + round%250)
		if v == 2 {
			version.Store(int32(251)) // the bytes of every round so far
		} else if int32(v) > version.Load() {
			version.Store(int32(v))
		}
		if _, err := w.WriteAt(bytes.Repeat([]byte{v}, size), 0); err != nil {
			t.Fatal(err)
		}
		if err := w.Truncate(int64(round*37) % (size + 500)); err != nil {
			t.Fatal(err)
		}
		if round == rounds*2/3 {
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			closed.Store(true)
		}
	}
	close(stop)
	wg.Wait()
	if err := r.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// TestProbeLargeDirectoryRenameRemoveAll: readers list and look up the
// files of a large directory d while a writer replaces it whole, round
// after round (a full directory n renamed over d's name after d is
// renamed away and removed with RemoveAll), and churns the files of a
// second large directory e beside its fixed ones. A listing of d is
// whole (every file, of one round) or d is missing; a file of d read
// is of a round no older than the last one that reader saw; e's fixed
// files are always there, a name never made never is, and a handle on
// an old d kept from before is not linked after RemoveAll.
func TestProbeLargeDirectoryRenameRemoveAll(t *testing.T) {
	const files = 150
	m := mem.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	fill := func(dir string, round int) {
		must(m.Mkdir(dir, 0o755))
		for i := range files {
			must(m.WriteFile(fmt.Sprintf("%s/f%03d", dir, i), []byte(fmt.Sprint(round)), 0o644))
		}
	}
	fill("d", 0)
	must(m.Mkdir("e", 0o755))
	for i := range 100 {
		must(m.WriteFile(fmt.Sprintf("e/keep%03d", i), []byte("k"), 0o644))
	}
	rounds := 30
	if !testsize.Short() && !mem.RaceEnabled { // full size, but not under the race detector (10x)
		rounds = 300
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var listed, read atomic.Int64
	for g := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			last := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch rng.IntN(4) {
				case 0:
					ents, err := m.ReadDir("d")
					if errors.Is(err, fs.ErrNotExist) {
						continue
					}
					if err != nil || len(ents) != files {
						t.Errorf("ReadDir d: %d entries, %v", len(ents), err)
						return
					}
					listed.Add(1)
				case 1:
					b, err := m.ReadFile(fmt.Sprintf("d/f%03d", rng.IntN(files)))
					if errors.Is(err, fs.ErrNotExist) {
						continue
					}
					var round int
					if _, serr := fmt.Sscan(string(b), &round); err != nil || serr != nil || round < last {
						t.Errorf("read d: %q, %v (last round seen %d)", b, err, last)
						return
					}
					last = round
					read.Add(1)
				case 2:
					name := fmt.Sprintf("e/keep%03d", rng.IntN(100))
					if _, err := m.Stat(name); err != nil {
						t.Errorf("stat %s: %v", name, err)
						return
					}
					if _, err := m.Stat(fmt.Sprintf("e/never%03d", rng.IntN(100))); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("stat e/never: %v", err)
						return
					}
				case 3:
					// A handle on d kept across the writer's rounds: its
					// lookups find the files of its own round, or none
					// once RemoveAll emptied it.
					ent, err := m.LookupAt(nil, "d")
					if err != nil {
						continue
					}
					var h pathwalk.Dir = ent.Dir
					for range 20 {
						_, err := m.LookupAt(h, fmt.Sprintf("f%03d", rng.IntN(files)))
						if err != nil && !errors.Is(err, fs.ErrNotExist) {
							t.Errorf("LookupAt through a kept handle: %v", err)
							return
						}
						if _, err := m.LookupAt(h, "never"); !errors.Is(err, fs.ErrNotExist) {
							t.Errorf("LookupAt never: %v", err)
							return
						}
					}
				}
			}
		})
	}
	var kept pathwalk.Dir
	for round := 1; round <= rounds; round++ {
		fill("n", round)
		if round == rounds/2 {
			ent, err := m.LookupAt(nil, "d")
			must(err)
			kept = ent.Dir
			if _, err := m.LookupAt(kept, "f001"); err != nil {
				t.Fatal(err)
			}
		}
		must(m.Rename("d", "old"))
		must(m.Rename("n", "d"))
		must(m.RemoveAll("old"))
		for i := range files {
			name := fmt.Sprintf("e/c%03d", (round*7+i)%(2*files))
			if i%2 == 0 {
				must(m.WriteFile(name, nil, 0o644))
			} else if err := m.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
	}
	// On a loaded machine the readers may not have run while the writer
	// did: they go on, over the last round's d, until each kind has.
	for deadline := time.Now().Add(10 * time.Second); (listed.Load() == 0 || read.Load() == 0) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	// A handle on a removed directory is not linked, which a union asks
	// before it uses one (see Linked).
	if m.Linked(kept) {
		t.Error("a removed d is linked")
	}
	if listed.Load() == 0 || read.Load() == 0 {
		t.Errorf("readers listed d %d times and read it %d times", listed.Load(), read.Load())
	}
	must(m.Check())
}

// TestProbeIndexModel: one directory grown past the size at which
// lookups give it an index and emptied below the size at which it loses
// it, again and again, by creations, removals, renames within it and
// across directories, with names of every length up to 255 bytes, each
// change followed by lookups compared with a map; beside it readers look
// up five names never touched, which are always there, and names never
// made, which never are.
func TestProbeIndexModel(t *testing.T) {
	m := mem.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.Mkdir("d", 0o755))
	must(m.Mkdir("o", 0o755))
	for i := range 5 {
		must(m.WriteFile(fmt.Sprintf("d/stable%d", i), []byte("s"), 0o644))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := m.Stat(fmt.Sprintf("d/stable%d", rng.IntN(5))); err != nil {
					t.Errorf("stable name: %v", err)
					return
				}
				if _, err := m.Stat(fmt.Sprintf("d/never%d", rng.IntN(1000))); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("name never made: %v", err)
					return
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(11, 12))
	model := map[string]string{} // d's names but the stable ones, to content
	other := map[string]string{} // o's
	newName := func() string {
		n := 1 + rng.IntN(255)
		if rng.IntN(3) == 0 {
			n = 250 + rng.IntN(6)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcxyz.-_0123"[rng.IntN(13)]
		}
		if s := string(b); s == "." || s == ".." {
			return "dot"
		}
		return string(b)
	}
	pick := func(mp map[string]string) string {
		k := rng.IntN(len(mp))
		for name := range mp {
			if k == 0 {
				return name
			}
			k--
		}
		panic("empty")
	}
	steps := 3000
	if !testsize.Short() && !mem.RaceEnabled { // full size, but not under the race detector (10x)
		steps = 30000
	}
	growing := true
	for step := range steps {
		if len(model) > 150 {
			growing = false
		} else if len(model) < 8 {
			growing = true
		}
		switch op := rng.IntN(10); {
		case op < 4 && growing || op < 1:
			name := newName()
			data := fmt.Sprint(step)
			must(m.WriteFile("d/"+name, []byte(data), 0o644))
			model[name] = data
		case op < 7 && len(model) > 0:
			name := pick(model)
			must(m.Remove("d/" + name))
			delete(model, name)
		case op < 8 && len(model) > 0:
			from, to := pick(model), newName()
			must(m.Rename("d/"+from, "d/"+to))
			model[to] = model[from]
			if to != from {
				delete(model, from)
			}
		case op < 9 && len(model) > 0:
			name := pick(model)
			must(m.Rename("d/"+name, "o/"+name))
			other[name] = model[name]
			delete(model, name)
		case len(other) > 0:
			name := pick(other)
			must(m.Rename("o/"+name, "d/"+name))
			model[name] = other[name]
			delete(other, name)
		}
		// Lookups, which build the index where it is missing.
		for range 3 {
			if len(model) > 0 {
				name := pick(model)
				if b, err := m.ReadFile("d/" + name); err != nil || string(b) != model[name] {
					t.Fatalf("step %d: d/%s = %q, %v; want %q", step, name, b, err, model[name])
				}
			}
			if len(other) > 0 {
				name := pick(other)
				if _, ok := model[name]; !ok {
					if _, err := m.Stat("d/" + name); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("step %d: d/%s moved away, stat: %v", step, name, err)
					}
				}
			}
		}
		if step%500 == 0 {
			ents, err := m.ReadDir("d")
			must(err)
			if len(ents) != len(model)+5 {
				t.Fatalf("step %d: %d entries, want %d", step, len(ents), len(model)+5)
			}
			must(m.Check())
		}
	}
	close(stop)
	wg.Wait()
	must(m.Check())
}
