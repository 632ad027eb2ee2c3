package packreader_test

import (
	"bytes"
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

// TestReadFileAt: ReadFileAt reads a regular file of a directory found by
// LookupAt in that one lookup, as ReadFile reads it by path (a copy of the
// same bytes), from a mapped pack and through an io.ReaderAt, plain and
// compressed; anything else is Open's error naming the path (a directory
// EISDIR, a symlink ELOOP, not followed, a missing name ENOENT), a damaged
// content ErrCorrupt, and a closed pack ErrClosed.
func TestReadFileAt(t *testing.T) {
	m := mem.New()
	big := bytes.Repeat([]byte("a frame and more "), 1<<14)
	for _, err := range []error{
		m.Mkdir("d", 0o755),
		m.WriteFile("d/f", []byte("in d"), 0o640),
		m.WriteFile("d/big", big, 0o644),
		m.WriteFile("d/empty", nil, 0o644),
		m.WriteFile("top", []byte("at the root"), 0o644),
		m.Symlink("top", "d/link"),
		m.Mkdir("d/sub", 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, compress := range []bool{false, true} {
		var opts []packwriter.Option
		if compress {
			opts = append(opts, packwriter.WithCompression(3))
		}
		name := filepath.Join(t.TempDir(), "t.pack")
		if err := packwriter.WriteFile(name, m.Snapshot(), opts...); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		mapped, err := packreader.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		viaRA, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*packreader.Reader{mapped, viaRA} {
			d, err := r.LookupAt(nil, "d")
			if err != nil || d.Dir == nil {
				t.Fatalf("LookupAt(d) = %v, %v", d, err)
			}
			for _, c := range []struct {
				dir        any
				name, path string
			}{{nil, "top", "top"}, {d.Dir, "f", "d/f"}, {d.Dir, "big", "d/big"}, {d.Dir, "empty", "d/empty"}} {
				got, err := r.ReadFileAt(c.dir, c.name, c.path)
				want, werr := r.ReadFile(c.path)
				if err != nil || werr != nil || !bytes.Equal(got, want) || got == nil {
					t.Errorf("compress %v: ReadFileAt(%q) = %d bytes, %v; ReadFile: %d bytes, %v", compress, c.path, len(got), err, len(want), werr)
				}
				if len(got) > 0 {
					got[0]++ // a copy: the next read is unchanged
					if again, _ := r.ReadFileAt(c.dir, c.name, c.path); !bytes.Equal(again, want) {
						t.Errorf("compress %v: ReadFileAt(%q) after changing a copy differs", compress, c.path)
					}
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
				b, err := r.ReadFileAt(d.Dir, c.name, "d/"+c.name)
				var pe *fs.PathError
				if b != nil || !errors.Is(err, c.want) || !errors.As(err, &pe) || pe.Path != "d/"+c.name || pe.Op != "open" {
					t.Errorf("ReadFileAt(d, %q) = %q, %v; want a PathError(open, d/%s) wrapping %v", c.name, b, err, c.name, c.want)
				}
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := r.ReadFileAt(d.Dir, "f", "d/f"); !errors.Is(err, os.ErrClosed) {
				t.Errorf("ReadFileAt on a closed pack: %v, want ErrClosed", err)
			}
		}
		// A damaged content: every byte of big's stored data flipped.
		at := bytes.Index(data, big[:4096])
		if compress {
			continue // its stored bytes are not big's: see the damage tests
		}
		if at < 0 {
			t.Fatal("big's bytes not found in the pack")
		}
		for i := at; i < at+4096; i++ {
			data[i] ^= 0xff
		}
		r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.LookupAt(nil, "d")
		if err != nil {
			t.Fatal(err)
		}
		if b, err := r.ReadFileAt(d.Dir, "big", "d/big"); b != nil || !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("ReadFileAt of a damaged content = %d bytes, %v; want ErrCorrupt", len(b), err)
		}
		r.Close()
	}
}
