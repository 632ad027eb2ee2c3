package mem

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/testsize"
)

// TestIndexBesideWriters runs lookups of the live layer beside every
// writer that changes a large directory's hash index: creates and removes
// that grow the index, fill it with tombstones, rebuild it and drop it;
// renames within a directory and across two, RenameUnion leaving
// whiteouts, whiteouts over files, copy-ups (CopyIn) and rewrites after
// snapshots, which point slots at new entries. Readers check that
//
//   - a file no writer touches never goes missing, and has one of the two
//     sizes it is written with;
//   - a file renamed along a chain of names n0 → n1 → ..., alternating
//     within a directory and across two, is always under exactly one:
//     looking its names up in order never passes it (it was under none)
//     and a name behind one it was found under never shows it again (it
//     was under two).
//
// The untouched files are also looked up as a union does, with LookupAt
// and OpenAt through a handle of their directory. The readers' lookups
// build the indexes as the directories grow back after each drop, beside
// the writers; the run fails if no reader ever saw one. Check verifies
// the indexes against the treaps as the run goes.
func TestIndexBesideWriters(t *testing.T) {
	for _, small := range []bool{false, true} {
		t.Run(fmt.Sprintf("every-directory=%v", small), func(t *testing.T) {
			f := New()
			if small {
				f.indexMin, f.indexDrop = 2, 1
			}
			testIndexBesideWriters(t, f)
		})
	}
}

