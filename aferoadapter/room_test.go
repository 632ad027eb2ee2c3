package aferoadapter_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"testing"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer/mem"
)

// TestMemHandleOneAllocation: over an in-memory layer, a file the adapter
// opens is the adapter's handle and the layer's in one allocation, and it
// behaves as any other: it reads, writes, seeks, and is closed for good.
func TestMemHandleOneAllocation(t *testing.T) {
	m := mem.New()
	if err := m.WriteFile("f", []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := aferoadapter.New(m)
	if !raceEnabled {
		if n := testing.AllocsPerRun(200, func() {
			f, err := a.Open("f")
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}); n != 1 {
			t.Errorf("Open+Close allocates %v times, want 1", n)
		}
	}
	f, err := a.OpenFile("f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("J"), 0); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "Jello" || f.Name() != "f" {
		t.Fatalf("read %q, %v, name %q", b, err, f.Name())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	// A failed open hands out nothing and leaves no handle behind.
	if _, err := a.Open("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing): %v", err)
	}
	if _, err := a.OpenFile("f/x", os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		t.Error("create under a file succeeded")
	}
}
