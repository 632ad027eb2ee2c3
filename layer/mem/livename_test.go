package mem_test

import (
	"io/fs"
	"os"
	"testing"

	"github.com/packfs/packfs/layer/mem"
)

type liveNamer interface{ LiveName() (string, bool) }

// TestLiveName: a handle tells the path that leads to its file: the name
// it was opened by when that was a plain path, the target's path when the
// open went through symlinks (with "." and ".." in their targets), and
// none once unlinked or for a snapshot's file.
func TestLiveName(t *testing.T) {
	fsys := mem.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fsys.MkdirAll("d/e", 0o755))
	must(fsys.WriteFile("d/e/f", []byte("x"), 0o644))
	must(fsys.Symlink("d/e", "ln"))
	must(fsys.Symlink("e/f", "d/lf"))
	must(fsys.Symlink("../d/./e/f", "d/up"))
	name := func(f fs.File) (string, bool) {
		t.Helper()
		n, ok := f.(liveNamer)
		if !ok {
			t.Fatalf("%T has no LiveName", f)
		}
		return n.LiveName()
	}
	for _, c := range []struct{ open, want string }{
		{"d/e/f", "d/e/f"},
		{"ln/f", "d/e/f"},
		{"d/lf", "d/e/f"},
		{"d/up", "d/e/f"},
	} {
		for _, flag := range []int{os.O_RDONLY, os.O_RDWR} {
			f, err := fsys.OpenFile(c.open, flag, 0)
			must(err)
			if got, ok := name(f); got != c.want || !ok {
				t.Errorf("open %q (flag %#x): LiveName = %q, %v; want %q", c.open, flag, got, ok, c.want)
			}
			f.Close()
		}
	}
	f, err := fsys.Open("ln/f")
	must(err)
	defer f.Close()
	must(fsys.Rename("d", "g"))
	if got, ok := name(f); got != "g/e/f" || !ok {
		t.Errorf("after a rename of its directory: %q, %v; want g/e/f", got, ok)
	}
	must(fsys.Remove("g/e/f"))
	if got, ok := name(f); ok {
		t.Errorf("unlinked: %q, %v; want none", got, ok)
	}
	must(fsys.WriteFile("top", nil, 0o644))
	sf, err := fsys.Snapshot().Open("top")
	must(err)
	defer sf.Close()
	if got, ok := name(sf); ok {
		t.Errorf("a snapshot's file: %q, %v; want none", got, ok)
	}
}
