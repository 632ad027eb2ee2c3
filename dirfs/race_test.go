//go:build linux

package dirfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/internal/testsize"
	"golang.org/x/sys/unix"
)

// TestCVE201815664 is the docker cp race: while goroutines outside the FS
// swap a directory of the root with a symlink to a directory outside
// (atomically, with renameat2 RENAME_EXCHANGE, as the exploit did), other
// goroutines open, stat and write paths through that directory. A path must
// reach the real directory or fail; it must never reach outside.
func TestCVE201815664(t *testing.T) {
	iterations := 10000
	switch {
	case testsize.Short():
		iterations = 1000
	case raceEnabled:
		// The swappers take both cores from the openers: 10,000 took a
		// minute per mode here, and ten in a loaded CI run.
		iterations = 2000
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			base := tempDir(t)
			root := filepath.Join(base, "root")
			for _, d := range []string{"root/dir", "outdir"} {
				must(t, os.MkdirAll(filepath.Join(base, d), 0o755))
			}
			must(t, os.WriteFile(filepath.Join(root, "dir", "f"), []byte("inside"), 0o644))
			must(t, os.WriteFile(filepath.Join(base, "outdir", "f"), []byte("outside"), 0o644))
			must(t, os.Symlink(filepath.Join(base, "outdir"), filepath.Join(root, "abslink")))
			must(t, os.Symlink("../outdir", filepath.Join(root, "rellink")))
			outFi, err := os.Stat(filepath.Join(base, "outdir", "f"))
			must(t, err)

			f := newFSAt(t, root, m.opts...)
			var stop atomic.Bool
			var swaps atomic.Int64
			var wg sync.WaitGroup
			for _, link := range []string{"abslink", "rellink"} {
				wg.Go(func() {
					d, l := filepath.Join(root, "dir"), filepath.Join(root, link)
					for !stop.Load() {
						if unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, l, unix.RENAME_EXCHANGE) == nil {
							swaps.Add(1)
						}
					}
				})
			}
			var escapes, reached atomic.Int64
			var openers sync.WaitGroup
			const workers = 2
			for w := range workers {
				openers.Go(func() {
					for i := range iterations / workers {
						if data, err := f.ReadFile("dir/f"); err == nil {
							reached.Add(1)
							if !bytes.Equal(data, []byte("inside")) {
								escapes.Add(1)
								t.Errorf("ReadFile(dir/f) read %q", data)
							}
						}
						if fi, err := f.Stat("dir/f"); err == nil && os.SameFile(fi, outFi) {
							escapes.Add(1)
							t.Errorf("Stat(dir/f) reached the outside file")
						}
						switch (i + w) % 3 {
						case 0:
							f.WriteFile("dir/new", []byte("x"), 0o644)
						case 1:
							f.Mkdir("dir/newdir", 0o755)
						case 2:
							f.Chmod("dir/f", 0o600)
						}
					}
				})
			}
			openers.Wait()
			stop.Store(true)
			wg.Wait()
			list, err := os.ReadDir(filepath.Join(base, "outdir"))
			must(t, err)
			if len(list) != 1 {
				escapes.Add(1)
				t.Errorf("outdir holds %v, want only f", list)
			}
			if fi, err := os.Stat(filepath.Join(base, "outdir", "f")); err != nil || fi.Mode() != 0o644 {
				escapes.Add(1)
				t.Errorf("outdir/f changed: %v, %v", fi, err)
			}
			if data, _ := os.ReadFile(filepath.Join(base, "outdir", "f")); string(data) != "outside" {
				escapes.Add(1)
				t.Errorf("outdir/f = %q", data)
			}
			t.Logf("%d iterations, %d swaps, %d reads reached the real file, %d escapes", iterations, swaps.Load(), reached.Load(), escapes.Load())
			if swaps.Load() == 0 {
				t.Error("no swap happened: the test tested nothing")
			}
		})
	}
}

func newFSAt(t testing.TB, dir string, opts ...dirfs.Option) *dirfs.FS {
	t.Helper()
	f, err := dirfs.New(dir, opts...)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}
