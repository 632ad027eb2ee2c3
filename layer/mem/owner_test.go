package mem

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"testing"

	"github.com/packfs/packfs/treap"
)

// TestOwnerWrap takes snapshots across the wrap of the index owners: the
// snapshots taken before it keep their listings when the owner that made
// their nodes comes back and edits in place.
func TestOwnerWrap(t *testing.T) {
	f := New()
	if err := f.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	var snaps []*Snapshot
	var want [][]string
	for round := range 6 {
		if round == 1 {
			// What the nodes of round 0, owner 1, see after 2^32 snapshots.
			f.owner = treap.MaxOwner - 1
		}
		for i := range 50 {
			name := fmt.Sprintf("d/%d-%02d", round, i)
			if err := f.WriteFile(name, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 && round > 0 {
				if err := f.Remove(fmt.Sprintf("d/%d-%02d", round-1, i)); err != nil {
					t.Fatal(err)
				}
			}
			if i%3 == 1 && round == 3 {
				// Round 3 runs with owner 1 again: edits next to the nodes
				// owner 1 made in round 0, which snapshot 0 holds.
				if err := f.Remove(fmt.Sprintf("d/0-%02d", i)); err != nil {
					t.Fatal(err)
				}
				if err := f.WriteFile(fmt.Sprintf("d/0-%02d+", i), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		s := f.Snapshot()
		snaps = append(snaps, s)
		want = append(want, names(t, s))
	}
	if f.owner > 5 {
		t.Fatalf("owner %d: the test did not wrap", f.owner)
	}
	for i, s := range snaps {
		if got := names(t, s); fmt.Sprint(got) != fmt.Sprint(want[i]) {
			t.Errorf("snapshot %d changed after the owners wrapped: %d names, had %d", i, len(got), len(want[i]))
		}
	}
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, s *Snapshot) []string {
	t.Helper()
	es, err := fs.ReadDir(s, "d")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Name()
	}
	return out
}

// TestOwnerWrapRemovedDirectory writes, after the owners wrap, through a
// handle on a file whose directory was removed: the write must not reach
// the removed directory's index, which an old snapshot still holds and
// which the wrap's disown, walking the live tree only, did not clear.
func TestOwnerWrapRemovedDirectory(t *testing.T) {
	f := New()
	if err := f.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "x", "y", "z"} {
		if err := f.WriteFile("d/"+n, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := f.OpenFile("d/x", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	s0 := f.Snapshot()
	if err := f.RemoveAll("d"); err != nil {
		t.Fatal(err)
	}
	f.owner = treap.MaxOwner
	f.Snapshot() // the owners wrap: owner 1, which made d's index, is back
	if _, err := h.Write([]byte("NEW")); err != nil {
		t.Fatal(err)
	}
	if b, err := s0.ReadFile("d/x"); err != nil || string(b) != "old" {
		t.Errorf("snapshot reads %q, %v after a write through a removed directory; want \"old\"", b, err)
	}
	if _, err := h.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(h); err != nil || string(b) != "NEW" {
		t.Errorf("handle reads %q, %v; want \"NEW\"", b, err)
	}
}
