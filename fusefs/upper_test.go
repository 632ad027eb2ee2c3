package fusefs_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// rebasingMount is a mounted store over read-only lowers, as
// packfs mount --upper serves one. Settle unmounts it and then moves
// the store's whole state into its lowers (a new store over a pack of
// its tree, or over its own packs stacked on its lowers), or checkpoints
// and reopens it; the first Settle of a sequence moves it. The suite's differential test then removes,
// renames and replaces names of the lowers through the kernel.
type rebasingMount struct {
	layer.FS // the mountpoint, through dirfs
	tmp      string
	mnt      string
	dir      string // the store's
	lowers   []fs.FS
	s        *packfs.Store
	srv      *fusefs.Server
	d        *dirfs.FS
	n        int
}

var storeRebases atomic.Int64

// Lchtimes sets a link's own times through the mountpoint.
func (r *rebasingMount) Lchtimes(name string, atime, mtime time.Time) error {
	return layer.Lchtimes(r.FS, name, atime, mtime)
}

// open opens the store and mounts it; root, if not nil, is the mode and
// mtime its root takes first (before the mount, whose kernel caches the
// root's attributes).
func (r *rebasingMount) open(root fs.FileInfo) error {
	s, err := packfs.Open(r.dir, &packfs.Options{Sync: packfs.SyncNone, Lowers: r.lowers})
	if err != nil {
		return err
	}
	r.s = s
	if root != nil {
		if err := s.Chmod(".", root.Mode()); err != nil {
			return err
		}
		if err := s.Chtimes(".", root.ModTime(), root.ModTime()); err != nil {
			return err
		}
	}
	srv, err := fusefs.Mount(r.mnt, s, nil)
	if err != nil {
		return err
	}
	d, err := dirfs.New(r.mnt)
	if err != nil {
		srv.Unmount()
		return err
	}
	r.srv, r.d, r.FS = srv, d, d
	return nil
}

func (r *rebasingMount) close() error {
	r.d.Close()
	err := r.srv.Unmount()
	r.srv.Wait()
	if cerr := r.s.Close(); err == nil {
		err = cerr
	}
	return err
}

// packAt opens a pack held in memory.
func packAt(data []byte) (*packreader.Reader, error) {
	return packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
}

func (r *rebasingMount) Settle() error {
	r.n++
	root, err := r.s.Stat(".")
	if err != nil {
		return err
	}
	switch r.n % 3 {
	case 0: // a checkpoint, then a reopen
		if err := r.s.Checkpoint(); err != nil {
			return err
		}
		if err := r.close(); err != nil {
			return err
		}
		return r.open(nil)
	case 1: // the whole tree as one pack
		snap, err := r.s.Snapshot()
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		err = packwriter.Write(&buf, snap)
		if cerr := r.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		p, err := packAt(buf.Bytes())
		if err != nil {
			return err
		}
		r.lowers = []fs.FS{p}
	default: // the store's packs, whiteouts and all, over its lowers
		if err := r.s.Checkpoint(); err != nil {
			return err
		}
		if err := r.close(); err != nil {
			return err
		}
		ents, err := os.ReadDir(r.dir)
		if err != nil {
			return err
		}
		var packs []fs.FS
		for i := len(ents) - 1; i >= 0; i-- { // the newest on top
			if n := ents[i].Name(); strings.HasSuffix(n, ".pack") {
				data, err := os.ReadFile(filepath.Join(r.dir, n))
				if err != nil {
					return err
				}
				p, err := packAt(data)
				if err != nil {
					return err
				}
				packs = append(packs, p)
			}
		}
		r.lowers = append(packs, r.lowers...)
	}
	storeRebases.Add(1)
	r.dir = filepath.Join(r.tmp, fmt.Sprintf("store-%d", r.n))
	return r.open(root) // the new store's root stands for the tree's
}

// TestIssue17ConformanceStoreOverLowers runs the suite through the
// kernel over a mounted store over lowers.
func TestIssue17ConformanceStoreOverLowers(t *testing.T) {
	before := storeRebases.Load()
	conformance.Run(t, func(t *testing.T) layer.FS {
		needFuse(t)
		tmp := t.TempDir()
		var buf bytes.Buffer
		if err := packwriter.Write(&buf, mem.New()); err != nil {
			t.Fatal(err)
		}
		empty, err := packAt(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		r := &rebasingMount{tmp: tmp, mnt: filepath.Join(tmp, "mnt"), dir: filepath.Join(tmp, "store"), lowers: []fs.FS{empty}}
		if err := os.Mkdir(r.mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := r.open(nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := r.close(); err != nil {
				t.Errorf("unmount: %v", err)
			}
		})
		return r
	}, suiteOpts...)
	if storeRebases.Load() == before && !testsize.Short() {
		t.Error("the differential test never moved the store into its lowers")
	}
	t.Logf("%d stores moved into their lowers", storeRebases.Load()-before)
}
