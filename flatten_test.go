package packfs_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// packOf writes fsys into a pack held in memory, opens and verifies it.
func packOf(t *testing.T, fsys fs.FS) *packreader.Reader {
	t.Helper()
	r, err := packBytes(fsys)
	if err == nil {
		err = r.Verify()
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// packBytes writes fsys into a pack held in memory and opens it.
func packBytes(fsys fs.FS) (*packreader.Reader, error) {
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, fsys); err != nil {
		return nil, err
	}
	return packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
}

// treeOf describes every entry of fsys, the root's attributes included,
// by path: type and permissions, size, modification time, content or
// symlink target.
func treeOf(t *testing.T, fsys fs.FS) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := fs.Lstat(fsys, p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %s", fi.Mode(), fi.ModTime().UTC().Format(time.RFC3339Nano))
		switch fi.Mode().Type() {
		case 0:
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %d %q", fi.Size(), data)
		case fs.ModeSymlink:
			target, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		tree[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// markers returns the whiteouts and opaque directories of a pack.
func markers(t *testing.T, r *packreader.Reader) (whiteouts, opaque []string) {
	t.Helper()
	var walk func(dir string)
	walk = func(dir string) {
		if r.Opaque(dir) {
			opaque = append(opaque, dir)
		}
		list, err := r.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list {
			p := e.Name()
			if dir != "." {
				p = dir + "/" + p
			}
			switch {
			case e.Name() == layer.OpaqueName:
				// The record of an opaque directory: Opaque tells.
			case layer.IsWhiteout(e.Type()):
				whiteouts = append(whiteouts, p)
			case e.IsDir():
				walk(p)
			}
		}
	}
	walk(".")
	slices.Sort(whiteouts)
	slices.Sort(opaque)
	return whiteouts, opaque
}

// TestFlattenCompaction packs a union two ways. Packing the union itself
// (its snapshot) is a flatten: one pack of the tree the union shows, with
// no whiteout and no opaque directory, that stands alone. Packing its
// upper layer is a delta: the whiteouts and opaque markers are kept, so
// that the delta pack over the same lowers shows the same tree.
func TestFlattenCompaction(t *testing.T) {
	base := mem.New()
	must(t, base.MkdirAll("etc/conf.d", 0o755))
	must(t, base.MkdirAll("usr/lib", 0o755))
	must(t, base.MkdirAll("var/cache", 0o700))
	must(t, base.MkdirAll("usr/share/doc", 0o755))
	for _, name := range []string{"usr/share/doc/readme", "etc/hosts", "etc/conf.d/a", "etc/conf.d/b", "usr/lib/x.so", "var/cache/1", "var/cache/2"} {
		must(t, base.WriteFile(name, []byte("base "+name), 0o644))
	}
	must(t, base.Symlink("lib", "usr/lib64"))
	lower := packOf(t, base.Snapshot())

	upper := mem.New()
	u := packfs.New(upper, lower)
	must(t, u.Remove("etc/hosts"))                                                          // a whiteout
	must(t, u.RemoveAll("var/cache"))                                                       // a whited-out directory
	must(t, u.Mkdir("var/cache", 0o755))                                                    // made again: opaque
	must(t, u.WriteFile("var/cache/3", []byte("new"), 0o600))                               // inside it
	must(t, u.RemoveAll("etc/conf.d"))                                                      // whiteout of a directory
	must(t, u.WriteFile("usr/lib/x.so", []byte("patched"), 0o755))                          // a copy-up
	must(t, u.Chtimes("usr/lib", time.Time{}, time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC))) // a directory's copy-up
	must(t, u.Rename("usr/lib64", "usr/lib32"))                                             // a lower symlink moved
	must(t, u.Symlink("../usr/lib/x.so", "etc/x"))
	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := treeOf(t, snap)
	if _, ok := want["usr/share/doc/readme"]; !ok {
		t.Fatal("the union lost usr/share/doc/readme")
	}
	for _, gone := range []string{"etc/hosts", "etc/conf.d", "var/cache/1", "usr/lib64"} {
		if _, ok := want[gone]; ok {
			t.Fatalf("the union still shows %s", gone)
		}
	}

	t.Run("flatten", func(t *testing.T) {
		flat := packOf(t, snap)
		whiteouts, opaque := markers(t, flat)
		if len(whiteouts) > 0 || len(opaque) > 0 {
			t.Errorf("the flat pack has whiteouts %q and opaque directories %q", whiteouts, opaque)
		}
		stats, err := flat.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if stats.Whiteouts != 0 {
			t.Errorf("Stats().Whiteouts = %d, want 0", stats.Whiteouts)
		}
		if diff := cmp.Diff(want, treeOf(t, flat)); diff != "" {
			t.Errorf("the flat pack's tree differs from the union's (-union +pack):\n%s", diff)
		}
	})

	t.Run("delta", func(t *testing.T) {
		delta := packOf(t, upper.Snapshot())
		whiteouts, opaque := markers(t, delta)
		wantWhiteouts := []string{"etc/conf.d", "etc/hosts", "usr/lib64"}
		if !slices.Equal(whiteouts, wantWhiteouts) {
			t.Errorf("the delta pack's whiteouts: %q, want %q", whiteouts, wantWhiteouts)
		}
		if !slices.Equal(opaque, []string{"var/cache"}) {
			t.Errorf("the delta pack's opaque directories: %q, want [var/cache]", opaque)
		}
		// The delta over the same lower shows the union's tree; the
		// root's attributes are the upper layer's, carried up as a
		// union's Settle does.
		root, err := upper.Stat(".")
		if err != nil {
			t.Fatal(err)
		}
		top := mem.New()
		must(t, top.Chmod(".", root.Mode()))
		must(t, top.Chtimes(".", time.Time{}, root.ModTime()))
		stacked := packfs.New(top, delta, lower)
		if diff := cmp.Diff(want, treeOf(t, stacked)); diff != "" {
			t.Errorf("delta over lower differs from the union (-union +stack):\n%s", diff)
		}
		// Without the lower, the delta alone is not the tree: it holds
		// only what changed.
		if _, err := fs.Stat(delta, "usr/share/doc/readme"); err == nil {
			t.Error("the delta pack holds a file that never changed")
		}
	})
}
