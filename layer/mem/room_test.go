package mem_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"testing"

	"github.com/packfs/packfs/layer/mem"
)

// TestOpenFileRoom: a handle opened in a room is OpenFile's in every way,
// read-only (no lock) or writing (created under the writer's lock), and
// a failed open returns no handle.
func TestOpenFileRoom(t *testing.T) {
	m := mem.New()
	if err := m.WriteFile("f", []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r1, r2, r3 mem.FileRoom
	f, err := m.OpenFileRoom(&r1, "f", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.OpenFileRoom(&r2, "g", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Write([]byte("xyz")); err != nil {
		t.Fatal(err)
	}
	if b, err := m.ReadFile("g"); err != nil || string(b) != "xyz" {
		t.Fatalf("g holds %q, %v", b, err)
	}
	if b, err := io.ReadAll(f); err != nil || string(b) != "abc" {
		t.Fatalf("f reads %q, %v", b, err)
	}
	if fi, err := g.Stat(); err != nil || fi.Mode() != 0o600 || fi.Name() != "g" {
		t.Fatalf("g: %v, %v", fi, err)
	}
	for _, h := range []interface{ Close() error }{f, g} {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("second Close: %v", err)
		}
	}
	for _, c := range []struct {
		name string
		flag int
	}{{"missing", os.O_RDONLY}, {"g", os.O_CREATE | os.O_EXCL | os.O_WRONLY}, {"f/x", os.O_CREATE | os.O_WRONLY}, {"", os.O_RDONLY}} {
		if h, err := m.OpenFileRoom(&r3, c.name, c.flag, 0o644); err == nil || h != nil {
			t.Errorf("OpenFileRoom(%q, %#x) = %v, %v; want an error and no handle", c.name, c.flag, h, err)
		}
	}
	if h, err := m.OpenFileRoom(nil, "f", os.O_RDONLY, 0); err != nil || h.Close() != nil {
		t.Errorf("OpenFileRoom(nil, f): %v", err)
	}
}