func testIndexBesideWriters(t *testing.T, f *FS) {
	rounds := 40
	if testsize.Short() || raceEnabled {
		rounds = 8
	}
	const stable, filler = 10, 150
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"d0", "d1"} {
		must(f.Mkdir(d, 0o755))
		for i := range stable {
			must(f.WriteFile(fmt.Sprintf("%s/s%d", d, i), []byte("x"), 0o644))
		}
		// Files that stay, enough for an index: a directory the churn
		// empties keeps its size, so that once the writers stop the
		// readers' first lookup builds one (while they run, a lookup
		// may never find the writer's lock free).
		for i := range f.indexMin {
			must(f.WriteFile(fmt.Sprintf("%s/p%d", d, i), []byte("p"), 0o644))
		}
	}
	// chainName is where the chained file is at step k: names k and k+1
	// share a directory for even k and not for odd k.
	chainName := func(k int64) string { return fmt.Sprintf("d%d/n%d", (k+1)/2%2, k) }
	must(f.WriteFile(chainName(0), []byte("c"), 0o644))
	var at atomic.Int64 // the chain step last completed
	var stop, failed atomic.Bool
	var stopAt atomic.Int64 // when the churn ended, in Unix nanoseconds
	var wg sync.WaitGroup
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		failed.Store(true)
		stop.Store(true)
	}

	// The chain's writer.
	wg.Go(func() {
		for k := int64(0); !stop.Load(); k++ {
			if err := f.Rename(chainName(k), chainName(k+1)); err != nil {
				fail("chain rename %d: %v", k, err)
				return
			}
			at.Store(k + 1)
		}
	})
	// The churn's writer: it ends the run.
	wg.Go(func() {
		defer func() {
			stopAt.Store(time.Now().UnixNano())
			stop.Store(true)
		}()
		for r := range rounds {
			d := fmt.Sprintf("d%d", r%2)
			for i := range filler {
				name := fmt.Sprintf("%s/f%d", d, i)
				var err error
				switch i % 5 {
				case 0:
					err = f.CopyIn(d, []Copy{{Name: fmt.Sprintf("f%d", i), Mode: 0o644, Data: strings.NewReader("copy")}})
				case 1:
					err = f.Symlink("s0", name)
				default:
					err = f.WriteFile(name, []byte("f"), 0o644)
				}
				if err != nil {
					fail("create %s: %v", name, err)
					return
				}
			}
			f.Snapshot()
			for i := range stable {
				// A rewrite after a snapshot makes a new entry, which
				// the index's slot must follow.
				if err := f.WriteFile(fmt.Sprintf("%s/s%d", d, i), []byte("xy"[:1+r%2]), 0o644); err != nil {
					fail("rewrite: %v", err)
					return
				}
			}
			for i := range filler {
				name := fmt.Sprintf("%s/f%d", d, i)
				var err error
				switch i % 4 {
				case 0:
					err = f.RenameUnion(name, fmt.Sprintf("%s/g%d", d, i), true)
					if err == nil {
						err = f.Remove(fmt.Sprintf("%s/g%d", d, i))
					}
				case 1:
					err = f.Whiteout(name)
				default:
				}
				if err == nil {
					err = f.Remove(name)
				}
				if err != nil {
					fail("remove %s: %v", name, err)
					return
				}
			}
			if err := f.Check(); err != nil {
				fail("round %d: %v", r, err)
				return
			}
		}
	})
	// Readers. They go on past the churn until one has seen an index, for
	// up to 10 s: a lookup builds one only when it finds the writer's lock
	// free, which on a loaded machine may not happen while writers run.
	var sawIndex atomic.Bool
	done := func() bool {
		return failed.Load() || stop.Load() && (sawIndex.Load() || time.Now().UnixNano()-stopAt.Load() > 10e9)
	}
	for g := range 2 {
		wg.Go(func() {
			var k int64
			for n := 0; !done(); n++ {
				if !sawIndex.Load() {
					if e, ok := f.root.Load().state().dir.kids.Get(fmt.Sprintf("d%d", n%2)); ok && e.state().dir.idx.Load() != nil {
						sawIndex.Store(true)
					}
				}
				name := fmt.Sprintf("d%d/s%d", (n+g)%2, n%stable)
				fi, err := f.Stat(name)
				if err != nil {
					fail("stat %s: %v", name, err)
					return
				}
				if fi.Size() != 1 && fi.Size() != 2 {
					fail("stat %s: size %d", name, fi.Size())
					return
				}
				// The same file through a union's calls: a handle of
				// its directory, then the name in it.
				d, err := f.LookupAt(nil, fmt.Sprintf("d%d", (n+g)%2))
				if err != nil {
					fail("LookupAt of the directory of %s: %v", name, err)
					return
				}
				base := fmt.Sprintf("s%d", n%stable)
				if _, err := f.LookupAt(d.Dir, base); err != nil {
					fail("LookupAt %s: %v", name, err)
					return
				}
				h, err := f.OpenAt(d.Dir, base, name)
				if err != nil {
					fail("OpenAt %s: %v", name, err)
					return
				}
				h.Close()
				// Follow the chain from k, its last known step.
				for {
					_, err := f.Lstat(chainName(k))
					if err == nil {
						break
					}
					if !errors.Is(err, fs.ErrNotExist) {
						fail("lstat %s: %v", chainName(k), err)
						return
					}
					if k > at.Load()+1 {
						fail("chained file under none of its names up to %s", chainName(k))
						return
					}
					k++
				}
				if k > 0 {
					if _, err := f.Lstat(chainName(k - 1)); err == nil {
						fail("chained file under %s after %s", chainName(k-1), chainName(k))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := f.Check(); err != nil {
		t.Error(err)
	}
	if !sawIndex.Load() {
		t.Error("no reader saw a hash index")
	}
}

// TestIndexLazy checks when a directory gets its index: not by writes
// alone, nor by a lookup in a snapshot, nor by a lookup while the
// writer's lock is held; by the first lookup of the live layer once the lock is free,
// whose later lookups then use it. A directory that falls below
// indexDrop entries loses it, and growing back does not rebuild it until
// a lookup.
func TestIndexLazy(t *testing.T) {
	f := New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.Mkdir("d", 0o755))
	for i := range indexMin {
		must(f.WriteFile(fmt.Sprintf("d/f%d", i), nil, 0o644))
	}
	indexed := func() bool {
		t.Helper()
		e, ok := f.root.Load().state().dir.kids.Get("d")
		if !ok {
			t.Fatal("d is gone")
		}
		return e.state().dir.idx.Load() != nil
	}
	if indexed() {
		t.Fatal("indexed by writes")
	}
	snap := f.Snapshot()
	_, err := snap.Stat("d/f1")
	must(err)
	if _, err := snap.LookupAt(nil, "d"); err != nil {
		t.Fatal(err)
	}
	if indexed() {
		t.Fatal("indexed by a snapshot's lookup")
	}
	f.mu.Lock()
	_, err = f.Stat("d/f1")
	f.mu.Unlock()
	must(err)
	if indexed() {
		t.Fatal("indexed while the writer's lock was held")
	}
	_, err = f.Stat("d/missing")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat d/missing: %v", err)
	}
	if !indexed() {
		t.Fatal("no index after a lookup with the lock free")
	}
	must(f.Check())
	d, err := f.LookupAt(nil, "d")
	must(err)
	// Writes keep it; a lookup after them finds what they made.
	must(f.WriteFile("d/new", nil, 0o644))
	must(f.Remove("d/f0"))
	must(f.Check())
	if _, err := f.LookupAt(d.Dir, "new"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat("d/f0"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat d/f0: %v", err)
	}
	// Shrink below indexDrop, grow back: no index until a lookup.
	for i := 1; i < indexMin; i++ {
		must(f.Remove(fmt.Sprintf("d/f%d", i)))
	}
	if indexed() {
		t.Fatal("index kept at one entry")
	}
	for i := range indexMin {
		must(f.WriteFile(fmt.Sprintf("d/g%d", i), nil, 0o644))
	}
	if indexed() {
		t.Fatal("index rebuilt by writes")
	}
	if _, err := f.OpenAt(d.Dir, "g3", "d/g3"); err != nil {
		t.Fatal(err)
	}
	if !indexed() {
		t.Fatal("no index after OpenAt")
	}
	must(f.Check())
	// A large directory removed whole (RemoveAll unlinks it at once),
	// and one inside it, still answer through handles kept from when
	// they were small, and get no index.
	must(f.MkdirAll("r/s", 0o755))
	r, err := f.LookupAt(nil, "r")
	must(err)
	s, err := f.LookupAt(r.Dir, "s")
	must(err)
	for i := range indexMin {
		must(f.WriteFile(fmt.Sprintf("r/f%d", i), nil, 0o644))
		must(f.WriteFile(fmt.Sprintf("r/s/f%d", i), nil, 0o644))
	}
	must(f.RemoveAll("r"))
	for _, h := range []*entry{r.Dir.(*entry), s.Dir.(*entry)} {
		for range 2 {
			if _, err := f.LookupAt(h, "f1"); err != nil {
				t.Fatalf("LookupAt of a removed directory's entry: %v", err)
			}
		}
		if h.ino.cur.Load().state().dir.idx.Load() != nil {
			t.Fatal("a removed directory got an index")
		}
	}
	must(f.Check())
}

// TestIndexTable drives one table through growth, tombstones and
// rebuilds and compares it with a map after each step.
func TestIndexTable(t *testing.T) {
	f := New()
	ds := newDir(state{mode: fs.ModeDir})
	model := map[string]*entry{}
	put := func(name string) {
		e := &entry{ino: &inode{}, name: name}
		ds.dir.kids = ds.dir.kids.Set(name, e)
		f.indexPut(ds, name, e)
		model[name] = e
	}
	del := func(name string) {
		ds.dir.kids = ds.dir.kids.Delete(name)
		f.indexDelete(ds, name)
		delete(model, name)
	}
	verify := func(step string) {
		t.Helper()
		f.endIndexWrites()
		if err := f.checkIndex(ds); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if x := ds.dir.idx.Load(); x != nil {
			for name, e := range model {
				if got, known := x.get(name); !known || got != e {
					t.Fatalf("%s: get(%q) = %p, %v, want %p", step, name, got, known, e)
				}
			}
			for _, name := range []string{"", "absent", strings.Repeat("n", 255)} {
				if got, known := x.get(name); !known || got != nil {
					t.Fatalf("%s: get(%q) = %p, %v, want none", step, name, got, known)
				}
			}
		}
	}
	for i := range 1000 {
		put(fmt.Sprintf("f%d", i))
	}
	if ds.dir.idx.Load() != nil {
		t.Fatal("writes built an index")
	}
	ds.dir.idx.Store(buildIndex(ds))
	verify("built")
	for i := range 1000 {
		put(fmt.Sprintf("f%d", i+1000))
	}
	for i := range 1000 {
		del(fmt.Sprintf("f%d", i+1000))
	}
	verify("grown")
	// Churn at a steady size: tombstones pile up and force rebuilds.
	for i := range 5000 {
		del(fmt.Sprintf("f%d", i))
		put(fmt.Sprintf("f%d", i+1000))
		if i%997 == 0 {
			verify(fmt.Sprintf("churn %d", i))
		}
	}
	verify("churned")
	for i := 5000; i < 6000-indexDrop+1; i++ {
		del(fmt.Sprintf("f%d", i))
	}
	verify("shrunk")
	if ds.dir.idx.Load() != nil {
		t.Fatalf("index kept at %d entries", ds.dir.kids.Len())
	}
}
