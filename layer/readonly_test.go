package layer_test

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/layer"
)

// TestIssue13ReadOnlyOffsets is issue 13, item 5, for the read-only files
// that layer.OpenFile serves from any fs.FS (a union's lower files among
// them): ReadAt checks its offset as os does before the file sees it.
func TestIssue13ReadOnlyOffsets(t *testing.T) {
	fsys := fstest.MapFS{"f": {Data: []byte("0123456789")}}
	f, err := layer.OpenFile(fsys, "f", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1)
	_, err = f.ReadAt(buf, -1)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "readat" || pe.Err.Error() != "negative offset" {
		t.Errorf("ReadAt(1 byte, -1) = %v, want os's readat: negative offset", err)
	}
	if _, err := f.ReadAt(buf, math.MaxInt64); !errors.As(err, &pe) || pe.Op != "read" || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadAt(1 byte, MaxInt64) = %v, want read: EINVAL", err)
	}
	if n, err := f.ReadAt(buf, 9); n != 1 || err != nil || buf[0] != '9' {
		t.Errorf("ReadAt(1 byte, 9) = %d, %v, %q", n, err, buf)
	}
}

// TestReadOnlyClosed checks that a closed read-only file answers each call
// as a closed *os.File opened O_RDONLY does: fs.ErrClosed with os's Op
// where os makes a system call (it gave EBADF, EINVAL or nothing), os's
// own checks where it makes none.
func TestReadOnlyClosed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	host, err := os.Open(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := os.DirFS(dir).Open("f")
	if err != nil {
		t.Fatal(err)
	}
	ro := layer.ReadOnly(inner, "f")
	host.Close()
	ro.Close()
	buf := make([]byte, 1)
	calls := []struct {
		what string
		call func(f layer.File) error
	}{
		{"Sync", func(f layer.File) error { return f.Sync() }},
		{"Write", func(f layer.File) error { _, err := f.Write(buf); return err }},
		{"WriteAt", func(f layer.File) error { _, err := f.WriteAt(buf, 0); return err }},
		{"WriteAt empty", func(f layer.File) error { _, err := f.WriteAt(nil, 0); return err }},
		{"WriteAt negative", func(f layer.File) error { _, err := f.WriteAt(buf, -1); return err }},
		{"WriteString", func(f layer.File) error { _, err := f.WriteString("x"); return err }},
		{"Truncate", func(f layer.File) error { return f.Truncate(0) }},
		{"ReadAt negative", func(f layer.File) error { _, err := f.ReadAt(buf, -1); return err }},
		{"ReadAt past MaxInt64", func(f layer.File) error { _, err := f.ReadAt(buf, math.MaxInt64); return err }},
	}
	for _, c := range calls {
		want, got := c.call(host), c.call(ro)
		var wp, gp *fs.PathError
		switch {
		case want == nil:
			if got != nil {
				t.Errorf("%s on a closed read-only file = %v, want nil, as os", c.what, got)
			}
		case !errors.As(want, &wp):
			t.Fatalf("%s on a closed *os.File: %v, not a PathError", c.what, want)
		case !errors.As(got, &gp) || gp.Op != wp.Op || errors.Is(got, fs.ErrClosed) != errors.Is(want, fs.ErrClosed) || gp.Err.Error() != wp.Err.Error():
			t.Errorf("%s on a closed read-only file = %v, want %v", c.what, got, want)
		}
	}
}
