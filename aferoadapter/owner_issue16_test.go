package aferoadapter_test

import (
	"errors"
	"io/fs"
	"testing"
	"time"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestIssue16AferoOwners: Chown follows a symlink and Lchown does not,
// through OS-style paths resolved as the kernel does, and the owners
// show through FileInfo.Sys; Lchtimes sets the link's own time.
func TestIssue16AferoOwners(t *testing.T) {
	m := mem.New()
	a := aferoadapter.New(m).(*aferoadapter.Fs)
	if err := a.Mkdir("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := layer.WriteFile(m, "d/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.SymlinkIfPossible("f", "/d/l"); err != nil {
		t.Fatal(err)
	}
	owner := func(name string) (uint32, uint32) {
		t.Helper()
		fi, _, err := a.LstatIfPossible(name)
		if err != nil {
			t.Fatal(err)
		}
		uid, gid, _ := layer.OwnerOf(fi)
		return uid, gid
	}
	if err := a.Chown("/d/../d/l", 5, 6); err != nil {
		t.Fatal(err)
	}
	if err := a.Lchown("//d/./l", 7, -1); err != nil {
		t.Fatal(err)
	}
	if u, g := owner("/d/f"); u != 5 || g != 6 {
		t.Errorf("f: %d:%d, want 5:6", u, g)
	}
	if u, g := owner("/d/l"); u != 7 || g != layer.NoOwner {
		t.Errorf("l: %d:%d, want 7:none", u, g)
	}
	t1 := time.Unix(1000, 0)
	if err := a.Lchtimes("/d/l", t1, t1); err != nil {
		t.Fatal(err)
	}
	if fi, _, _ := a.LstatIfPossible("/d/l"); !fi.ModTime().Equal(t1) {
		t.Errorf("Lchtimes: the link's mtime is %v", fi.ModTime())
	}
	if fi, _ := a.Stat("/d/f"); fi.ModTime().Equal(t1) {
		t.Errorf("Lchtimes reached the target")
	}
	for _, name := range []string{"/d/l/", "", "/d/missing"} {
		err := a.Lchown(name, 1, 1)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "lchown" {
			t.Errorf("Lchown(%q) = %v, want a *PathError of lchown", name, err)
		}
	}
}
