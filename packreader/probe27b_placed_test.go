package packreader_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// Probes of 65f2a3e (a handle's read places a content found whole in one
// raw, checked frame; later reads copy from the mapping).

func probe27bRand(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// probe27bTree: small, empty, frame-boundary, multi-frame, dedup'd and
// sparse files, and a symlink to a small one.
func probe27bTree() fstest.MapFS {
	m := fstest.MapFS{}
	add := func(name string, b []byte) { m[name] = &fstest.MapFile{Data: b, Mode: 0o644} }
	for i := range 60 {
		add(fmt.Sprintf("d/s%02d", i), probe27bRand(uint64(100+i), 1+(i*397)%5000))
	}
	add("d/empty", nil)
	add("e/empty2", []byte{})
	for i, n := range []int{65535, 65536, 65537, 2*65536 - 1, 2 * 65536, 2*65536 + 1} {
		add(fmt.Sprintf("b/n%d", n), probe27bRand(uint64(200+i), n))
	}
	add("b/multi", probe27bRand(300, 300<<10+17))
	shared := probe27bRand(400, 3000)
	add("x/dupA", shared)
	add("y/dupB", append([]byte(nil), shared...))
	add("y/dupC", append([]byte(nil), shared...))
	sharedBig := probe27bRand(401, 70000)
	add("x/dupBigA", sharedBig)
	add("y/dupBigB", append([]byte(nil), sharedBig...))
	// sparse: data, a run of zeros of two frames at a frame boundary, data
	sp := make([]byte, 65536+2*65536+5000)
	copy(sp, probe27bRand(500, 65536))
	copy(sp[3*65536:], probe27bRand(501, 5000))
	add("h/sparse", sp)
	// sparse: leading hole then a little data
	sp2 := make([]byte, 2*65536+100)
	copy(sp2[2*65536:], probe27bRand(502, 100))
	add("h/sparse2", sp2)
	// all zeros, small and a frame
	add("h/zeros", make([]byte, 4000))
	add("h/zeros64k", make([]byte, 65536))
	m["l/link"] = &fstest.MapFile{Data: []byte("../d/s05"), Mode: fs.ModeSymlink | 0o777}
	return m
}

func probe27bNames(m fstest.MapFS) []string {
	var names []string
	for n, f := range m {
		if f.Mode.IsRegular() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

type probe27bOpt struct {
	name string
	opts []packwriter.Option
}

var probe27bOpts = []probe27bOpt{
	{"v3", nil},
	{"v3zstd", []packwriter.Option{packwriter.WithCompression(3)}},
	{"v3zstd0", []packwriter.Option{packwriter.WithCompression(0)}},
	{"v2", []packwriter.Option{packwriter.WithFormat(2)}},
}

// probe27bCheck reads name through one path chosen by op and compares
// with want. It returns the error of the read (nil if it matched).
func probe27bCheck(r *packreader.Reader, rng *rand.Rand, name string, want []byte, op int) error {
	switch op {
	case 0:
		got, err := r.ReadFile(name)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("ReadFile(%s) read other bytes (len %d, want %d)", name, len(got), len(want))
		}
		return nil
	case 1:
		got, err := r.Bytes(name)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("Bytes(%s) read other bytes", name)
		}
		return nil
	}
	f, err := r.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	switch op {
	case 2: // Read in small odd chunks
		var got []byte
		buf := make([]byte, 1+rng.IntN(70000))
		for {
			n, err := f.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("Read(%s) read other bytes (len %d, want %d)", name, len(got), len(want))
		}
	case 3: // ReadAt at random offsets, some past the end
		ra := f.(io.ReaderAt)
		for range 6 {
			off := rng.IntN(len(want) + 2)
			n := rng.IntN(len(want) + 3)
			got := make([]byte, n)
			k, err := ra.ReadAt(got, int64(off))
			end := min(off+n, len(want))
			exp := []byte{}
			if off < len(want) {
				exp = want[off:end]
			}
			if k != len(exp) || !bytes.Equal(got[:k], exp) {
				if err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				return fmt.Errorf("ReadAt(%s, off %d, n %d) = %d, %v; want %d bytes", name, off, n, k, err, len(exp))
			}
			if k < n && err != io.EOF {
				return fmt.Errorf("ReadAt(%s, off %d, n %d) short %d with %v", name, off, n, k, err)
			}
			if k == n && err != nil && err != io.EOF {
				return err
			}
		}
	case 4: // Seek + Read
		sk := f.(io.Seeker)
		for range 6 {
			off := rng.IntN(len(want) + 2)
			if _, err := sk.Seek(int64(off), io.SeekStart); err != nil {
				return err
			}
			n := 1 + rng.IntN(70000)
			got := make([]byte, n)
			k, err := io.ReadFull(f, got)
			exp := []byte{}
			if off < len(want) {
				exp = want[off:min(off+n, len(want))]
			}
			if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
				return err
			}
			if !bytes.Equal(got[:k], exp) {
				return fmt.Errorf("Seek(%d)+Read(%s, %d) read other bytes (%d, want %d)", off, name, n, k, len(exp))
			}
		}
	case 5: // WriteTo through io.Copy, after a first small read
		pre := 0
		if len(want) > 0 && rng.IntN(2) == 0 {
			pre = rng.IntN(len(want))
			if _, err := io.ReadFull(f, make([]byte, pre)); err != nil {
				return err
			}
		}
		var w bytes.Buffer
		if _, err := io.Copy(&w, f.(io.Reader)); err != nil {
			return err
		}
		if !bytes.Equal(w.Bytes(), want[pre:]) {
			return fmt.Errorf("io.Copy(%s) after %d read other bytes (%d, want %d)", name, pre, w.Len(), len(want)-pre)
		}
	}
	return nil
}

