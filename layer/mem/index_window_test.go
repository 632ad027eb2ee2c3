package mem_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
)

// TestIndexWindowBesideListing: a name a listing shows is found by a
// lookup made after it, while a writer adds and removes names in the same
// directory. The directory is large enough for a hash index, and the
// writer's edits change the treap the published state shares in place:
// a lookup between such an edit and the index's update found the index
// not yet told of a name the listing had already shown (ENOENT), until
// the edit opened the index's window first.
func TestIndexWindowBesideListing(t *testing.T) {
	rounds := 200
	if testsize.Short() {
		rounds = 40
	}
	for round := range rounds {
		fsys := mem.New()
		mustMem(t, fsys.Mkdir("w", 0o755))
		for i := range 80 {
			mustMem(t, fsys.WriteFile(fmt.Sprintf("w/base%d", i), nil, 0o644))
		}
		if _, err := fsys.Stat("w/base0"); err != nil { // builds the index
			t.Fatal(err)
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				entries, err := fsys.ReadDir("w")
				if err != nil {
					t.Error(err)
					return
				}
				for _, e := range entries {
					if _, err := fsys.Lstat("w/" + e.Name()); err != nil {
						// A name removed since the listing is fine; one
						// never removed is not.
						if e.Name()[0] == 'k' {
							t.Errorf("round %d: listed %s does not stat: %v", round, e.Name(), err)
							return
						}
					}
				}
			}
		})
		for i := range 300 {
			mustMem(t, fsys.WriteFile(fmt.Sprintf("w/k%d", i), nil, 0o644))
			mustMem(t, fsys.WriteFile(fmt.Sprintf("w/t%d", i), nil, 0o644))
			mustMem(t, fsys.Remove(fmt.Sprintf("w/t%d", i)))
		}
		stop.Store(true)
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}

func mustMem(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
