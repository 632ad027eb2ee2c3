package mem_test

import (
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"

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
