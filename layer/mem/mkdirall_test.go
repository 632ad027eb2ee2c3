package mem

import (
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestIssue14MkdirAllLinear: MkdirAll of a deep path walks it once, so
// that 4x the depth allocates about 4x the bytes (a Stat and a Mkdir per
// level made it quadratic: 16x).
func TestIssue14MkdirAllLinear(t *testing.T) {
	cost := func(depth int) uint64 {
		least := ^uint64(0)
		var before, after runtime.MemStats
		for range 3 {
			f := New()
			name := "a" + strings.Repeat("/d", depth)
			runtime.GC()
			runtime.ReadMemStats(&before)
			if err := f.MkdirAll(name, 0o755); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			least = min(least, after.TotalAlloc-before.TotalAlloc)
			if fi, err := f.Stat(name); err != nil || !fi.IsDir() {
				t.Fatalf("Stat after MkdirAll: %v", err)
			}
		}
		return least
	}
	small, large := cost(250), cost(1000)
	if r := float64(large) / float64(small); r > 6 {
		t.Errorf("depth 250: %d bytes, 1000: %d bytes: %.1fx for 4x the depth", small, large, r)
	}
}

// MkdirAll's one walk leaves the cases it does not cover to the errors
// os.MkdirAll gives.
func TestMkdirAllErrors(t *testing.T) {
	f := New()
	if err := f.WriteFile("file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("missing/x", "dangling"); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("dir", "link"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		path string
	}{
		{"file/a/b", syscall.ENOTDIR, "file"},
		{"dangling/a", fs.ErrExist, "dangling"},
		{"dangling", fs.ErrExist, "dangling"},
	} {
		err := f.MkdirAll(tc.name, 0o755)
		var pe *fs.PathError
		if !errors.Is(err, tc.err) || !errors.As(err, &pe) || pe.Path != tc.path {
			t.Errorf("MkdirAll(%s) = %v, want %v at %s", tc.name, err, tc.err, tc.path)
		}
	}
	long := "dir" + strings.Repeat("/d", 2100)
	if err := f.MkdirAll(long, 0o755); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("MkdirAll of %d bytes: %v", len(long), err)
	}
	if _, err := f.Lstat("dir"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed MkdirAll made its parents: %v", err)
	}
	if err := f.MkdirAll("dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.MkdirAll("link/a/b", 0o700); err != nil {
		t.Fatal(err)
	}
	if fi, err := f.Stat("dir/a/b"); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		t.Errorf("through a symlink: %v, %v", fi, err)
	}
}
