package packfs_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
)

// TestIssue17StoreLowersProbes: hostile calls on names of a lower, each
// checked against what Linux gives, and the tree after each failed one
// left as it was; the whole survives a checkpoint, a flatten and reopens.
func TestIssue17StoreLowersProbes(t *testing.T) {
	tmp := t.TempDir()
	lower := writePack(t, tmp, "lower.pack", lowerTree(t, map[string]string{
		"a":       "a",
		"d/x":     "x",
		"d/y":     "y",
		"d/s/z":   "z",
		"e/only":  "only",
		"ld":      "->d",
		"la":      "->a",
		"empty/":  "",
		"full/in": "in",
	}))
	dir := filepath.Join(tmp, "store")
	opts := &packfs.Options{Lowers: []fs.FS{lower}}
	s, err := packfs.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()

	fails := []struct {
		name string
		do   func() error
		want error
	}{
		{"rename a directory into itself", func() error { return s.Rename("d", "d/s/d") }, syscall.EINVAL},
		// os.Rename refuses any directory as the new name, itself too.
		{"rename a directory over a full one", func() error { return s.Rename("e", "full") }, fs.ErrExist},
		{"rename a file over a directory", func() error { return s.Rename("a", "empty") }, fs.ErrExist},
		{"rename a directory onto itself", func() error { return s.Rename("d", "d") }, fs.ErrExist},
		{"rename a directory over a file", func() error { return s.Rename("e", "a") }, syscall.ENOTDIR},
		{"remove a full directory", func() error { return s.Remove("d") }, syscall.ENOTEMPTY},
		{"remove through a file", func() error { return s.Remove("a/x") }, syscall.ENOTDIR},
		{"remove a trailing slash", func() error { return s.Remove("a/") }, fs.ErrInvalid},
		{"remove a rooted name", func() error { return s.Remove("/a") }, fs.ErrInvalid},
		{"remove a dotted name", func() error { return s.Remove("./a") }, fs.ErrInvalid},
		{"remove nothing", func() error { return s.Remove("") }, fs.ErrInvalid},
		{"remove the root", func() error { return s.Remove(".") }, syscall.EINVAL},
		{"mkdir over a lower file", func() error { return s.Mkdir("a", 0o755) }, fs.ErrExist},
		{"mkdir over a lower symlink", func() error { return s.Mkdir("ld", 0o755) }, fs.ErrExist},
	}
	for _, f := range fails {
		before := dump(t, s, true)
		if err := f.do(); !errors.Is(err, f.want) {
			t.Errorf("%s: %v, want %v", f.name, err, f.want)
		}
		if after := dump(t, s, true); after != before {
			t.Errorf("%s changed the tree:\n%s\nwas:\n%s", f.name, after, before)
		}
	}

	before := dump(t, s, true)
	mustDo(t, s.Rename("a", "a"))   // itself
	mustDo(t, s.Rename("ld", "ld")) // a symlink itself
	if after := dump(t, s, true); after != before {
		t.Errorf("self-renames changed the tree:\n%s\nwas:\n%s", after, before)
	}

	// Through a symlink of the lower: the entry it leads to.
	mustDo(t, s.Remove("ld/x"))
	if _, err := s.Lstat("d/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("d/x after removing ld/x: %v", err)
	}
	mustDo(t, s.Rename("ld/y", "y"))
	mustDo(t, s.RemoveAll("ld")) // the link alone
	if _, err := s.Stat("d/s/z"); err != nil {
		t.Errorf("RemoveAll of a symlink reached its target: %v", err)
	}
	// A lower directory emptied by whiteouts is empty: rmdir works, and a
	// directory made again there is opaque.
	mustDo(t, s.Remove("d/s/z"))
	mustDo(t, s.Remove("d/s"))
	mustDo(t, s.Remove("d"))
	mustDo(t, s.Mkdir("d", 0o700))
	if ents, err := s.ReadDir("d"); err != nil || len(ents) != 0 {
		t.Errorf("d made again: %v, %v; want empty", ents, err)
	}
	// A lower file renamed over a lower file in an emptied directory,
	// and a symlink onto its target.
	mustDo(t, s.Remove("full/in"))
	mustDo(t, s.Rename("e/only", "full/in"))
	if got, err := s.ReadFile("full/in"); err != nil || string(got) != "only" {
		t.Errorf("full/in: %q, %v", got, err)
	}
	mustDo(t, s.Rename("la", "e/a"))
	// A name removed and made again as another type.
	mustDo(t, s.Remove("a"))
	mustDo(t, s.Mkdir("a", 0o755))
	mustDo(t, s.RemoveAll("empty"))
	mustDo(t, s.WriteFile("empty", []byte("now a file"), 0o644))
	want := dump(t, s, true)

	for _, flatten := range []bool{false, true} {
		if flatten {
			mustDo(t, s.Flatten())
		} else {
			mustDo(t, s.Checkpoint())
		}
		if got := dump(t, s, true); got != want {
			t.Fatalf("after a checkpoint:\n%s\nwant:\n%s", got, want)
		}
		mustDo(t, s.Close())
		if s, err = packfs.Open(dir, opts); err != nil {
			t.Fatal(err)
		}
		if got := dump(t, s, true); got != want {
			t.Fatalf("reopened:\n%s\nwant:\n%s", got, want)
		}
		// A reader opened beside the writer sees the same.
		r, err := packfs.Open(dir, &packfs.Options{ReadOnly: true, Lowers: opts.Lowers})
		if err != nil {
			t.Fatal(err)
		}
		if got := dump(t, r, true); got != want {
			t.Errorf("read-only beside the writer:\n%s\nwant:\n%s", got, want)
		}
		r.Close()
	}
}

// TestIssue17FlattenOverLowersHides: a flatten over lowers merges the
// store's packs into one that hides what they hid: a directory made over
// a file of an older pack, itself over a directory of the lower, stays
// without the lower's contents, and so does one made over a whiteout.
func TestIssue17FlattenOverLowersHides(t *testing.T) {
	tmp := t.TempDir()
	lower := writePack(t, tmp, "lower.pack", lowerTree(t, map[string]string{
		"x/a": "a", "y/b": "b", "z/c": "c",
	}))
	dir := filepath.Join(tmp, "store")
	opts := &packfs.Options{Lowers: []fs.FS{lower}, CheckpointBytes: -1}
	s, err := packfs.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	mustDo(t, s.RemoveAll("x"))
	mustDo(t, s.WriteFile("x", []byte("file"), 0o644))
	mustDo(t, s.RemoveAll("y"))
	mustDo(t, s.Checkpoint()) // a pack with the file x and a whiteout y
	mustDo(t, s.Remove("x"))
	mustDo(t, s.Mkdir("x", 0o755))
	mustDo(t, s.Mkdir("y", 0o755))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.WriteFile("z/new", []byte("new"), 0o644))
	want := dump(t, s, false)
	for _, hidden := range []string{"x/a", "y/b"} {
		if strings.Contains(want, hidden) {
			t.Fatalf("%s shows before the flatten:\n%s", hidden, want)
		}
	}
	mustDo(t, s.Flatten())
	if got := dump(t, s, false); got != want {
		t.Fatalf("after the flatten:\n%s\nwant:\n%s", got, want)
	}
	mustDo(t, s.Close())
	if s, err = packfs.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, s, false); got != want {
		t.Fatalf("reopened after the flatten:\n%s\nwant:\n%s", got, want)
	}
}
