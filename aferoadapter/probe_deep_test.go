package aferoadapter_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"github.com/spf13/afero"
)

// allocated returns the bytes fn allocates, the least of three runs.
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

// TestIssue14ProbeDecoratedDeepLinear: a decorated deep path (a "."
// element, a trailing slash, a ".." after a symlinked directory) through
// the adapter costs allocation linear in its depth, over mem and the
// union: the adapter walks it element by element.
func TestIssue14ProbeDecoratedDeepLinear(t *testing.T) {
	for name, mk := range map[string]func() afero.Fs{
		"mem":   func() afero.Fs { return aferoadapter.New(mem.New()) },
		"union": func() afero.Fs { return aferoadapter.New(packfs.New(mem.New(), mem.New().Snapshot())) },
	} {
		t.Run(name, func(t *testing.T) {
			cost := func(depth int) uint64 {
				fsys := mk()
				p := "/a" + strings.Repeat("/d", depth)
				if err := fsys.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := fsys.(afero.Linker).SymlinkIfPossible("d", "/a/l"); err != nil {
					t.Fatal(err)
				}
				dec := "/a/./l" + strings.Repeat("/d", depth-1) + "/../d/"
				return allocated(func() {
					for _, q := range []string{dec, p + "/", "/./a" + strings.Repeat("/d", depth)} {
						if _, err := fsys.Stat(q); err != nil {
							t.Fatal(err)
						}
					}
					if err := fsys.MkdirAll(dec+"x/y", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := fsys.Rename(dec+"x/y", dec+"x/z/"); err != nil {
						t.Fatal(err)
					}
					if err := fsys.RemoveAll(dec + "x/."); err == nil {
						t.Fatal("RemoveAll of a path ending in . succeeded")
					}
					if err := fsys.RemoveAll(dec + "x/"); err != nil {
						t.Fatal(err)
					}
				})
			}
			small, large := cost(250), cost(1000)
			if ratio := float64(large) / float64(small); ratio > 6 {
				t.Errorf("depth 250: %d bytes, depth 1000: %d bytes: %.1fx for 4x the depth", small, large, ratio)
			} else {
				t.Logf("depth 250: %d bytes, depth 1000: %d bytes: %.1fx", small, large, ratio)
			}
		})
	}
}

// TestIssue14ProbeDecoratedLinkAmplification: a decorated path through a
// link whose target is long and loops back (l -> "l/./././...") gives
// ELOOP and allocates a small multiple of the target, not a copy of the
// rest of the path per hop.
func TestIssue14ProbeDecoratedLinkAmplification(t *testing.T) {
	for name, mk := range map[string]func() afero.Fs{
		"mem":   func() afero.Fs { return aferoadapter.New(mem.New()) },
		"union": func() afero.Fs { return aferoadapter.New(packfs.New(mem.New(), mem.New().Snapshot())) },
	} {
		t.Run(name, func(t *testing.T) {
			fsys := mk()
			target := "l/" + strings.Repeat("./", 2000)
			if err := fsys.(afero.Linker).SymlinkIfPossible(target, "/l"); err != nil {
				t.Fatal(err)
			}
			n := allocated(func() {
				if _, err := fsys.Stat("/l/./x"); !errors.Is(err, syscall.ELOOP) {
					t.Errorf("Stat: %v, want ELOOP", err)
				}
			})
			if limit := uint64(64 * len(target) * 10); n > limit {
				t.Errorf("Stat allocated %d bytes for a target of %d bytes (limit %d)", n, len(target), limit)
			} else {
				t.Logf("Stat allocated %d bytes for a target of %d bytes", n, len(target))
			}
		})
	}
}

// TestIssue14ProbeDecoratedThroughMount: a decorated name resolves
// through a mount of the union, and ".." out of it, as a plain one does.
func TestIssue14ProbeDecoratedThroughMount(t *testing.T) {
	m := mem.New()
	if err := m.MkdirAll("x/y", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFile("x/y/f", []byte("F"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := packfs.New(mem.New(), mem.New().Snapshot())
	if err := u.MkdirAll("mnt/at", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := u.WriteFile("mnt/g", []byte("G"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := u.Mount("mnt/at", m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	fsys := aferoadapter.New(u)
	for name, want := range map[string]string{
		"/mnt/at/x/y/f": "F", "/mnt/./at/x/../x/y/f": "F", "/mnt/at/x/y/../../../g": "G",
		"mnt/at/./x/y//f": "F",
	} {
		got, err := afero.ReadFile(fsys, name)
		if err != nil || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := fsys.Stat("/mnt/at/x/y/f/"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("Stat with a trailing slash on a file: %v, want ENOTDIR", err)
	}
}

// TestIssue13ProbeDecoratedOverPack: the adapter over a pack alone (read
// only, resolved by LookupAt) walks decorated names, links and ".." as
// over mem.
func TestIssue13ProbeDecoratedOverPack(t *testing.T) {
	m := mem.New()
	for _, err := range []error{
		m.MkdirAll("d/e", 0o755), m.WriteFile("d/e/f", []byte("F"), 0o644),
		m.Symlink("d/e", "l"), m.Symlink("../d", "d/up"), m.Symlink("/d/e/f", "abs"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	p, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for _, fsys := range []afero.Fs{aferoadapter.New(p), aferoadapter.New(m)} {
		for _, name := range []string{"/d/./e/f", "/l/../e/f", "/d/up/up/e/./f", "//l//f", "/d/e/../../abs", "/l/../../abs"} {
			if got, err := afero.ReadFile(fsys, name); err != nil || string(got) != "F" {
				t.Errorf("%s: ReadFile(%s) = %q, %v", fsys.Name(), name, got, err)
			}
		}
		for name, want := range map[string]error{
			"/l/f/": syscall.ENOTDIR, "/d/e/f/..": syscall.ENOTDIR, "/abs/.": syscall.ENOTDIR, "/x/..": syscall.ENOENT,
		} {
			if _, err := fsys.Stat(name); !errors.Is(err, want) {
				t.Errorf("%s: Stat(%s) = %v, want %v", fsys.Name(), name, err, want)
			}
		}
	}
}
