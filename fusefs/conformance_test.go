package fusefs_test

import (
	"bytes"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/fusefs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// The conformance suite runs through the kernel: each file system it asks
// for is mounted, and the suite reaches it with system calls on the
// mountpoint (through package dirfs, a host directory as a layer), while
// its differential test applies the same calls with os to a tmpfs
// directory and compares.

// viaMount mounts fsys and returns the mountpoint as a layer.
func viaMount(t *testing.T, fsys fs.FS, opts *fusefs.Options) *dirfs.FS {
	t.Helper()
	dir, _ := mountT(t, fsys, opts)
	d, err := dirfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// suiteOpts are the suite's options over a mount. No test is skipped:
// what FUSE cannot express (atime, ctime) the suite does not compare;
// owners it does (WithOwners). Each random sequence mounts anew, so the quick run does 10, fewer
// than the suite's 200; PACKFS_LONG=1 runs its 2,000 (100 under -race,
// where the server runs several times slower).
var suiteOpts = append(quickSeeds(), conformance.WithOwners())

func quickSeeds() []conformance.Option {
	switch {
	case testsize.Short():
		// Every call is a round trip through the kernel: the quick run's
		// wide tree has 300 entries (still many listing batches).
		return []conformance.Option{conformance.WithSeeds(10), conformance.WithWideEntries(300)}
	case raceEnabled:
		return []conformance.Option{conformance.WithSeeds(100), conformance.WithQuickTrees()}
	}
	return nil
}

func TestConformanceStore(t *testing.T) {
	conformance.Run(t, func(t *testing.T) layer.FS {
		s, err := packfs.Open(filepath.Join(t.TempDir(), "store"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return viaMount(t, s, nil)
	}, suiteOpts...)
}

// remounting is a mounted union over packs that can push its state down
// into a new pack: Settle unmounts it, packs the upper layer onto the
// stack and mounts the new union at the same place, so that the suite's
// differential test exercises copy-up, whiteouts and merged listings
// through the kernel.
type remounting struct {
	layer.FS // the mountpoint, through dirfs
	t        *testing.T
	dir      string
	srv      *fusefs.Server
	d        *dirfs.FS
	upper    *mem.FS
	lowers   []fs.FS
}

var packsMade atomic.Int64

// Lchtimes sets a link's own times through the mountpoint.
func (r *remounting) Lchtimes(name string, atime, mtime time.Time) error {
	return layer.Lchtimes(r.FS, name, atime, mtime)
}

func (r *remounting) mount() error {
	srv, err := fusefs.Mount(r.dir, packfs.New(r.upper, r.lowers...), nil)
	if err != nil {
		return err
	}
	d, err := dirfs.New(r.dir)
	if err != nil {
		srv.Unmount()
		return err
	}
	r.srv, r.d, r.FS = srv, d, d
	return nil
}

func (r *remounting) unmount() error {
	r.d.Close()
	err := r.srv.Unmount()
	r.srv.Wait()
	return err
}

func (r *remounting) Settle() error {
	if err := r.unmount(); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, r.upper.Snapshot()); err != nil {
		return err
	}
	pack, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		return err
	}
	root, err := fs.Stat(r.upper, ".")
	if err != nil {
		return err
	}
	r.upper = mem.New()
	// The upper layer's root stands for the union's.
	if err := r.upper.Chmod(".", root.Mode()); err != nil {
		return err
	}
	if err := r.upper.Chtimes(".", time.Time{}, root.ModTime()); err != nil {
		return err
	}
	if uid, gid, ok := layer.OwnerOf(root); ok {
		id := func(v uint32) int {
			if v == layer.NoOwner {
				return -1
			}
			return int(v)
		}
		if err := r.upper.Lchown(".", id(uid), id(gid)); err != nil {
			return err
		}
	}
	r.lowers = append([]fs.FS{pack}, r.lowers...)
	packsMade.Add(1)
	return r.mount()
}

func TestConformanceUnionOverPacks(t *testing.T) {
	before := packsMade.Load()
	conformance.Run(t, func(t *testing.T) layer.FS {
		needFuse(t)
		r := &remounting{t: t, dir: t.TempDir(), upper: mem.New()}
		if err := r.mount(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := r.unmount(); err != nil {
				t.Errorf("unmount: %v", err)
			}
		})
		return r
	}, suiteOpts...)
	if packsMade.Load() == before && !testsize.Short() {
		t.Error("the differential test never settled into a pack")
	}
}

func TestConformancePack(t *testing.T) {
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		m := mem.New()
		if err := conformance.Populate(m, tree); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := packwriter.Write(&buf, m.Snapshot()); err != nil {
			t.Fatal(err)
		}
		pack, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		return viaMount(t, pack, nil)
	}, suiteOpts...)
}
