package dirfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/layer"
)

// eachMode runs test on fresh FSes of both ways of resolving names.
func eachMode(t *testing.T, test func(t *testing.T, newFS conformance.NewFS)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			test(t, func(t *testing.T) layer.FS { return newFS(t, m.opts...) })
		})
	}
}

// TestIssue13ReaddirRenamedDir is issue 13, item 6: the entries of a
// directory handle describe themselves relative to the open directory, as
// os.File.Readdir's do, and so survive a rename of the directory; they were
// looked up by the old name and lost. Through the afero adapter too, whose
// Readdir is os.File.Readdir's.
func TestIssue13ReaddirRenamedDir(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		conformance.Tests["ReadDirRenamedHandle"](t, newFS)
		fsys := newFS(t)
		if err := fsys.Mkdir("d", 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"x", "y", "z"} {
			if err := fsys.WriteFile("d/"+name, []byte(name+name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		a := aferoadapter.New(fsys)
		d, err := a.Open("/d")
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := a.Rename("/d", "/e"); err != nil {
			t.Fatal(err)
		}
		infos, err := d.Readdir(-1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, fi := range infos {
			got = append(got, fmt.Sprintf("%s:%d", fi.Name(), fi.Size()))
		}
		if want := []string{"x:2", "y:2", "z:2"}; !slices.Equal(got, want) {
			t.Errorf("Readdir(-1) of the renamed directory = %v, want %v", got, want)
		}
	})
}

// TestIssue13ReadDirSortedBatches is issue 13, item 6: a directory
// handle's batches come sorted by name, as on every other backend; they
// came in the kernel's order.
func TestIssue13ReadDirSortedBatches(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		conformance.Tests["ReadDirBatchesSorted"](t, newFS)
	})
}

// TestIssue13SymlinkEmptyTargetDirfs is issue 13, item 3: the empty target
// is ENOENT before newname's parent is resolved (it was ENOTDIR or ELOOP).
func TestIssue13SymlinkEmptyTargetDirfs(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		conformance.Tests["SymlinkEmptyTarget"](t, newFS)
	})
}

// TestIssue14NameLimitsDirfs is issue 14, item 6: a path of 4,096 bytes
// or more is ENAMETOOLONG before any element is looked up, as the kernel
// does (the parent resolved apart, or os.Root, found ENOENT first).
func TestIssue14NameLimitsDirfs(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		conformance.Tests["NameLimits"](t, newFS)
	})
}

// TestIssue13SetgidMkdirDirfs is issue 13, item 2, on the host: the
// os.Root fallback refused a perm with the sticky or setgid bit.
func TestIssue13SetgidMkdirDirfs(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		conformance.Tests["SetgidMkdir"](t, newFS)
	})
}

// BenchmarkReadDirBatches measures what sorting a directory handle's
// batches costs: reading a directory of n entries 100 at a time through
// dirfs (the first batch reads and sorts the whole directory) against
// os.File.ReadDir(100) in the kernel's order.
func BenchmarkReadDirBatches(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		dir := b.TempDir()
		if d, err := os.MkdirTemp("/dev/shm", "dirfs-bench-"); err == nil {
			dir = d
			b.Cleanup(func() { os.RemoveAll(d) })
		}
		for i := range n {
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%07d", (i*7919)%n)))
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		fsys, err := dirfs.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { fsys.Close() })
		drain := func(b *testing.B, f interface {
			ReadDir(int) ([]os.DirEntry, error)
			Close() error
		}) {
			got := 0
			for {
				list, err := f.ReadDir(100)
				got += len(list)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			f.Close()
			if got != n {
				b.Fatalf("listed %d entries, want %d", got, n)
			}
		}
		b.Run(fmt.Sprintf("os/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				f, err := os.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				drain(b, f)
			}
		})
		b.Run(fmt.Sprintf("dirfs/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				f, err := fsys.OpenFile(".", os.O_RDONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				drain(b, f)
			}
		})
	}
}

// TestIssue13ReadDirInfoBesideClose lists a directory and describes its
// entries while another goroutine closes the handle: an entry's Info
// either uses the open descriptor or falls back to the name, never a
// descriptor number reused meanwhile.
func TestIssue13ReadDirInfoBesideClose(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		fsys := newFS(t)
		if err := fsys.Mkdir("d", 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if err := fsys.WriteFile(fmt.Sprintf("d/f%02d", i), make([]byte, i), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for range 20 {
			d, err := fsys.OpenFile("d", os.O_RDONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			list, err := d.ReadDir(-1)
			if err != nil || len(list) != 20 {
				t.Fatalf("ReadDir(-1) = %d entries, %v", len(list), err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				d.Close()
				// A new descriptor may take the closed one's number.
				if g, err := fsys.Open("."); err == nil {
					g.Close()
				}
			}()
			for i, e := range list {
				fi, err := e.Info()
				if err != nil || fi.Name() != e.Name() || fi.Size() != int64(i) {
					t.Errorf("Info of %s beside Close = %v, %v", e.Name(), fi, err)
				}
			}
			<-done
		}
	})
}

// TestIssue13ReadDirRemovedDir: a directory listed to its end and then
// removed reads ENOENT at the next ReadDir, as getdents on a dead
// directory gives through os (found by the afero differential).
func TestIssue13ReadDirRemovedDir(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		fsys := newFS(t)
		if err := fsys.Mkdir("b", 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := fsys.Open("b")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		d := f.(fs.ReadDirFile)
		if ents, err := d.ReadDir(1); len(ents) != 0 || err != io.EOF {
			t.Fatalf("ReadDir(1) of an empty directory = %v, %v; want EOF", ents, err)
		}
		if err := fsys.Remove("b"); err != nil {
			t.Fatal(err)
		}
		if _, err = d.ReadDir(-1); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("ReadDir(-1) after the directory was removed: %v; want ENOENT", err)
		}
	})
}
