package packfs_test

import (
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// deepOps runs every operation of the union (or of mem) on a deep chain
// of directories name holding a file f, which the lower layer (if any)
// already holds: copy-up of the chain's attributes, of its file, renames,
// removals, links and listings at the bottom.
func deepOps(t *testing.T, fsys interface {
	layer.FS
	MkdirAll(string, fs.FileMode) error
	RemoveAll(string) error
}, name string) {
	t.Helper()
	when := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	steps := []func() error{
		func() error { return fsys.Chmod(name, 0o700) },
		func() error { return fsys.Chtimes(name+"/f", when, when) },
		func() error {
			f, err := fsys.OpenFile(name+"/f", os.O_RDWR, 0)
			if err != nil {
				return err
			}
			if _, err := f.Write([]byte("y")); err != nil {
				return err
			}
			return f.Close()
		},
		func() error { return fsys.Symlink("f", name+"/l") },
		func() error { _, err := fs.Stat(fsys, name+"/l"); return err },
		func() error { _, err := fs.ReadLink(fsys, name+"/l"); return err },
		func() error { _, err := fs.ReadDir(fsys, name); return err },
		func() error { _, err := fs.ReadFile(fsys, name+"/l"); return err },
		func() error { return fsys.Rename(name+"/f", name+"/g") },
		func() error { return fsys.Remove(name + "/g") },
		func() error { return fsys.Remove(name + "/l") },
		func() error { return fsys.Mkdir(name+"/n", 0o755) },
		func() error { return fsys.Rename(name, name+"x") },
		func() error { return fsys.RemoveAll(name + "x") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %.80v", i, err)
		}
	}
}

// TestIssue14ProbeDeepOpsLinear: every operation at the bottom of a deep
// chain, in mem, in a union over mem and in a union whose lower pack
// holds the chain (so that each operation copies the chain up), costs
// allocation linear in the depth: at 4x the depth at most 6x the bytes.
func TestIssue14ProbeDeepOpsLinear(t *testing.T) {
	lowers := map[int]fs.FS{}
	for _, depth := range []int{250, 1000} {
		m := mem.New()
		must(t, m.MkdirAll(deep(depth), 0o755))
		must(t, m.WriteFile(deep(depth)+"/f", []byte("x"), 0o644))
		lowers[depth] = packFS(t, m.Snapshot())
	}
	for _, c := range []struct {
		name string
		mk   func(depth int) interface {
			layer.FS
			MkdirAll(string, fs.FileMode) error
			RemoveAll(string) error
		}
	}{
		{"mem", func(depth int) interface {
			layer.FS
			MkdirAll(string, fs.FileMode) error
			RemoveAll(string) error
		} {
			m := mem.New()
			must(t, m.MkdirAll(deep(depth), 0o755))
			must(t, m.WriteFile(deep(depth)+"/f", []byte("x"), 0o644))
			return m
		}},
		{"union/upper", func(depth int) interface {
			layer.FS
			MkdirAll(string, fs.FileMode) error
			RemoveAll(string) error
		} {
			u := packfs.New(mem.New(), mem.New().Snapshot())
			must(t, u.MkdirAll(deep(depth), 0o755))
			must(t, u.WriteFile(deep(depth)+"/f", []byte("x"), 0o644))
			return u
		}},
		{"union/lower", func(depth int) interface {
			layer.FS
			MkdirAll(string, fs.FileMode) error
			RemoveAll(string) error
		} {
			return packfs.New(mem.New(), lowers[depth])
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cost := func(depth int) uint64 {
				var fsys interface {
					layer.FS
					MkdirAll(string, fs.FileMode) error
					RemoveAll(string) error
				}
				return allocated(func() {
					fsys = c.mk(depth)
					deepOps(t, fsys, deep(depth))
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
