package packfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/packreader"
)

// TestStoreVerify: Verify finds damage in a pack's contents that Open,
// which checks no content, lets through; Info names the pack.
func TestStoreVerify(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile("f", []byte("some content to damage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	if info.Generation != 1 || len(info.Packs) != 1 || info.ReadOnly {
		t.Fatalf("Info = %+v", info)
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Verify after Close = %v, want ErrClosed", err)
	}

	p := filepath.Join(dir, info.Packs[0])
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[64] ^= 0xff // the first content byte
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
		t.Fatalf("Verify of a damaged pack = %v, want ErrCorrupt", err)
	}
}
