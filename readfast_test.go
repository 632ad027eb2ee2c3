package packfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestReadFileThroughLowerDirectory: the union's ReadFile of a name whose
// directory one lower layer alone holds reads it in that layer's one
// lookup (ReadFileAt), and answers exactly as Open and ReadAll would for
// every other kind of entry there: a symlink is followed (out of the
// directory too), a directory is EISDIR, a missing name ENOENT, and the
// upper layer's later file, whiteout or directory over the name wins.
// Lowers: a mapped pack, a pack through an io.ReaderAt, a snapshot.
func TestReadFileThroughLowerDirectory(t *testing.T) {
	m := mem.New()
	for _, err := range []error{
		m.Mkdir("d", 0o755),
		m.WriteFile("d/f", []byte("lower f"), 0o644),
		m.WriteFile("top", []byte("top"), 0o644),
		m.Symlink("../top", "d/up"),
		m.Symlink("f", "d/link"),
		m.Symlink("nowhere", "d/dangling"),
		m.Mkdir("d/sub", 0o755),
		m.WriteFile("d/sub/g", []byte("deeper"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Join(t.TempDir(), "l.pack")
	if err := packwriter.WriteFile(name, m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	mapped, err := packreader.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	for _, lower := range []struct {
		what string
		fsys fs.FS
	}{{"mapped pack", mapped}, {"pack through ReaderAt", packOf(t, m.Snapshot())}, {"snapshot", m.Snapshot()}} {
		u := packfs.New(mem.New(), lower.fsys)
		for _, c := range []struct {
			name, want string
			err        error
		}{
			{"d/f", "lower f", nil},
			{"d/up", "top", nil},
			{"d/link", "lower f", nil},
			{"d/sub/g", "deeper", nil},
			{"d/dangling", "", fs.ErrNotExist},
			{"d/sub", "", syscall.EISDIR},
			{"d/none", "", fs.ErrNotExist},
			{"d/f/x", "", syscall.ENOTDIR},
		} {
			for range 2 { // the second read finds the directory learned
				b, err := u.ReadFile(c.name)
				if c.err == nil && (err != nil || string(b) != c.want) || c.err != nil && !errors.Is(err, c.err) {
					t.Errorf("%s: ReadFile(%q) = %q, %v; want %q, %v", lower.what, c.name, b, err, c.want, c.err)
				}
			}
		}
		if err := u.WriteFile("d/f", []byte("upper f"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := u.ReadFile("d/f"); err != nil || !bytes.Equal(b, []byte("upper f")) {
			t.Errorf("%s: ReadFile after the upper's write = %q, %v", lower.what, b, err)
		}
		if b, err := u.ReadFile("d/link"); err != nil || !bytes.Equal(b, []byte("upper f")) {
			t.Errorf("%s: ReadFile of a lower link to the written file = %q, %v", lower.what, b, err)
		}
		if err := u.Remove("d/f"); err != nil {
			t.Fatal(err)
		}
		if b, err := u.ReadFile("d/f"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: ReadFile of a whited-out file = %q, %v; want ErrNotExist", lower.what, b, err)
		}
		if err := u.Mkdir("d/f", 0o755); err != nil {
			t.Fatal(err)
		}
		if b, err := u.ReadFile("d/f"); !errors.Is(err, syscall.EISDIR) {
			t.Errorf("%s: ReadFile of the upper's directory over a lower file = %q, %v; want EISDIR", lower.what, b, err)
		}
	}
}
