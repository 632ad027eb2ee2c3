package packfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// stack returns a union of a fresh upper over a lower holding files
// (name → contents; a name ending in "/" is a directory).
func stack(t *testing.T, files map[string]string) (*packfs.FS, *mem.FS) {
	t.Helper()
	lower := mem.New()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var err error
		if name[len(name)-1] == '/' {
			err = lower.MkdirAll(name[:len(name)-1], 0o755)
		} else if err = lower.MkdirAll(path.Dir(name), 0o755); err == nil {
			err = lower.WriteFile(name, []byte(files[name]), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	upper := mem.New()
	return packfs.New(upper, lower.Snapshot()), upper
}

func wantMissing(t *testing.T, fsys fs.FS, name string) {
	t.Helper()
	if _, err := fs.Lstat(fsys, name); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lstat(%s) = %v, want ErrNotExist", name, err)
	}
}

func wantContent(t *testing.T, fsys fs.FS, name, want string) {
	t.Helper()
	got, err := fs.ReadFile(fsys, name)
	if err != nil || string(got) != want {
		t.Errorf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
	}
}

func names(t *testing.T, fsys fs.FS, dir string) []string {
	t.Helper()
	list, err := fs.ReadDir(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		out = append(out, e.Name())
	}
	return out
}

func TestWhiteoutHidesLowerFile(t *testing.T) {
	u, upper := stack(t, map[string]string{"d/": "", "d/a": "A", "d/b": "B"})
	if err := u.Remove("d/a"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, u, "d/a")
	if got := names(t, u, "d"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("ReadDir(d) = %v, want [b]", got)
	}
	if fi, err := upper.Lstat("d/a"); err != nil || !layer.IsWhiteout(fi.Mode()) {
		t.Errorf("upper d/a = %v, %v; want a whiteout", fi, err)
	}
}

// afero's CopyOnWriteFs brings the lower version back here.
func TestRemovedUpperCopyDoesNotResurface(t *testing.T) {
	u, _ := stack(t, map[string]string{"f": "lower"})
	if err := u.WriteFile("f", []byte("upper"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantContent(t, u, "f", "upper")
	if err := u.Remove("f"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, u, "f")
	if err := u.RemoveAll("f"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, u, "f")
}

func TestOpaqueDirectoryHidesLowerContents(t *testing.T) {
	u, upper := stack(t, map[string]string{"d/": "", "d/old1": "1", "d/sub/old2": "2"})
	if err := u.RemoveAll("d"); err != nil {
		t.Fatal(err)
	}
	if err := u.Mkdir("d", 0o700); err != nil {
		t.Fatal(err)
	}
	if got := names(t, u, "d"); len(got) != 0 {
		t.Errorf("ReadDir of the new d = %v, want nothing", got)
	}
	wantMissing(t, u, "d/old1")
	wantMissing(t, u, "d/sub/old2")
	if !layer.IsOpaque(upper, "d") {
		t.Error("the new d is not opaque in the upper layer")
	}
	if err := u.WriteFile("d/new", []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := names(t, u, "d"); !slices.Equal(got, []string{"new"}) {
		t.Errorf("ReadDir(d) = %v, want [new]", got)
	}
}

// afero's CopyOnWriteFs loses the mode here.
func TestCopyUpKeepsModeAndMtime(t *testing.T) {
	lower := mem.New()
	lower.WriteFile("tool", []byte("#!/bin/sh\n"), 0o750)
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	lower.Chtimes("tool", time.Time{}, mtime)
	upper := mem.New()
	u := packfs.New(upper, lower.Snapshot())
	f, err := u.OpenFile("tool", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(f); string(got) != "#!/bin/sh\n" {
		t.Errorf("copied-up contents = %q", got)
	}
	f.Close()
	fi, err := upper.Stat("tool")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o750 || !fi.ModTime().Equal(mtime) {
		t.Errorf("upper copy: mode %v mtime %v; want %v %v", fi.Mode(), fi.ModTime(), fs.FileMode(0o750), mtime)
	}
	// Chmod of a lower file copies it up with its contents.
	lower2 := mem.New()
	lower2.WriteFile("data", []byte("keep"), 0o600)
	u2 := packfs.New(mem.New(), lower2.Snapshot())
	if err := u2.Chmod("data", 0o644); err != nil {
		t.Fatal(err)
	}
	wantContent(t, u2, "data", "keep")
	if fi, _ := u2.Stat("data"); fi.Mode() != 0o644 {
		t.Errorf("mode after Chmod = %v", fi.Mode())
	}
}

func TestRenameLowerOnlyDirectory(t *testing.T) {
	u, _ := stack(t, map[string]string{"src/": "", "src/a": "A", "src/deep/b": "B", "dst/": "", "dst/x": "X"})
	if err := u.Rename("src", "moved"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, u, "src")
	wantContent(t, u, "moved/a", "A")
	wantContent(t, u, "moved/deep/b", "B")
	// Into a name a lower layer once held: nothing of it merges in.
	if err := u.RemoveAll("dst"); err != nil {
		t.Fatal(err)
	}
	if err := u.Rename("moved", "dst"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, u, "dst"); !slices.Equal(got, []string{"a", "deep"}) {
		t.Errorf("ReadDir(dst) = %v, want [a deep]", got)
	}
}

func TestMergedReadDirOrderAndPaging(t *testing.T) {
	files := map[string]string{"d/": ""}
	for i := 0; i < 50; i += 2 {
		files[fmt.Sprintf("d/%02d", i)] = "lower"
	}
	u, _ := stack(t, files)
	for i := 1; i < 50; i += 2 {
		u.WriteFile(fmt.Sprintf("d/%02d", i), []byte("upper"), 0o644)
	}
	u.Remove("d/10")
	u.WriteFile("d/20", []byte("shadow"), 0o644)
	var want []string
	for i := range 50 {
		if i != 10 {
			want = append(want, fmt.Sprintf("%02d", i))
		}
	}
	if got := names(t, u, "d"); !slices.Equal(got, want) {
		t.Errorf("ReadDir(d) = %v\nwant %v", got, want)
	}
	f, err := u.Open("d")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var paged []string
	for {
		list, err := f.(fs.ReadDirFile).ReadDir(7)
		for _, e := range list {
			paged = append(paged, e.Name())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		// Changes after the first page do not show in this listing.
		u.WriteFile("d/zz-new", nil, 0o644)
	}
	if !slices.Equal(paged, want) {
		t.Errorf("paged ReadDir = %v\nwant %v", paged, want)
	}
	wantContent(t, u, "d/20", "shadow")
}

func TestSnapshotIsolationUnderConcurrentWriter(t *testing.T) {
	u, _ := stack(t, map[string]string{"d/": "", "d/keep": "k"})
	u.WriteFile("d/v", []byte("0"), 0o644)
	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			u.WriteFile("d/v", []byte(fmt.Sprint(i+1)), 0o644)
			u.WriteFile(fmt.Sprintf("d/n%d", i), nil, 0o644)
			u.Remove("d/keep")
		}
	})
	for range 200 {
		wantContent(t, snap, "d/v", "0")
		wantContent(t, snap, "d/keep", "k")
		if got := names(t, snap, "d"); !slices.Equal(got, []string{"keep", "v"}) {
			t.Fatalf("snapshot lists %v", got)
		}
	}
	wg.Wait()
	if err := snap.WriteFile("d/x", nil, 0o644); !errors.Is(err, fs.ErrPermission) && !errors.Is(err, errROFS) {
		t.Errorf("write to a snapshot: %v, want EROFS", err)
	}
}

var errROFS = syscall.EROFS

func TestReadOnlyUnion(t *testing.T) {
	lower := mem.New()
	lower.WriteFile("f", []byte("x"), 0o644)
	u := packfs.New(nil, lower.Snapshot(), nil)
	wantContent(t, u, "f", "x")
	if err := u.WriteFile("g", nil, 0o644); !errors.Is(err, errROFS) {
		t.Errorf("write to a read-only union: %v, want EROFS", err)
	}
	empty := packfs.New(nil)
	if got := names(t, empty, "."); len(got) != 0 {
		t.Errorf("New(nil) lists %v", got)
	}
}
