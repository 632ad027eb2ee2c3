package layer_test

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// minimal exposes only fs.FS plus OpenFile, Mkdir and Remove of a full
// layer, so that the helpers must fall back.
type minimal struct{ full *mem.FS }

func (m minimal) Open(name string) (fs.File, error) { return m.full.Open(name) }
func (m minimal) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	return m.full.OpenFile(name, flag, perm)
}
func (m minimal) Mkdir(name string, perm fs.FileMode) error { return m.full.Mkdir(name, perm) }
func (m minimal) Remove(name string) error                  { return m.full.Remove(name) }

func TestFallbacks(t *testing.T) {
	full := mem.New()
	fsys := minimal{full}
	if err := layer.MkdirAll(fsys, "a/b/c", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := layer.MkdirAll(fsys, "a/b", 0o750); err != nil {
		t.Fatalf("MkdirAll of an existing directory: %v", err)
	}
	if err := layer.WriteFile(fsys, "a/b/c/f", []byte("data"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := layer.MkdirAll(fsys, "a/b/c/f", 0o750); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("MkdirAll over a file: %v, want ENOTDIR", err)
	}
	if err := layer.MkdirAll(fsys, "a/b/c/f/g", 0o750); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("MkdirAll through a file: %v, want ENOTDIR", err)
	}
	f, err := layer.Create(fsys, "a/top")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("x")
	f.Close()
	if err := fstest.TestFS(fsys, "a/b/c/f", "a/top"); err != nil {
		t.Fatal(err)
	}
	if fi, err := fs.Stat(fsys, "a/b/c"); err != nil || fi.Mode() != fs.ModeDir|0o750 {
		t.Errorf("Stat(a/b/c) = %v, %v", fi, err)
	}
	if err := layer.RemoveAll(fsys, "a"); err != nil {
		t.Fatal(err)
	}
	if err := layer.RemoveAll(fsys, "a"); err != nil {
		t.Errorf("RemoveAll of a missing name: %v", err)
	}
	if _, err := fs.Stat(fsys, "a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after RemoveAll: %v", err)
	}
	if err := layer.RemoveAll(fsys, "."); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RemoveAll(.): %v, want EINVAL", err)
	}
	if err := full.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestUnsupported(t *testing.T) {
	ro := fstest.MapFS{"f": {Data: []byte("x")}}
	for name, err := range map[string]error{
		"Mkdir":     layer.Mkdir(ro, "d", 0o755),
		"Remove":    layer.Remove(ro, "f"),
		"Rename":    layer.Rename(ro, "f", "g"),
		"Chmod":     layer.Chmod(ro, "f", 0o600),
		"Symlink":   layer.Symlink(ro, "f", "l"),
		"Whiteout":  layer.Whiteout(ro, "f"),
		"WriteFile": layer.WriteFile(ro, "f", nil, 0o644),
		"RemoveAll": layer.RemoveAll(ro, "f"),
	} {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s on a read-only FS: %v, want ErrUnsupported", name, err)
		}
	}
	// A read-only open falls back to Open, and the file refuses writes.
	f, err := layer.OpenFile(ro, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("y")); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Write on a read-only fallback file: %v, want EBADF", err)
	}
	b := make([]byte, 4)
	if n, err := f.ReadAt(b, 0); n != 1 || string(b[:1]) != "x" {
		t.Errorf("ReadAt = %d, %v", n, err)
	}
	if _, err := layer.OpenFile(ro, "f", os.O_RDWR, 0); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("writable open of a read-only FS: %v", err)
	}
}

func TestOCIName(t *testing.T) {
	for _, c := range []struct {
		in, target       string
		whiteout, opaque bool
	}{
		{"a/b", "a/b", false, false},
		{"a/.wh.b", "a/b", true, false},
		{".wh.top", "top", true, false},
		{"a/.wh..wh..opq", "a", false, true},
		{".wh..wh..opq", "", false, true},
		{"a/.wh.", "a/.wh.", false, false},
	} {
		target, wh, opq := layer.OCIName(c.in)
		if target != c.target || wh != c.whiteout || opq != c.opaque {
			t.Errorf("OCIName(%q) = %q, %v, %v; want %q, %v, %v", c.in, target, wh, opq, c.target, c.whiteout, c.opaque)
		}
	}
}
