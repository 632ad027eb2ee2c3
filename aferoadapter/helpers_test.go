package aferoadapter_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"
	"time"

	"github.com/packfs/packfs/internal/testsize"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// TestIOFS checks afero.NewIOFS over the adapter with fstest.TestFS, on
// each of the conformance suite's trees without dangling symlinks.
func TestIOFS(t *testing.T) {
	for _, tree := range conformance.Trees() {
		switch tree.Name {
		case "symlinks":
			continue // dangling links fail fstest.TestFS on every fs.FS
		case "sizes", "wide":
			// fstest.TestFS reads every file many times over: 7 s
			// (wide) and 20 s (sizes) without the race detector.
			if testsize.Short() || raceEnabled {
				continue
			}
		}
		t.Run(tree.Name, func(t *testing.T) {
			upper := mem.New()
			if err := conformance.Populate(upper, tree); err != nil {
				t.Fatal(err)
			}
			iofs := afero.NewIOFS(aferoadapter.New(upper))
			var want []string
			fs.WalkDir(upper, ".", func(p string, d fs.DirEntry, err error) error {
				if p != "." && len(want) < 200 {
					want = append(want, p)
				}
				return nil
			})
			if err := fstest.TestFS(iofs, want...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPaths checks the resolution of afero paths against the kernel.
func TestPaths(t *testing.T) {
	host := osFs(t)
	back := adapterFs(t)
	for _, fsys := range []afero.Fs{host, back} {
		fsys.MkdirAll("/a/b", 0o755)
		afero.WriteFile(fsys, "/a/b/f", []byte("f"), 0o644)
	}
	for _, p := range []string{
		"/a/b/f", "a/b/f", "./a/b/f", "a/b/f/", "/a//b/f", "//a/b/f", "/a/./b/f", "a/b/../b/f", "/a/x/../b/f",
		"", "/", ".", "./", "//", "/.", "a/..", "/a/b/..", "a/b/f/.", "a/b/f/..", "/a/b/./", "a/x/..", "a/b/f//", "/a/b//.//",
	} {
		hfi, herr := host.Stat(p)
		bfi, berr := back.Stat(p)
		if class(herr) != class(berr) || (hfi == nil) != (bfi == nil) || (hfi != nil && hfi.IsDir() != bfi.IsDir()) {
			t.Errorf("Stat(%q): OS %v %v, adapter %v %v", p, hfi, herr, bfi, berr)
		}
		var pe *fs.PathError
		if berr != nil && (!errors.As(berr, &pe) || pe.Path != p) {
			t.Errorf("Stat(%q): error %v does not name the path as passed", p, berr)
		}
	}
	if err := back.RemoveAll("/"); err == nil {
		t.Errorf("RemoveAll(/) removed the root")
	}
	if _, err := back.Stat("/a/b/f"); err != nil {
		t.Errorf("after RemoveAll(/): %v", err)
	}
	f, err := back.OpenFile("./a//b/f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name() != "./a//b/f" {
		t.Errorf("Name() = %q, want the name as passed", f.Name())
	}
	if _, err := f.Write([]byte("x")); err == nil || !errors.As(err, new(*fs.PathError)) {
		t.Errorf("Write on a read-only handle: %v", err)
	} else if pe := err.(*fs.PathError); pe.Path != "./a//b/f" {
		t.Errorf("Write error path %q, want the name as passed", pe.Path)
	}
	f.Close()
}

// readOnly is an fs.FS with none of the write capabilities.
type readOnly struct{ fs.FS }

// TestUnsupported checks that what a file system cannot do is reported as
// errors.ErrUnsupported, and that reading still works.
func TestUnsupported(t *testing.T) {
	fsys := aferoadapter.New(readOnly{fstest.MapFS{"d/f": {Data: []byte("data")}}})
	data, err := afero.ReadFile(fsys, "/d/f")
	if err != nil || string(data) != "data" {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	for name, err := range map[string]error{
		"Mkdir":     fsys.Mkdir("/x", 0o755),
		"Remove":    fsys.Remove("/d/f"),
		"Rename":    fsys.Rename("/d/f", "/g"),
		"Chmod":     fsys.Chmod("/d/f", 0o600),
		"WriteFile": afero.WriteFile(fsys, "/d/f", nil, 0o644),
		"Symlink":   fsys.(afero.Linker).SymlinkIfPossible("f", "/l"),
	} {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
	if err := fsys.(afero.Linker).SymlinkIfPossible("f", "/l"); !errors.Is(err, afero.ErrNoSymlink) {
		t.Errorf("Symlink: %v, want afero.ErrNoSymlink too", err)
	}
	if _, err := fsys.(afero.LinkReader).ReadlinkIfPossible("/d/f"); !errors.Is(err, afero.ErrNoReadlink) {
		t.Errorf("Readlink: %v, want afero.ErrNoReadlink", err)
	}
	if _, ok, err := fsys.(afero.Lstater).LstatIfPossible("/d/f"); ok || err != nil {
		t.Errorf("LstatIfPossible = %v, %v; want false, nil", ok, err)
	}
	nilFs := aferoadapter.New(nil)
	if _, err := nilFs.Open("/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("New(nil).Open: %v", err)
	}
}

// TestNoPanics feeds odd names to every operation.
func TestNoPanics(t *testing.T) {
	fsys := adapterFs(t)
	fsys.MkdirAll("/d", 0o755)
	names := []string{"", "/", ".", "..", "/..", "\x00", "a\x00b", "//..//..", "d/\x00", "./../.", "\\", "a\\..\\..", "/d/../../../d", "\xff\xfe", string(make([]byte, 300))}
	for _, n := range names {
		fsys.Create(n)
		fsys.Mkdir(n, 0o755)
		fsys.MkdirAll(n, 0o755)
		fsys.Open(n)
		fsys.OpenFile(n, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		fsys.Stat(n)
		fsys.(afero.Lstater).LstatIfPossible(n)
		fsys.Chmod(n, 0o777)
		fsys.Chown(n, -1, -1)
		fsys.Chtimes(n, zeroTime, zeroTime)
		fsys.(afero.Linker).SymlinkIfPossible(n, n)
		fsys.(afero.LinkReader).ReadlinkIfPossible(n)
		fsys.Rename(n, "/d/x")
		fsys.Rename("/d/x", n)
		fsys.Remove(n)
		fsys.RemoveAll(n)
	}
	for _, n := range names {
		layer := aferoadapter.Layer(afero.NewMemMapFs())
		layer.Stat(n)
		layer.Open(n)
		layer.Mkdir(n, 0o755)
		layer.Rename(n, n)
		layer.Symlink(n, n)
		layer.Lchown(n, 1, 1)
		layer.Chtimes(n, zeroTime, zeroTime)
		layer.RemoveAll(n)
	}
}

var zeroTime = time.Time{}

// unionFs returns the adapter over a union of a fresh mem upper over a
// lower holding what setup made (through the adapter over a mem layer,
// then snapshotted). A nil setup leaves the lower empty.
func unionFs(t testing.TB, setup func(afero.Fs)) afero.Fs {
	t.Helper()
	lower := mem.New()
	if setup != nil {
		setup(aferoadapter.New(lower))
	}
	u, err := settle(packfs.New(lower))
	if err != nil {
		t.Fatal(err)
	}
	return aferoadapter.New(u)
}

// settle returns a union of a fresh mem upper over u's snapshot, with the
// root's mode and modification time carried up, as they were: u's state
// moves into a lower layer.
func settle(u *packfs.FS) (*packfs.FS, error) {
	snap, err := u.Snapshot()
	if err != nil {
		return nil, err
	}
	root, err := snap.Stat(".")
	if err != nil {
		return nil, err
	}
	upper := mem.New()
	if err := upper.Chmod(".", root.Mode()); err != nil {
		return nil, err
	}
	if err := upper.Chtimes(".", time.Time{}, root.ModTime()); err != nil {
		return nil, err
	}
	return packfs.New(upper, snap), nil
}
