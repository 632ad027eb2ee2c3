package conformance

import (
	"bytes"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/internal/testsize"
)

var (
	_ = register("TestFS", testTestFS)
	_ = register("Snapshot", testSnapshot)
)

// testTestFS populates each tree of Trees through the write interfaces and
// runs the read-only checks on it.
func testTestFS(t *testing.T, newFS NewFS, c *config) {
	runReadOnly(t, treesOf(c.quickTrees || testing.Testing() && testsize.Short(), c.wide), func(t *testing.T, tree Tree) fs.FS {
		fsys := newFS(t)
		must(t, "Populate", Populate(fsys, tree))
		return fsys
	})
}

// testSnapshot populates trees, takes a snapshot, goes on writing, and
// checks that the snapshot still passes the read-only checks and shows the
// old tree exactly.
func testSnapshot(t *testing.T, newFS NewFS, _ *config) {
	if _, ok := snapshotOf(newFS(t)); !ok {
		t.Skip("the backend offers no Snapshot method returning an fs.FS")
	}
	for _, tree := range Trees() {
		if tree.Name == "wide" || tree.Name == "sizes" {
			continue // costly, and no different for snapshots
		}
		t.Run(tree.Name, func(t *testing.T) {
			fsys := newFS(t)
			must(t, "Populate", Populate(fsys, tree))
			snapshot, _ := snapshotOf(fsys)
			snap := snapshot()
			first := snapshot()
			mutate(t, fsys, tree)
			checkTree(t, snap, tree)
			compareTree(t, first, tree)
			// A snapshot of the changed state differs from the tree and
			// passes fstest.TestFS.
			later := snapshot()
			if err := fstest.TestFS(hideFS(later, brokenLinks(t, later)), "added/new"); err != nil {
				t.Errorf("fstest.TestFS of a later snapshot: %v", err)
			}
			if _, err := fs.Stat(snap, "added"); errClass(err) != classNotExist {
				t.Errorf("the first snapshot sees a later directory: %v", err)
			}
		})
	}
}

// mutate changes every kind of entry of tree in fsys: it modifies, removes,
// renames and adds.
func mutate(t *testing.T, fsys interface {
	fs.FS
	Mkdir(string, fs.FileMode) error
	WriteFile(string, []byte, fs.FileMode) error
	Remove(string) error
	RemoveAll(string) error
	Rename(string, string) error
	Chmod(string, fs.FileMode) error
}, tree Tree) {
	t.Helper()
	entries := slices.Clone(tree.Entries)
	for i, e := range entries {
		switch {
		case e.Mode.IsRegular() && i%3 == 0:
			ok(t, "WriteFile", fsys.WriteFile(e.Path, append(bytes.Clone(e.Data), "changed"...), 0o644))
		case e.Mode.IsRegular() && i%3 == 1:
			ok(t, "Chmod", fsys.Chmod(e.Path, 0o600))
		}
	}
	for _, e := range slices.Backward(entries) {
		switch {
		case e.Mode.IsDir() && len(e.Path)%2 == 0:
			ok(t, "Rename", fsys.Rename(e.Path, e.Path+".renamed"))
		case !e.Mode.IsDir() && len(e.Path)%2 == 1:
			ok(t, "Remove", fsys.Remove(e.Path))
		}
	}
	must(t, "Mkdir", fsys.Mkdir("added", 0o755))
	must(t, "WriteFile", fsys.WriteFile("added/new", []byte("new"), 0o644))
	for _, e := range entries {
		if e.Mode.IsDir() && len(e.Path)%2 == 1 {
			ok(t, "RemoveAll", fsys.RemoveAll(e.Path))
			break
		}
	}
}

// brokenLinks returns the symlinks of fsys that do not resolve: dangling,
// looping or too long.
func brokenLinks(t *testing.T, fsys fs.FS) []string {
	var broken []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type() == fs.ModeSymlink {
			if _, err := fs.Stat(fsys, p); err != nil {
				broken = append(broken, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("walking: %v", err)
	}
	return broken
}
