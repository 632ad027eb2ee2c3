package mem_test

import (
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
)

// TestReadersSeeWholeOperations moves files between two directories while
// readers count them through snapshots and through the live layer: a
// rename is published whole, so every count is the total.
func TestReadersSeeWholeOperations(t *testing.T) {
	const files = 50
	fsys := mem.New()
	for _, d := range []string{"a", "b"} {
		if err := fsys.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range files {
		if err := fsys.WriteFile(fmt.Sprintf("a/%d", i), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var writers, readers sync.WaitGroup
	for w := range 2 {
		writers.Go(func() {
			for n := range 2000 {
				i := (n*7 + w) % files
				from, to := fmt.Sprintf("a/%d", i), fmt.Sprintf("b/%d", i)
				if n%2 == 1 {
					from, to = to, from
				}
				fsys.Rename(from, to) // fails harmlessly when the other writer moved it
			}
		})
	}
	var reads atomic.Int64
	for range 2 {
		readers.Go(func() {
			for !stop.Load() {
				snap := fsys.Snapshot()
				a, err1 := fs.ReadDir(snap, "a")
				b, err2 := fs.ReadDir(snap, "b")
				if err1 != nil || err2 != nil {
					t.Error(err1, err2)
					return
				}
				if len(a)+len(b) != files {
					t.Errorf("snapshot holds %d files, want %d", len(a)+len(b), files)
					return
				}
				reads.Add(1)
			}
		})
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	if reads.Load() == 0 {
		t.Error("no reader finished a pass")
	}
	if err := fsys.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestReadersDuringInPlaceEdits creates and removes files in one
// directory, changing its index in place between snapshots, while readers
// stat and list it without locks and a third goroutine takes snapshots:
// the files nobody touches are always there, a listing holds each of
// them once and in order, and a snapshot or a directory handle keeps the
// listing it first gave.
func TestReadersDuringInPlaceEdits(t *testing.T) {
	const stable, churn = 200, 200
	fsys := mem.New()
	if err := fsys.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range stable {
		if err := fsys.WriteFile(fmt.Sprintf("d/s%04d", i), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() { // lookups and live listings
		for i := 0; !stop.Load(); i++ {
			if _, err := fsys.Stat(fmt.Sprintf("d/s%04d", i%stable)); err != nil {
				t.Error(err)
				return
			}
			es, err := fsys.ReadDir("d")
			if err != nil {
				t.Error(err)
				return
			}
			n := 0
			for j, e := range es {
				if j > 0 && es[j-1].Name() >= e.Name() {
					t.Errorf("listing goes from %s to %s", es[j-1].Name(), e.Name())
					return
				}
				if e.Name()[0] == 's' {
					n++
				}
			}
			if n != stable {
				t.Errorf("live listing holds %d untouched files, want %d", n, stable)
				return
			}
		}
	})
	wg.Go(func() { // snapshots and directory handles keep their listing
		for !stop.Load() {
			snap := fsys.Snapshot()
			first, err := snap.ReadDir("d")
			if err != nil {
				t.Error(err)
				return
			}
			h, err := fsys.Open("d")
			if err != nil {
				t.Error(err)
				return
			}
			listed, err := h.(fs.ReadDirFile).ReadDir(-1)
			h.Close()
			if err != nil {
				t.Error(err)
				return
			}
			again, _ := snap.ReadDir("d")
			if len(again) != len(first) || len(listed) < stable {
				t.Errorf("snapshot listed %d then %d entries; handle %d", len(first), len(again), len(listed))
				return
			}
		}
	})
	for i := range 20000 {
		name := fmt.Sprintf("d/c%04d", i%churn)
		if i/churn%2 == 0 {
			if err := fsys.WriteFile(name, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := fsys.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if err := fsys.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestDirHandleKeepsFirstListing opens a directory while a writer adds
// and removes files in it: what the handle lists after its first ReadDir
// never includes a file whose creation began after that call returned.
func TestDirHandleKeepsFirstListing(t *testing.T) {
	fsys := mem.New()
	if err := fsys.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fsys.WriteFile("d/a", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var started atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for seq := int64(1); !stop.Load(); seq++ {
			started.Store(seq)
			if err := fsys.WriteFile(fmt.Sprintf("d/n%09d", seq), nil, 0o644); err != nil {
				t.Error(err)
				return
			}
			if seq > 20 {
				fsys.Remove(fmt.Sprintf("d/n%09d", seq-20))
			}
		}
	})
	rounds := 1000
	if testsize.Short() {
		rounds = 250
	}
	for range rounds {
		h, err := fsys.Open("d")
		if err != nil {
			t.Fatal(err)
		}
		d := h.(fs.ReadDirFile)
		if _, err := d.ReadDir(1); err != nil {
			t.Fatal(err)
		}
		hi := started.Load()
		time.Sleep(50 * time.Microsecond) // let the writer run on
		rest, err := d.ReadDir(-1)
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rest {
			var seq int64
			if _, err := fmt.Sscanf(e.Name(), "n%09d", &seq); err == nil && seq > hi {
				t.Fatalf("handle listed %s, created after its first ReadDir (last begun then: %d)", e.Name(), hi)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
}
