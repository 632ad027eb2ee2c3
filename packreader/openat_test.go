package packreader_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestIssue19OpenAt: OpenAt opens a regular file of a directory found by
// LookupAt in that one lookup, as Open opens it by path (same bytes, same
// Stat, errors naming the path), and opens nothing else: a directory is
// EISDIR, a symlink ELOOP (not followed), a missing name ENOENT; a closed
// pack is ErrClosed.
func TestIssue19OpenAt(t *testing.T) {
	m := mem.New()
	for _, err := range []error{
		m.Mkdir("d", 0o755),
		m.WriteFile("d/f", []byte("in d"), 0o640),
		m.WriteFile("top", []byte("at the root"), 0o644),
		m.Symlink("top", "d/link"),
		m.Mkdir("d/sub", 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Join(t.TempDir(), "t.pack")
	if err := packwriter.WriteFile(name, m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.LookupAt(nil, "d")
	if err != nil || d.Dir == nil {
		t.Fatalf("LookupAt(d) = %v, %v", d, err)
	}
	for _, c := range []struct {
		dir        any
		name, path string
		want       string
	}{
		{nil, "top", "top", "at the root"},
		{d.Dir, "f", "d/f", "in d"},
	} {
		f, err := r.OpenAt(c.dir, c.name, c.path)
		if err != nil {
			t.Fatalf("OpenAt(%q): %v", c.path, err)
		}
		b, err := io.ReadAll(f)
		if err != nil || string(b) != c.want {
			t.Errorf("OpenAt(%q) reads %q, %v; want %q", c.path, b, err, c.want)
		}
		fi, err := f.Stat()
		want, _ := r.Stat(c.path)
		if err != nil || fi.Name() != want.Name() || fi.Mode() != want.Mode() || fi.Size() != want.Size() {
			t.Errorf("OpenAt(%q).Stat() = %v, %v; want %v", c.path, fi, err, want)
		}
		f.Close()
		if _, err := f.(io.ReaderAt).ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("ReadAt after Close: %v, want ErrClosed", err)
		}
	}
	for _, c := range []struct {
		name string
		want error
	}{
		{"sub", syscall.EISDIR},
		{"link", syscall.ELOOP},
		{"nothing", fs.ErrNotExist},
	} {
		f, err := r.OpenAt(d.Dir, c.name, "d/"+c.name)
		var pe *fs.PathError
		if f != nil || !errors.Is(err, c.want) || !errors.As(err, &pe) || pe.Path != "d/"+c.name || pe.Op != "open" {
			t.Errorf("OpenAt(d, %q) = %v, %v; want a PathError(open, d/%s) wrapping %v", c.name, f, err, c.name, c.want)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenAt(d.Dir, "f", "d/f"); !errors.Is(err, os.ErrClosed) {
		t.Errorf("OpenAt on a closed pack: %v, want ErrClosed", err)
	}
}
