package packfs_test

import (
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
)

// TestIssue14CreateOverWhiteout: creating a name whose lower entry was
// removed (Mkdir, MkdirAll, WriteFile, Symlink) replaces the whiteout in
// one step. Readers beside the writer, live and through snapshots, never
// see the removed lower entry again: not its type, its content or, for a
// directory, its children.
func TestIssue14CreateOverWhiteout(t *testing.T) {
	base := mem.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(base.Mkdir("d", 0o755))
	for _, n := range []string{"x1", "x2", "x3"} {
		must(base.WriteFile("d/"+n, []byte("lower"), 0o644))
	}
	must(base.WriteFile("f", []byte("lower"), 0o644))
	must(base.WriteFile("s", []byte("lower"), 0o644))
	u := packfs.New(mem.New(), packOf(t, base.Snapshot()))
	must(u.RemoveAll("d"))
	must(u.Remove("f"))
	must(u.Remove("s"))

	var stop atomic.Bool
	var bad atomic.Int64
	var first atomic.Value
	report := func(msg string) {
		bad.Add(1)
		first.CompareAndSwap(nil, msg)
	}
	check := func(fsys fs.FS) {
		if ents, err := fs.ReadDir(fsys, "d"); err == nil {
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "x") {
					report("d lists the removed lower " + e.Name())
				}
			}
		}
		if data, err := fs.ReadFile(fsys, "f"); err == nil && string(data) == "lower" {
			report("f reads the removed lower content")
		}
		if fi, err := fs.Lstat(fsys, "s"); err == nil && fi.Mode().IsRegular() {
			report("s is the removed lower file")
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				check(u)
				if i%8 == 0 {
					if snap, err := u.Snapshot(); err == nil {
						check(snap)
					}
				}
			}
		}()
	}
	rounds := 300
	if !testsize.Short() {
		rounds = 2000
	}
	for range rounds {
		must(u.Mkdir("d", 0o755))
		must(u.RemoveAll("d"))
		must(u.MkdirAll("d/a/b", 0o755))
		must(u.RemoveAll("d"))
		must(u.WriteFile("f", []byte("upper"), 0o644))
		must(u.Remove("f"))
		must(u.Symlink("nowhere", "s"))
		must(u.Remove("s"))
	}
	stop.Store(true)
	wg.Wait()
	check(u)
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d reads saw a removed lower entry; the first: %v", n, first.Load())
	}
}
