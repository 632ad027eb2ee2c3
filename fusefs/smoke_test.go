package fusefs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/layer/mem"
)

// TestSmoke writes, reads, renames and lists through a mount.
func TestSmoke(t *testing.T) {
	m := mem.New()
	dir, _ := mountT(t, m, nil)
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "a"))
	if err != nil || string(b) != "hello" {
		t.Fatalf("%q %v", b, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "d/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "d/e/b")); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(filepath.Join(dir, "d/e"))
	if err != nil || len(es) != 1 {
		t.Fatal(es, err)
	}
	b, err = m.ReadFile("d/e/b")
	if err != nil || string(b) != "hello" {
		t.Fatalf("%q %v", b, err)
	}
}
