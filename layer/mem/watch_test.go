package mem_test

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestWatch checks the change every call reports, under the names the
// files have once it is made: a write through a handle opened before a
// rename names the file where it now is, and a change through a symlink
// names its target.
func TestWatch(t *testing.T) {
	f := mem.New()
	w, err := f.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want ...layer.Change) {
		t.Helper()
		got := w.Changes()
		if !slices.Equal(got, want) {
			t.Fatalf("changes %v, want %v", got, want)
		}
	}
	must(f.MkdirAll("a/b", 0o755))
	expect(layer.Change{Op: layer.OpCreate, Name: "a"})
	must(f.WriteFile("a/b/f", []byte("x"), 0o644))
	expect(layer.Change{Op: layer.OpCreate, Name: "a/b/f"})
	must(f.WriteFile("a/b/f", []byte("yy"), 0o644))
	expect(layer.Change{Op: layer.OpWrite, Name: "a/b/f"})
	// The one-step write a union makes of a file it has found.
	must(f.WriteFileIn(nil, "top", "top", []byte("x"), 0o644))
	expect(layer.Change{Op: layer.OpCreate, Name: "top"})
	must(f.WriteFileIn(nil, "top", "top", []byte("yy"), 0o644))
	expect(layer.Change{Op: layer.OpWrite, Name: "top"})
	must(f.Remove("top"))
	expect(layer.Change{Op: layer.OpRemove, Name: "top"})
	h, err := f.OpenFile("a/b/f", os.O_RDWR, 0)
	must(err)
	must(f.Rename("a/b", "c"))
	expect(layer.Change{Op: layer.OpRename, Name: "a/b", NewName: "c"})
	_, err = h.WriteAt([]byte("z"), 5)
	must(err)
	_, err = h.WriteAt([]byte("z"), 6)
	must(err)
	expect(layer.Change{Op: layer.OpWrite, Name: "c/f"}) // one for a run
	must(h.Truncate(0))
	must(h.(layer.ChmodFile).Chmod(0o600))
	expect(layer.Change{Op: layer.OpWrite, Name: "c/f"}, layer.Change{Op: layer.OpChattr, Name: "c/f"})
	must(f.Symlink("c/f", "l"))
	must(f.Chmod("l", 0o640))
	expect(layer.Change{Op: layer.OpCreate, Name: "l"}, layer.Change{Op: layer.OpChattr, Name: "c/f"})
	must(f.Remove("c/f"))
	_, err = h.Write([]byte("gone"))
	must(err)
	must(h.Close())
	must(f.RemoveAll("a"))
	expect(layer.Change{Op: layer.OpRemove, Name: "c/f"}, layer.Change{Op: layer.OpRemove, Name: "a"})
	// Failed calls report nothing.
	if f.Mkdir("c", 0o755) == nil || f.Remove("nope") == nil || f.Rename("nope", "x") == nil {
		t.Fatal("a failing call succeeded")
	}
	must(f.Rename("l", "l"))
	expect()
	must(f.Whiteout("c"))
	expect(layer.Change{Op: layer.OpRemove, Name: "c"}, layer.Change{Op: layer.OpCreate, Name: "c"})
}

// TestWatchFilterAndOverflow checks that a filter's refusals are not
// kept, that a watcher fallen behind gets one OpReset for everything it
// missed, and that a closed one gets nothing.
func TestWatchFilterAndOverflow(t *testing.T) {
	f := mem.New()
	w, _ := f.Watch(func(c layer.Change) bool { return c.Name != "skip" })
	if err := f.Mkdir("skip", 0o755); err != nil {
		t.Fatal(err)
	}
	if got := w.Changes(); got != nil {
		t.Fatalf("a filtered change kept: %v", got)
	}
	for i := range 5000 {
		if err := f.WriteFile(fmt.Sprint("f", i), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-w.Ready():
	default:
		t.Fatal("Ready did not signal")
	}
	if got := w.Changes(); !slices.Equal(got, []layer.Change{{Op: layer.OpReset}}) {
		t.Fatalf("after an overflow: %d changes, want one OpReset", len(got))
	}
	if err := f.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	if got := w.Changes(); !slices.Equal(got, []layer.Change{{Op: layer.OpCreate, Name: "d"}}) {
		t.Fatalf("after the reset: %v", got)
	}
	w.Close()
	if err := f.Mkdir("e", 0o755); err != nil {
		t.Fatal(err)
	}
	if got := w.Changes(); got != nil {
		t.Fatalf("a closed watcher got %v", got)
	}
}

// TestWatchConcurrent runs writers beside a watcher that takes changes,
// under the race detector, and checks that the last change of each
// writer's file arrives.
func TestWatchConcurrent(t *testing.T) {
	f := mem.New()
	w, _ := f.Watch(nil)
	defer w.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			name := fmt.Sprint("g", g)
			for i := range 500 {
				if err := f.WriteFile(name, []byte{byte(i)}, 0o644); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	seen := map[string]bool{}
	go func() {
		defer close(done)
		for len(seen) < 4 {
			<-w.Ready()
			for _, c := range w.Changes() {
				if c.Op == layer.OpReset {
					for g := range 4 {
						seen[fmt.Sprint("g", g)] = true
					}
				}
				seen[c.Name] = true
			}
		}
	}()
	wg.Wait()
	<-done
}
