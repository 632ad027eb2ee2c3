package packfs_test

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestStoreWatch checks the changes a store reports: each change made
// alone at once, under the store's own names; a transaction's at its
// commit, all together; none of a transaction that fails.
func TestStoreWatch(t *testing.T) {
	s, err := packfs.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := s.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want ...layer.Change) {
		t.Helper()
		if got := w.Changes(); !slices.Equal(got, want) {
			t.Fatalf("changes %v, want %v", got, want)
		}
	}
	must(s.MkdirAll("d/e", 0o755))
	expect(layer.Change{Op: layer.OpCreate, Name: "d/e"})
	must(s.Symlink("d", "l"))
	expect(layer.Change{Op: layer.OpCreate, Name: "l"})
	must(s.WriteFile("l/f", []byte("x"), 0o644))
	expect(layer.Change{Op: layer.OpCreate | layer.OpWrite, Name: "d/f"})
	f, err := s.OpenFile("d/f", os.O_RDWR, 0)
	must(err)
	must(s.Rename("d", "d2"))
	expect(layer.Change{Op: layer.OpRename, Name: "d", NewName: "d2"})
	_, err = f.Write([]byte("yy"))
	must(err)
	must(f.Close())
	must(s.Chmod("d2/f", 0o600))
	expect(layer.Change{Op: layer.OpWrite, Name: "d2/f"}, layer.Change{Op: layer.OpChattr, Name: "d2/f"})
	// A large write, which the log's own pages may hold, is reported as
	// any other.
	f, err = s.OpenFile("d2/f", os.O_RDWR, 0)
	must(err)
	_, err = f.Write(make([]byte, 256<<10))
	must(err)
	must(f.Close())
	expect(layer.Change{Op: layer.OpWrite, Name: "d2/f"})

	errUndo := errors.New("undo")
	err = s.Update(func(tx *packfs.Tx) error {
		must(tx.Remove("d2/f"))
		expect() // not before the commit
		return errUndo
	})
	if err != errUndo {
		t.Fatalf("Update: %v", err)
	}
	expect()
	must(s.Update(func(tx *packfs.Tx) error {
		must(tx.Remove("d2/f"))
		must(tx.Mkdir("n", 0o755))
		expect()
		return nil
	}))
	expect(layer.Change{Op: layer.OpRemove, Name: "d2/f"}, layer.Change{Op: layer.OpCreate, Name: "n"})
}

// TestUnionWatch checks that a union reports its upper layer's changes,
// and that one over an upper layer that reports none says so.
func TestUnionWatch(t *testing.T) {
	lower := mem.New()
	if err := lower.WriteFile("low", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := packfs.New(mem.New(), lower.Snapshot())
	w, err := u.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := u.Remove("low"); err != nil {
		t.Fatal(err)
	}
	if got := w.Changes(); !slices.Contains(got, layer.Change{Op: layer.OpCreate, Name: "low"}) {
		t.Fatalf("the whiteout of a removal: %v", got)
	}
	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.Watch(nil); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Watch of a snapshot: %v", err)
	}
}
