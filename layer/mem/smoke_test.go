package mem_test

import (
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/layer/mem"
)

func TestSmoke(t *testing.T) {
	f := mem.New()
	if err := f.MkdirAll("a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile("a/b/c/x.txt", []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile("top", []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("a", "lnk"); err != nil {
		t.Fatal(err)
	}
	s := f.Snapshot()
	if err := f.WriteFile("a/b/c/x.txt", []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Rename("a/b", "a/z"); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(s, "a/b/c/x.txt", "top"); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(f, "a/z/c/x.txt", "top"); err != nil {
		t.Fatal(err)
	}
	b, _ := s.ReadFile("a/b/c/x.txt")
	if string(b) != "hello" {
		t.Fatal(string(b))
	}
	big := make([]byte, 3<<20+17)
	for i := range big {
		big[i] = byte(i * 7)
	}
	w, err := f.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(big); i += 1000 {
		w.Write(big[i:min(i+1000, len(big))])
	}
	w.Close()
	got, _ := f.ReadFile("big")
	if string(got) != string(big) {
		t.Fatal("big mismatch")
	}
}
