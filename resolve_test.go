package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// allocated returns the bytes fn allocates, the least of three runs so
// that another goroutine's allocations count as little as possible.
func allocated(fn func()) uint64 {
	least := ^uint64(0)
	var before, after runtime.MemStats
	for range 3 {
		runtime.GC()
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// packFS writes fsys as a pack and opens it.
func packFS(t testing.TB, fsys fs.FS) *packreader.Reader {
	t.Helper()
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, fsys); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// deep is a path of depth directories below a/b.
func deep(depth int) string { return "a/b" + strings.Repeat("/d", depth) }

// TestIssue14DeepPathLinear: MkdirAll, Stat, Lstat and WriteFile of a
// path through the union (mem over a pack holding its first elements)
// cost work linear in the path's length: at 4x the depth, at most about
// 4x the bytes allocated (the walk was cubic: 64x).
func TestIssue14DeepPathLinear(t *testing.T) {
	m := mem.New()
	must(t, m.MkdirAll("a/b", 0o755))
	lower := packFS(t, m.Snapshot())
	cost := func(depth int) uint64 {
		return allocated(func() {
			u := packfs.New(mem.New(), lower)
			name := deep(depth)
			if err := u.MkdirAll(name, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := u.WriteFile(name+"/f", []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{name, name + "/f"} {
				if _, err := u.Stat(p); err != nil {
					t.Fatal(err)
				}
				if _, err := u.Lstat(p); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	small, large := cost(100), cost(400)
	if ratio := float64(large) / float64(small); ratio > 6 {
		t.Errorf("depth 100: %d bytes, depth 400: %d bytes: %.1fx for 4x the depth", small, large, ratio)
	}
}

// TestIssue14PathMaxUnion: the union refuses paths of PATH_MAX bytes or
// more with ENAMETOOLONG, as Linux does; MkdirAll of a longer path fails
// whole, making nothing.
func TestIssue14PathMaxUnion(t *testing.T) {
	m := mem.New()
	must(t, m.MkdirAll("a/b", 0o755))
	u := packfs.New(mem.New(), packFS(t, m.Snapshot()))
	long := deep(5000) // 10 KB
	if err := u.MkdirAll(long, 0o755); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("MkdirAll of %d bytes: %v", len(long), err)
	}
	wantMissing(t, u, "a/b/d")
	if err := u.MkdirAll("a/b/d/"+strings.Repeat("n", 256)+"/e", 0o755); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("MkdirAll with a name of 256 bytes: %v", err)
	}
	wantMissing(t, u, "a/b/d")
	n := 4096 // the shortest valid path of PATH_MAX bytes or more
	if long[n-1] == '/' {
		n++
	}
	for _, p := range []string{long[:n], long} {
		for _, op := range []func(string) error{
			func(p string) error { _, err := u.Stat(p); return err },
			func(p string) error { _, err := u.Lstat(p); return err },
			func(p string) error { _, err := u.Open(p); return err },
			func(p string) error { return u.Mkdir(p, 0o755) },
			func(p string) error { return u.WriteFile(p, nil, 0o644) },
			func(p string) error { return u.Rename("a", p) },
		} {
			if err := op(p); !errors.Is(err, syscall.ENAMETOOLONG) {
				t.Errorf("%d bytes: %.60v, want ENAMETOOLONG", len(p), err)
			}
		}
	}
	if _, err := u.Stat(long[:n-2]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%d bytes: %.60v, want ErrNotExist", n-2, err)
	}
}

// TestIssue14SymlinkAmplification: resolving the hostile links gives
// ELOOP and allocates at most a small multiple of the pack's size (each
// distinct target is read once), through mem, the pack and the union of
// mem over the pack. Splicing each target into the rest of the path cost
// 40 copies of an ever longer path.
func TestIssue14SymlinkAmplification(t *testing.T) {
	for _, tc := range []struct {
		name string
		mem  func(*mem.FS)
		stat []string
	}{
		{"self", func(m *mem.FS) { must(t, m.Symlink("l/"+strings.Repeat("./", 2046), "l")) }, []string{"l", "l/x"}},
		{"ring", func(m *mem.FS) {
			// 64 links, each through 4 KB of "./" to the next.
			for i := range 64 {
				must(t, m.Symlink(strings.Repeat("./", 2040)+ring(i+1), ring(i)))
			}
		}, []string{ring(0), ring(0) + "/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mem.New()
			tc.mem(m)
			var buf bytes.Buffer
			must(t, packwriter.Write(&buf, m.Snapshot()))
			size := uint64(buf.Len())
			pack, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			must(t, err)
			for _, layer := range []struct {
				name string
				fsys fs.FS
			}{{"mem", m}, {"pack", pack}, {"union", packfs.New(mem.New(), pack)}} {
				for _, name := range tc.stat {
					var err error
					n := allocated(func() { _, err = fs.Stat(layer.fsys, name) })
					if !errors.Is(err, syscall.ELOOP) {
						t.Errorf("%s: Stat(%s) = %v, want ELOOP", layer.name, name, err)
					}
					// Beyond the targets, each of the 40 hops costs the
					// union a node: a fixed 64 KB.
					if n > 3*size+64<<10 {
						t.Errorf("%s: Stat(%s) allocated %d bytes for a pack of %d", layer.name, name, n, size)
					}
				}
			}
		})
	}
}

func ring(i int) string { return fmt.Sprintf("s%02d", i%64) }

// TestIssue14SymlinkTooLong: a pack's symlink target of PATH_MAX bytes or
// more, which Linux could not hold, fails with ENAMETOOLONG before it is
// copied, in the pack and in a union over it.
func TestIssue14SymlinkTooLong(t *testing.T) {
	src := fstest.MapFS{"l": {Mode: fs.ModeSymlink | 0o777, Data: []byte("l/" + strings.Repeat("./", 1<<19))}} // 1 MB
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, src))
	pack, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	must(t, err)
	for _, layer := range []struct {
		name string
		fsys fs.FS
	}{{"pack", pack}, {"union", packfs.New(mem.New(), pack)}} {
		var err error
		n := allocated(func() { _, err = fs.Stat(layer.fsys, "l") })
		if !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Errorf("%s: Stat(l) = %v, want ENAMETOOLONG", layer.name, err)
		}
		if n > 64<<10 {
			t.Errorf("%s: Stat(l) allocated %d bytes", layer.name, n)
		}
	}
}

// A union stacked over another's snapshot resolves deep paths in linear
// time too: the lower union offers LookupAt.
func TestStackedUnionDeepPathLinear(t *testing.T) {
	m := mem.New()
	must(t, m.MkdirAll("a/b", 0o755))
	lower := packFS(t, m.Snapshot())
	cost := func(depth int) uint64 {
		inner := packfs.New(mem.New(), lower)
		name := deep(depth)
		must(t, inner.MkdirAll(name, 0o755))
		must(t, inner.WriteFile(name+"/f", []byte("x"), 0o644))
		snap, err := inner.Snapshot()
		must(t, err)
		return allocated(func() {
			u := packfs.New(mem.New(), snap)
			if _, err := u.Lstat(name); err != nil {
				t.Fatal(err)
			}
			if err := u.WriteFile(name+"/f", []byte("y"), 0o644); err != nil {
				t.Fatal(err)
			}
			wantContent(t, u, name+"/f", "y")
			wantContent(t, snap, name+"/f", "x")
		})
	}
	small, large := cost(100), cost(400)
	if ratio := float64(large) / float64(small); ratio > 6 {
		t.Errorf("depth 100: %d bytes, depth 400: %d bytes: %.1fx for 4x the depth", small, large, ratio)
	}
}
