package mem

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
)

// TestWalkNames checks that the one-pass walk of plain names agrees with
// the full walk on every name it accepts, a missing last element among
// them, and that it refuses what needs the full walk: symlinks, ".",
// "..", "", trailing and doubled slashes, files used as directories,
// non-ASCII and over-long elements, a missing directory on the way. It
// runs once with small directories and once with the root and a holding
// enough entries to have hash indexes.
func TestWalkNames(t *testing.T) {
	for _, pad := range []int{0, indexMin} {
		t.Run(fmt.Sprintf("pad=%d", pad), func(t *testing.T) { testWalkNames(t, pad) })
	}
}

func testWalkNames(t *testing.T, pad int) {
	f := New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.MkdirAll("a/b/c", 0o755))
	must(f.WriteFile("a/b/c/f", []byte("x"), 0o644))
	must(f.WriteFile("a/é", []byte("x"), 0o644))
	must(f.WriteFile("a/"+strings.Repeat("n", 255), []byte("x"), 0o644))
	must(f.Symlink("b", "a/lb"))
	must(f.Symlink("c/f", "a/b/lf"))
	must(f.Symlink("/a", "top"))
	for i := range pad {
		must(f.WriteFile(fmt.Sprintf("pad%d", i), nil, 0o644))
		must(f.WriteFile(fmt.Sprintf("a/pad%d", i), nil, 0o644))
	}
	indexed := func() bool {
		return f.root.Load().state().dir.idx.Load() != nil
	}
	if indexed() {
		t.Fatal("root indexed by writes alone")
	}
	// The first lookups in the large directories build their indexes.
	if _, err := f.Stat("a/b"); err != nil {
		t.Fatal(err)
	}
	if indexed() != (pad > 0) {
		t.Fatalf("root indexed: %v, want %v", indexed(), pad > 0)
	}
	must(f.Check())
	root := f.root.Load()
	long := strings.Repeat("n", 255)
	for _, tc := range []struct {
		name string
		fast bool // walkNames answers it
	}{
		{"a", true}, {"a/b", true}, {"a/b/c/f", true}, {"a/" + long, true},
		{"a/b/lf", false}, // followed at the end
		{"a/lb/c", false}, {"top/b", false}, {"top", false},
		{".", false}, {"a/.", false}, {"a/..", false}, {"a/../a", false},
		{"", false}, {"a/", false}, {"a//b", false}, {"/a", false},
		{"a/b/c/f/g", false}, {"a/é", false}, {"a/" + long + "n", false},
		{"missing", true}, {"a/missing", true}, {"missing/x", false},
		{"missing/" + long + "n", false}, {"missing/../x", false},
		{strings.Repeat("a/", 2100) + "f", false},
	} {
		for _, follow := range []bool{true, false} {
			fw, ok := walkNames(root, tc.name, follow, f)
			want := tc.fast && !(tc.name == "top" && follow)
			if tc.name == "a/b/lf" || tc.name == "top" {
				want = !follow // a final symlink is the walk's own answer without follow
			}
			if ok != want {
				t.Errorf("walkNames(%.40q, follow=%v) answered %v, want %v", tc.name, follow, ok, want)
			}
			w, _, err := walkTo(root, tc.name, follow, false)
			if ok && (err != nil || w != fw) {
				t.Errorf("walkNames(%.40q, follow=%v) = %+v; walkTo gives %+v, %v", tc.name, follow, fw, w, err)
			}
		}
	}
}

// TestStatBesideClose stats one handle from several goroutines while it
// is closed: each Stat describes the file or fails with fs.ErrClosed, and
// the race detector sees no unguarded access.
func TestStatBesideClose(t *testing.T) {
	f := New()
	if err := f.WriteFile("x", []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		h, err := f.Open("x")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 20 {
					fi, err := h.Stat()
					switch {
					case errors.Is(err, fs.ErrClosed):
						return
					case err != nil:
						t.Error(err)
						return
					case fi.Size() != 3 || fi.Name() != "x":
						t.Errorf("Stat: %s, %d bytes", fi.Name(), fi.Size())
						return
					}
				}
			})
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if _, err := h.Stat(); !errors.Is(err, fs.ErrClosed) {
			t.Fatalf("Stat after Close: %v, want fs.ErrClosed", err)
		}
	}
}
