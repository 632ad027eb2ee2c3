package packfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// These tests check the read fast path (a name whose directory one lower
// layer alone holds is read from that layer directly) where it must not
// apply or must stop applying.

// wantSame checks that Stat, Lstat, ReadFile and Open agree on name.
func wantSame(t *testing.T, u *packfs.FS, name, want string) {
	t.Helper()
	wantContent(t, u, name, want)
	f, err := u.Open(name)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(want)) {
		t.Errorf("Open(%s).Stat().Size() = %d, want %d", name, fi.Size(), len(want))
	}
	if fi, err := u.Stat(name); err != nil || fi.Size() != int64(len(want)) {
		t.Errorf("Stat(%s) = %v, %v; want size %d", name, fi, err, len(want))
	}
}

// TestFastPathSymlinkResolvesInUnion reads through lower symlinks whose
// targets the upper layer changed: they resolve in the union, not in the
// lower layer that holds them.
func TestFastPathSymlinkResolvesInUnion(t *testing.T) {
	lower := mem.New()
	for _, d := range []string{"d", "t", "a"} {
		if err := lower.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, lower.WriteFile("d/f", []byte("lower f"), 0o644))
	must(t, lower.WriteFile("t/x", []byte("lower x"), 0o644))
	must(t, lower.Symlink("../t/x", "d/l"))  // a final symlink
	must(t, lower.Symlink("../t", "a/s"))    // a directory symlink
	must(t, lower.Symlink("missing", "d/m")) // dangling in the lower
	u := packfs.New(mem.New(), lower.Snapshot())
	wantSame(t, u, "d/f", "lower f")
	wantSame(t, u, "d/l", "lower x")
	wantSame(t, u, "a/s/x", "lower x")

	must(t, u.WriteFile("t/x", []byte("upper x!"), 0o644))
	must(t, u.WriteFile("d/missing", []byte("found"), 0o644))
	wantSame(t, u, "d/l", "upper x!")
	wantSame(t, u, "a/s/x", "upper x!")
	wantSame(t, u, "d/m", "found")
	if fi, err := u.Lstat("d/l"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(d/l) = %v, %v; want a symlink", fi, err)
	}
}

// TestFastPathUpperChanges reads a lower file before and after each
// change the upper layer makes on its path.
func TestFastPathUpperChanges(t *testing.T) {
	u, _ := stack(t, map[string]string{"d/": "", "d/e/": "", "d/a": "A", "d/e/b": "B", "d/e/c": "C"})
	wantSame(t, u, "d/a", "A")
	wantSame(t, u, "d/e/b", "B")

	must(t, u.WriteFile("d/e/b", []byte("B2"), 0o644)) // copy-up of d and d/e
	wantSame(t, u, "d/e/b", "B2")
	wantSame(t, u, "d/e/c", "C")
	wantSame(t, u, "d/a", "A")

	must(t, u.Remove("d/a"))
	wantMissing(t, u, "d/a")
	if _, err := u.ReadFile("d/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(d/a) after Remove: %v", err)
	}

	must(t, u.RemoveAll("d"))
	wantMissing(t, u, "d/e/c")
	must(t, u.MkdirAll("d/e", 0o755))
	wantMissing(t, u, "d/e/c") // opaque: the lower's d/e stays hidden
	must(t, u.WriteFile("d/e/c", []byte("new"), 0o644))
	wantSame(t, u, "d/e/c", "new")
}

// TestFastPathRenameAndChmod reads a lower file through a handle opened
// on the fast path, and after the file moved.
func TestFastPathRenameAndChmod(t *testing.T) {
	u, _ := stack(t, map[string]string{"d/": "", "d/a": "A", "e/": "", "e/b": "B"})
	f, err := u.Open("d/a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	must(t, u.Chmod("d/a", 0o600))
	if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the handle after Chmod: %v, %v; want mode 0600", fi, err)
	}
	must(t, u.Rename("e/b", "d/b"))
	wantMissing(t, u, "e/b")
	wantSame(t, u, "d/b", "B")
	must(t, u.Rename("d", "x"))
	wantMissing(t, u, "d/a")
	wantSame(t, u, "x/a", "A")
}

// TestFastPathLowerWhiteouts reads over a stack of lowers whose top one
// holds whiteouts and an opaque directory, as a delta pack does.
func TestFastPathLowerWhiteouts(t *testing.T) {
	bottom := mem.New()
	for _, d := range []string{"o", "m", "w"} {
		must(t, bottom.Mkdir(d, 0o755))
		must(t, bottom.WriteFile(d+"/old", []byte("old "+d), 0o644))
	}
	delta := mem.New()
	for _, d := range []string{"o", "m", "n"} {
		must(t, delta.Mkdir(d, 0o755))
		must(t, delta.WriteFile(d+"/new", []byte("new "+d), 0o644))
	}
	must(t, layer.MarkOpaque(delta, "o"))
	must(t, delta.Whiteout("n/gone"))
	must(t, delta.Whiteout("w"))
	u := packfs.New(mem.New(), delta.Snapshot(), bottom.Snapshot())
	wantSame(t, u, "o/new", "new o")
	wantMissing(t, u, "o/old") // opaque in the delta
	wantMissing(t, u, "o/"+layer.OpaqueName)
	wantSame(t, u, "m/new", "new m")
	wantSame(t, u, "m/old", "old m") // merged
	wantSame(t, u, "n/new", "new n")
	wantMissing(t, u, "n/gone") // a whiteout of the only layer holding n
	if _, err := u.ReadFile("n/gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(n/gone) = %v, want ErrNotExist", err)
	}
	wantMissing(t, u, "w/old")
}

