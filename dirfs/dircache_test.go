//go:build linux

package dirfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/internal/testsize"
	"golang.org/x/sys/unix"
)

// The tests below move, replace and remove directories whose descriptors
// a stat of a name beneath them has just cached, and check that the next
// stat sees the tree as it is then: a directory moved out of the root is
// not reached through the descriptor kept of it.

// cacheTree makes base/root/a/b/f (6 bytes) and base/out/b/f (7 bytes), and
// returns the FS of base/root with a/b/f stated twice, so its parents are
// cached where the FS caches them.
func cacheTree(t *testing.T, opts ...dirfs.Option) (base string, f *dirfs.FS) {
	t.Helper()
	base = tempDir(t)
	must(t, os.MkdirAll(filepath.Join(base, "root", "a", "b"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "out", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "root", "a", "b", "f"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "out", "b", "f"), []byte("outside"), 0o644))
	f = newFSAt(t, filepath.Join(base, "root"), opts...)
	for range 2 {
		wantSize(t, f, "a/b/f", 6)
	}
	return base, f
}

// wantSize checks Stat and Lstat of name against size; -1 wants ENOENT.
func wantSize(t *testing.T, f *dirfs.FS, name string, size int64) {
	t.Helper()
	for _, stat := range []func(string) (fs.FileInfo, error){f.Stat, f.Lstat} {
		fi, err := stat(name)
		switch {
		case size < 0 && !errors.Is(err, fs.ErrNotExist):
			t.Fatalf("stat %s = %v, %v; want ENOENT", name, fi, err)
		case size >= 0 && (err != nil || fi.Size() != size):
			t.Fatalf("stat %s = %v, %v; want %d bytes", name, fi, err, size)
		}
	}
}

func TestDirCacheMovedOut(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			for _, moved := range []string{"a/b", "a"} {
				t.Run(moved, func(t *testing.T) {
					base, f := cacheTree(t, m.opts...)
					root := filepath.Join(base, "root")
					must(t, os.Rename(filepath.Join(root, moved), filepath.Join(base, "gone")))
					wantSize(t, f, "a/b/f", -1)
					// Something else in its place is what a stat finds.
					must(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
					must(t, os.WriteFile(filepath.Join(root, "a", "b", "f"), []byte("new"), 0o644))
					wantSize(t, f, "a/b/f", 3)
				})
			}
		})
	}
}

// TestDirCacheExchanged swaps a cached directory with one outside the root,
// back and forth: after each swap a stat finds what is at the name then.
func TestDirCacheExchanged(t *testing.T) {
	rounds := 2000
	if testsize.Short() || raceEnabled { // the race detector costs 10x
		rounds = 300
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			base, f := cacheTree(t, m.opts...)
			in, out := filepath.Join(base, "root", "a", "b"), filepath.Join(base, "out", "b")
			for i := range rounds {
				must(t, unix.Renameat2(unix.AT_FDCWD, in, unix.AT_FDCWD, out, unix.RENAME_EXCHANGE))
				wantSize(t, f, "a/b/f", []int64{7, 6}[i%2])
				wantSize(t, f, "a/b/f", []int64{7, 6}[i%2])
			}
		})
	}
}

// TestDirCacheReplacedBySymlink: a cached directory replaced by a symlink
// to a directory outside is followed no further than without the cache.
func TestDirCacheReplacedBySymlink(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			base, f := cacheTree(t, m.opts...)
			a := filepath.Join(base, "root", "a")
			must(t, os.Rename(a, filepath.Join(base, "olda")))
			must(t, os.Symlink(filepath.Join(base, "out"), a))
			if fi, err := f.Stat("a/b/f"); !errors.Is(err, dirfs.ErrEscapes) {
				t.Fatalf("stat a/b/f through a symlink out = %v, %v; want ErrEscapes", fi, err)
			}
			must(t, os.Remove(a))
			must(t, os.Symlink("../out", a))
			if fi, err := f.Lstat("a/b/f"); !errors.Is(err, dirfs.ErrEscapes) {
				t.Fatalf("lstat a/b/f through ../out = %v, %v; want ErrEscapes", fi, err)
			}
		})
	}
}

// TestDirCacheOwnChanges: renames and removals made through the FS itself.
func TestDirCacheOwnChanges(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			_, f := cacheTree(t, m.opts...)
			must(t, f.Rename("a/b", "a/c"))
			wantSize(t, f, "a/b/f", -1)
			wantSize(t, f, "a/c/f", 6)
			must(t, f.RemoveAll("a/c"))
			wantSize(t, f, "a/c/f", -1)
			must(t, f.MkdirAll("a/c", 0o755))
			must(t, f.WriteFile("a/c/f", []byte("xy"), 0o644))
			wantSize(t, f, "a/c/f", 2)
			must(t, f.Rename("a", "z"))
			wantSize(t, f, "a/c/f", -1)
			wantSize(t, f, "z/c/f", 2)
		})
	}
}

