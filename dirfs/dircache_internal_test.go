//go:build linux

package dirfs

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirCacheAnswers: after one stat beneath a/b, a/b and a are cached and
// the next stat is answered through a/b's descriptor; after a rename of a
// it is not.
func TestDirCacheAnswers(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, ok := f.impl.(*atImpl)
	if !ok {
		t.Skip("dirfs resolves through os.Root here: no openat2, so no descriptor cache")
	}
	if _, err := f.Stat("a/b/x"); err == nil {
		t.Fatal("a/b/x exists")
	}
	if a.dirs.disabled.Load() || !a.dirs.started {
		t.Skip("no inotify instance could be made (fs.inotify.max_user_instances reached?)")
	}
	for _, p := range []string{"a", "a/b"} {
		if _, ok := a.dirs.dirs.Load(p); !ok {
			t.Errorf("%s is not cached", p)
		}
	}
	var st unix.Stat_t
	if ok, err := a.dirs.lstat("a/b", ".", &st); !ok || err != nil {
		t.Fatalf("cached lstat = %v, %v", ok, err)
	}
	// A change of mode decides who may search the directory: it is
	// looked up anew.
	if err := os.Chmod(filepath.Join(dir, "a", "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.dirs.lstat("a/b", ".", &st); ok {
		t.Fatal("a cached lstat answered after its directory's mode changed")
	}
	if _, err := f.Stat("a/b/x"); err == nil {
		t.Fatal("a/b/x exists")
	}
	if ok, err := a.dirs.lstat("a/b", ".", &st); !ok || err != nil {
		t.Fatalf("cached lstat after the chmod = %v, %v", ok, err)
	}
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.dirs.lstat("a/b", ".", &st); ok {
		t.Fatal("a cached lstat answered after its directory moved")
	}
	if _, ok := a.dirs.dirs.Load("a/b"); ok {
		t.Error("a/b is still cached after a moved")
	}
}