// TestFastPathSnapshot reads a snapshot while the union changes.
func TestFastPathSnapshot(t *testing.T) {
	u, _ := stack(t, map[string]string{"d/": "", "d/a": "A"})
	wantSame(t, u, "d/a", "A")
	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	must(t, u.WriteFile("d/a", []byte("A2"), 0o644))
	wantSame(t, snap, "d/a", "A")
	wantSame(t, u, "d/a", "A2")
	snap2, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	must(t, u.RemoveAll("d"))
	wantSame(t, snap2, "d/a", "A2")
	wantSame(t, snap, "d/a", "A")
	wantMissing(t, u, "d/a")
}

// TestFastPathConcurrentWriter reads lower files while a writer copies
// them up and removes them: a read that starts after a write returned
// sees it.
func TestFastPathConcurrentWriter(t *testing.T) {
	files := map[string]string{}
	const n = 50
	for i := range n {
		files[fmt.Sprintf("d%d/", i%5)] = ""
		files[fmt.Sprintf("d%d/f%d", i%5, i)] = "lower"
	}
	u, _ := stack(t, files)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range n {
					name := fmt.Sprintf("d%d/f%d", i%5, i)
					// WriteFile truncates before it writes: a
					// reader may see the file empty, as on Linux.
					b, err := u.ReadFile(name)
					if err != nil && !errors.Is(err, fs.ErrNotExist) || err == nil && string(b) != "lower" && string(b) != "upper" && len(b) > 0 {
						t.Errorf("ReadFile(%s) = %q, %v", name, b, err)
					}
				}
			}
		})
	}
	for i := range n {
		name := fmt.Sprintf("d%d/f%d", i%5, i)
		if i%2 == 0 {
			must(t, u.WriteFile(name, []byte("upper"), 0o644))
			wantContent(t, u, name, "upper")
		} else {
			must(t, u.Remove(name))
			wantMissing(t, u, name)
		}
	}
	close(stop)
	wg.Wait()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFastPathTopLayer reads names the upper layer resolves by itself,
// through its own symlinks, and names it only partly holds.
func TestFastPathTopLayer(t *testing.T) {
	u, upper := stack(t, map[string]string{"d/": "", "d/f": "lower f", "o/": "", "o/x": "lower x", "w/": "", "w/y": "lower y"})
	must(t, u.MkdirAll("b/c", 0o755))
	must(t, u.WriteFile("b/c/f", []byte("upper f"), 0o644))
	must(t, u.Symlink("b", "a"))         // a directory symlink of the upper layer
	must(t, u.Symlink("a/c/f", "l"))     // a file symlink through it
	must(t, u.Symlink("d/f", "m"))       // to a file of the lower layer
	must(t, u.Symlink("../../d/f", "n")) // climbing above the root
	wantSame(t, u, "a/c/f", "upper f")
	wantSame(t, u, "l", "upper f")
	wantSame(t, u, "m", "lower f")
	wantSame(t, u, "n", "lower f")
	if fi, err := u.Lstat("l"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(l) = %v, %v; want a symlink", fi, err)
	}

	must(t, u.RemoveAll("o"))
	must(t, u.Mkdir("o", 0o755)) // opaque over the lower's o
	wantMissing(t, u, "o/x")
	must(t, u.Remove("w/y")) // a whiteout in the upper's w
	must(t, u.WriteFile("w/z", []byte("z"), 0o644))
	wantMissing(t, u, "w/y")
	if _, err := u.ReadFile("w/y"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(w/y) = %v, want ErrNotExist", err)
	}
	if _, err := u.Open("w/y"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(w/y) = %v, want ErrNotExist", err)
	}
	wantSame(t, u, "w/z", "z")
	if _, err := fs.Lstat(upper, "w/y"); err != nil {
		t.Fatalf("the upper layer holds no whiteout at w/y: %v", err)
	}

	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	wantSame(t, snap, "l", "upper f")
	for _, fsys := range []*packfs.FS{u, snap} {
		// Open(2) refuses a symlink with O_NOFOLLOW: a union did not
		// when the symlink was in a read-only layer.
		if _, err := fsys.OpenFile("l", os.O_RDONLY|syscall.O_NOFOLLOW, 0); !errors.Is(err, syscall.ELOOP) {
			t.Errorf("OpenFile(l, O_NOFOLLOW) = %v, want ELOOP", err)
		}
	}
}

// TestOpenNoFollow opens symlinks of each layer with O_NOFOLLOW, which
// open(2) refuses with ELOOP.
func TestOpenNoFollow(t *testing.T) {
	lower := mem.New()
	must(t, lower.Mkdir("d", 0o755))
	must(t, lower.WriteFile("d/f", []byte("f"), 0o644))
	must(t, lower.Symlink("f", "d/lower"))
	must(t, lower.Symlink("d/f", "root"))
	u := packfs.New(mem.New(), lower.Snapshot())
	must(t, u.Symlink("f", "d/upper"))
	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, fsys := range []*packfs.FS{u, snap, packfs.New(nil, lower.Snapshot())} {
		for _, name := range []string{"d/lower", "d/upper", "root"} {
			if name == "d/upper" && fsys != u && fsys != snap {
				continue
			}
			f, err := fsys.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
			if !errors.Is(err, syscall.ELOOP) {
				t.Errorf("OpenFile(%s, O_NOFOLLOW) = %v, want ELOOP", name, err)
				if f != nil {
					f.Close()
				}
			}
			wantContent(t, fsys, name, "f")
		}
	}
}