// TestDirCacheOverflow: more events than inotify queues (16,384 by
// default) between two stats lose nothing.
func TestDirCacheOverflow(t *testing.T) {
	n := 17000
	if testsize.Short() || raceEnabled { // the race detector costs 10x
		n = 2000
	}
	_, f := cacheTree(t)
	for i := range n {
		must(t, f.Mkdir(fmt.Sprintf("a/d%d", i), 0o755))
	}
	for i := range n {
		must(t, f.Remove(fmt.Sprintf("a/d%d", i)))
	}
	must(t, f.Rename("a/b", "a/c"))
	wantSize(t, f, "a/b/f", -1)
	wantSize(t, f, "a/c/f", 6)
}

// TestDirCacheMany stats beneath more directories than the cache holds,
// and closes FSes that cached some without leaking a descriptor.
func TestDirCacheMany(t *testing.T) {
	fds := func() int {
		list, err := os.ReadDir("/proc/self/fd")
		must(t, err)
		return len(list)
	}
	before := fds()
	for range 3 {
		dir := tempDir(t)
		f, err := dirfs.New(dir)
		must(t, err)
		for i := range 300 {
			must(t, f.MkdirAll(fmt.Sprintf("d%d/e", i), 0o755))
			must(t, f.WriteFile(fmt.Sprintf("d%d/e/f", i), make([]byte, i), 0o644))
		}
		for range 2 {
			for i := range 300 {
				wantSize(t, f, fmt.Sprintf("d%d/e/f", i), int64(i))
			}
		}
		must(t, f.Close())
		if _, err := f.Stat("d1/e/f"); !errors.Is(err, fs.ErrClosed) {
			t.Fatalf("stat after Close: %v", err)
		}
	}
	if after := fds(); after > before {
		t.Errorf("%d descriptors open before, %d after", before, after)
	}
}

// TestDirCacheRace: stats of names beneath a directory that goroutines
// move out of the root and back, swap with a symlink out, and rename within
// it. Every stat finds the file inside, or fails; none reaches outside.
func TestDirCacheRace(t *testing.T) {
	iterations := 20000
	if testsize.Short() || raceEnabled { // the race detector costs 10x
		iterations = 3000
	}
	base, f := cacheTree(t)
	root := filepath.Join(base, "root")
	outFi, err := os.Stat(filepath.Join(base, "out", "b", "f"))
	must(t, err)
	must(t, os.Symlink(filepath.Join(base, "out"), filepath.Join(root, "link")))
	var stop atomic.Bool
	var moves atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { // a/b out of the root and back
		for !stop.Load() {
			if os.Rename(filepath.Join(root, "a", "b"), filepath.Join(base, "b")) == nil {
				moves.Add(1)
				// Back until it lands: while a is swapped with the
				// link, root/a/b is out/b, which is not empty, and
				// one try left b outside for the rest of the test.
				for os.Rename(filepath.Join(base, "b"), filepath.Join(root, "a", "b")) != nil && !stop.Load() {
				}
			}
		}
	})
	wg.Go(func() { // a swapped with a symlink to out
		for !stop.Load() {
			if unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "a"), unix.AT_FDCWD, filepath.Join(root, "link"), unix.RENAME_EXCHANGE) == nil {
				moves.Add(1)
			}
		}
	})
	var reached atomic.Int64
	var statters sync.WaitGroup
	for range 2 {
		statters.Go(func() {
			// Until iterations/2, and on until one stat found the
			// file (the movers can win every try on a loaded
			// machine), at most 20 times as long.
			for i := 0; i < iterations/2 || reached.Load() == 0 && i < 10*iterations; i++ {
				name := []string{"a/b/f", "link/b/f"}[i%2]
				fi, err := []func(string) (fs.FileInfo, error){f.Stat, f.Lstat}[i/2%2](name)
				if err != nil {
					if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, dirfs.ErrEscapes) && !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
						t.Errorf("stat %s: %v", name, err)
					}
					continue
				}
				reached.Add(1)
				if os.SameFile(fi, outFi) || fi.Size() != 6 {
					t.Errorf("stat %s reached %v, outside the root", name, fi)
				}
			}
		})
	}
	statters.Wait()
	stop.Store(true)
	wg.Wait()
	t.Logf("%d stats, %d found the file, %d moves", iterations, reached.Load(), moves.Load())
	if moves.Load() == 0 || reached.Load() == 0 {
		t.Error("no move or no stat succeeded: the test tested nothing")
	}
}