const probe27bOps = 6

// TestProbe27bPlacedAllPaths: every path, in varying orders, over several
// rounds, reads exactly the file's bytes, in every format.
func TestProbe27bPlacedAllPaths(t *testing.T) {
	m := probe27bTree()
	names := probe27bNames(m)
	for _, o := range probe27bOpts {
		t.Run(o.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.pack")
			must(t, packwriter.WriteFile(path, m, o.opts...))
			for seed := range uint64(3) {
				r, err := packreader.Open(path)
				must(t, err)
				rng := rand.New(rand.NewPCG(seed, 7))
				for round := range 4 {
					perm := rng.Perm(len(names))
					for _, k := range perm {
						name := names[k]
						op := rng.IntN(probe27bOps)
						if err := probe27bCheck(r, rng, name, m[name].Data, op); err != nil {
							t.Fatalf("seed %d round %d op %d: %s: %v", seed, round, op, name, err)
						}
					}
					// through the symlink
					if err := probe27bCheck(r, rng, "l/link", m["d/s05"].Data, rng.IntN(probe27bOps)); err != nil {
						t.Fatalf("seed %d round %d: l/link: %v", seed, round, err)
					}
				}
				r.Close()
			}
		})
	}
}

// probe27bDamage flips a byte in the middle of each named content, which
// must be stored once, as is.
func probe27bDamage(t *testing.T, data []byte, m fstest.MapFS, names ...string) {
	t.Helper()
	for _, n := range names {
		want := m[n].Data
		at := bytes.Index(data, want)
		if at < 0 || bytes.Count(data, want) != 1 {
			t.Fatalf("%s's content is not stored once, as is", n)
		}
		data[at+len(want)/2] ^= 0x40
	}
}

// TestProbe27bDamagedNeverServed: in an uncompressed format-3 pack with
// damaged contents (small, exactly a frame, a frame less one, dedup'd),
// every read of a damaged content fails with ErrCorrupt, through every
// path, in every order, including after reads of its neighbours and of
// other records sharing it; no read returns bytes other than the file's.
func TestProbe27bDamagedNeverServed(t *testing.T) {
	m := probe27bTree()
	names := probe27bNames(m)
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(path, m))
	data, err := os.ReadFile(path)
	must(t, err)
	bad := map[string]bool{"d/s10": true, "b/n65536": true, "b/n65535": true, "d/s33": true}
	probe27bDamage(t, data, m, "d/s10", "b/n65536", "b/n65535", "d/s33")
	// dupA/dupB/dupC share one stored content: damage it too
	want := m["x/dupA"].Data
	at := bytes.Index(data, want)
	if at < 0 || bytes.Count(data, want) != 1 {
		t.Fatal("shared content not stored once")
	}
	data[at+7] ^= 1
	bad["x/dupA"], bad["y/dupB"], bad["y/dupC"] = true, true, true
	bp := filepath.Join(t.TempDir(), "bad.pack")
	must(t, os.WriteFile(bp, data, 0o644))
	for seed := range uint64(4) {
		r, err := packreader.Open(bp)
		must(t, err)
		rng := rand.New(rand.NewPCG(seed, 11))
		for round := range 4 {
			for _, k := range rng.Perm(len(names)) {
				name := names[k]
				op := rng.IntN(probe27bOps)
				err := probe27bCheck(r, rng, name, m[name].Data, op)
				if bad[name] {
					if !errors.Is(err, packreader.ErrCorrupt) {
						t.Fatalf("seed %d round %d op %d: damaged %s: %v, want ErrCorrupt", seed, round, op, name, err)
					}
				} else if err != nil && !errors.Is(err, packreader.ErrCorrupt) {
					t.Fatalf("seed %d round %d op %d: %s: %v", seed, round, op, name, err)
				} else if err != nil {
					// a neighbour in a damaged frame: it must fail always
					// the same way; record it so later reads are checked.
					bad[name] = true
				}
			}
		}
		r.Close()
	}
}

