package dirfs_test

import (
	"io/fs"
	"os"
	"testing"

	"github.com/packfs/packfs/internal/testsize"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/layer"
)

// tempDir returns a fresh directory on tmpfs where there is one (the suite
// creates and removes many), else in the default temp dir.
func tempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("/dev/shm", "dirfs-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newFS(t testing.TB, opts ...dirfs.Option) *dirfs.FS {
	f, err := dirfs.New(tempDir(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// modes are the two ways of resolving names; both run every test.
var modes = []struct {
	name string
	opts []dirfs.Option
}{
	{"openat2", nil},
	{"osroot", []dirfs.Option{dirfs.ForceRoot()}},
}

func TestConformance(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			opts := []conformance.Option{conformance.WithOwners()}
			if raceEnabled {
				// The race detector slows single-goroutine checking tenfold:
				// fstest.TestFS alone took six minutes. The plain run checks
				// it, and the full differential test; under -race the point
				// is the concurrent tests, which run in full.
				opts = append(opts,
					conformance.Skip("TestFS", "run by the plain (non-race) test run; minutes under -race"),
					conformance.WithSeeds(150))
			}
			if m.name == "osroot" {
				opts = append(opts, conformance.Skip("TestFS",
					"the fallback's reads are checked on every tree by TestConformanceReadOnly/osroot; writing the trees again adds only minutes"))
			}
			if probe := newFS(t, m.opts...); probe.ViaRoot() {
				opts = append(opts,
					conformance.Skip("SymlinkChain", "os.Root follows at most 8 symlinks (Linux: 40)"))
				if m.name == "openat2" {
					t.Log("openat2 is unavailable here: this run uses os.Root too")
				}
			}
			if testsize.Short() {
				// Every call is a system call: the quick run's wide tree
				// has 500 entries (the full run's, 20,000).
				opts = append(opts, conformance.WithWideEntries(500))
			}
			conformance.Run(t, func(t *testing.T) layer.FS { return newFS(t, m.opts...) }, opts...)
		})
	}
}

func TestConformanceReadOnly(t *testing.T) {
	if raceEnabled {
		// These are fstest.TestFS and read checks from one goroutine, which
		// the race detector only slows (three minutes); the plain run does
		// them.
		t.Skip("single-goroutine read checks: run by the plain (non-race) test run")
	}
	var wide []conformance.Option
	if testsize.Short() {
		wide = append(wide, conformance.WithWideEntries(500))
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
				dir := tempDir(t)
				w, err := dirfs.New(dir, m.opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				if err := conformance.Populate(w, tree); err != nil {
					t.Fatal(err)
				}
				r, err := dirfs.New(dir, append(m.opts, dirfs.ReadOnly())...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { r.Close() })
				return r
			}, wide...)
		})
	}
}
