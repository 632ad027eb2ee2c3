package packfs_test

import (
	"errors"
	"io/fs"
	"sync"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestIssue13UnionDirHandleFollows: a handle of a merged directory, opened
// and then renamed (itself or an ancestor) before its first ReadDir, lists
// the moved directory, as an open directory does on Linux; one whose
// directory was removed reads ENOENT, even when another is made at its
// name. (The union's counterpart of issue 13, item 6.)
func TestIssue13UnionDirHandleFollows(t *testing.T) {
	base := mem.New()
	for _, err := range []error{
		base.MkdirAll("p/d", 0o755), base.WriteFile("p/d/low", nil, 0o644),
		base.MkdirAll("r", 0o755), base.WriteFile("r/low", nil, 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	u := packfs.New(mem.New(), packOf(t, base.Snapshot()))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(u.WriteFile("p/d/up", nil, 0o644)) // d merges both layers
	open := func(name string) fs.ReadDirFile {
		t.Helper()
		f, err := u.Open(name)
		must(err)
		return f.(fs.ReadDirFile)
	}
	names := func(f fs.ReadDirFile) ([]string, error) {
		ents, err := f.ReadDir(-1)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out, err
	}
	d := open("p/d")
	must(u.Rename("p", "q")) // an ancestor
	got, err := names(d)
	if err != nil || len(got) != 2 || got[0] != "low" || got[1] != "up" {
		t.Errorf("ReadDir of a handle whose parent was renamed: %q, %v; want [low up]", got, err)
	}
	d.Close()

	r := open("r")
	must(u.RemoveAll("r"))
	must(u.Mkdir("r", 0o755))
	must(u.WriteFile("r/new", nil, 0o644))
	if got, err := names(r); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("ReadDir of a removed directory's handle: %q, %v; want ENOENT", got, err)
	}
	r.Close()
	var _ layer.FS = u
}

// TestDirHandleCloseBesideRename closes handles of merged directories
// while renames move them: Close and the rename's update of open
// handles once took two locks in opposite orders and hung both.
func TestDirHandleCloseBesideRename(t *testing.T) {
	base := mem.New()
	if err := base.MkdirAll("d/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	u := packfs.New(mem.New(), packOf(t, base.Snapshot()))
	if err := u.WriteFile("d/up", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2000 {
			if err := u.Rename("d", "e"); err != nil {
				t.Error(err)
				return
			}
			if err := u.Rename("e", "d"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, name := range []string{"d", "e", "d/sub", "e/sub"} {
					if f, err := u.Open(name); err == nil {
						f.Close()
					}
				}
			}
		})
	}
	wg.Wait()
}