// TestProbe27bConcurrent: many goroutines opening, reading (every path)
// and closing the same and different files of a damaged pack and a good
// one, in every format: good files read exactly, damaged fail ErrCorrupt.
func TestProbe27bConcurrent(t *testing.T) {
	m := probe27bTree()
	names := probe27bNames(m)
	dir := t.TempDir()
	type pk struct {
		path string
		bad  map[string]bool
	}
	var packs []pk
	for _, o := range probe27bOpts {
		p := filepath.Join(dir, o.name+".pack")
		must(t, packwriter.WriteFile(p, m, o.opts...))
		packs = append(packs, pk{p, nil})
	}
	data, err := os.ReadFile(packs[0].path)
	must(t, err)
	probe27bDamage(t, data, m, "d/s10", "b/n65536", "d/s40")
	bp := filepath.Join(dir, "bad.pack")
	must(t, os.WriteFile(bp, data, 0o644))
	// which files fail in the damaged pack: found serially first (a
	// neighbour in the same frame fails too)
	{
		r, err := packreader.Open(bp)
		must(t, err)
		badSet := map[string]bool{}
		for _, n := range names {
			if _, err := r.ReadFile(n); err != nil {
				if !errors.Is(err, packreader.ErrCorrupt) {
					t.Fatal(err)
				}
				badSet[n] = true
			}
		}
		r.Close()
		for _, n := range []string{"d/s10", "b/n65536", "d/s40"} {
			if !badSet[n] {
				t.Fatalf("ReadFile of damaged %s succeeded", n)
			}
		}
		packs = append(packs, pk{bp, badSet})
	}
	workers, iters := 16, 300
	if raceEnabled {
		iters = 120
	}
	if testing.Short() {
		iters = 100
	}
	for _, p := range packs {
		for rep := range 2 {
			r, err := packreader.Open(p.path)
			must(t, err)
			var wg sync.WaitGroup
			errc := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), uint64(rep)))
					for range iters {
						var name string
						if rng.IntN(3) == 0 {
							name = names[rng.IntN(len(names))]
						} else {
							// hot set: the damaged ones and frame-size ones
							hot := []string{"d/s10", "d/s11", "b/n65536", "b/n65535", "b/n65537", "x/dupA", "y/dupB", "h/sparse", "d/s40", "d/empty"}
							name = hot[rng.IntN(len(hot))]
						}
						err := probe27bCheck(r, rng, name, m[name].Data, rng.IntN(probe27bOps))
						if p.bad[name] {
							if !errors.Is(err, packreader.ErrCorrupt) {
								errc <- fmt.Errorf("%s: damaged %s: %v, want ErrCorrupt", filepath.Base(p.path), name, err)
								return
							}
						} else if err != nil {
							errc <- fmt.Errorf("%s: %s: %v", filepath.Base(p.path), name, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Error(err)
			}
			r.Close()
		}
	}
}

// TestProbe27bTruncatedAfterPlacing: contents placed by handle reads, then
// the pack file truncated: every later read gives the file's bytes or an
// error wrapping ErrChanged and ErrCorrupt; never other bytes, never a
// crash.
func TestProbe27bTruncatedAfterPlacing(t *testing.T) {
	m := probe27bTree()
	names := probe27bNames(m)
	for _, o := range probe27bOpts {
		t.Run(o.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.pack")
			must(t, packwriter.WriteFile(path, m, o.opts...))
			r, err := packreader.Open(path)
			must(t, err)
			defer r.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			for _, n := range names { // place through handles
				must(t, probe27bCheck(r, rng, n, m[n].Data, 2))
				must(t, probe27bCheck(r, rng, n, m[n].Data, 3))
			}
			must(t, os.Truncate(path, 4096))
			changed := 0
			for round := range 2 {
				for _, n := range names {
					for op := range probe27bOps {
						if op == 1 {
							continue // Bytes hands out the mapping itself
						}
						err := probe27bCheck(r, rng, n, m[n].Data, op)
						if err == nil {
							continue
						}
						if !errors.Is(err, packreader.ErrChanged) || !errors.Is(err, packreader.ErrCorrupt) {
							t.Fatalf("round %d op %d: %s after truncation: %v, want ErrChanged", round, op, n, err)
						}
						changed++
					}
				}
			}
			if changed == 0 {
				t.Fatal("no read noticed the truncation")
			}
		})
	}
}
