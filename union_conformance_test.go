package packfs_test

import (
	"io/fs"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestConformanceReadOnly checks unions whose whole tree is in a lower.
func TestConformanceReadOnly(t *testing.T) {
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		lower := mem.New()
		if err := conformance.Populate(lower, tree); err != nil {
			t.Fatal(err)
		}
		return packfs.New(mem.New(), lower.Snapshot())
	}, raceTrees()...)
}

// raceTrees gives the read-only tests their quick trees under the race
// detector, which slows fstest.TestFS's single goroutine tenfold (30 s
// for the wide tree alone): the plain runs check the full trees, and
// under the race detector the point is the concurrent tests.
func raceTrees() []conformance.Option {
	if raceEnabled {
		return []conformance.Option{conformance.WithQuickTrees()}
	}
	return nil
}

// settling is a union that can freeze its state into a lower layer: the
// conformance suite's differential test then exercises copy-up, whiteouts,
// opaque directories and merged listings against os.
type settling struct {
	*packfs.FS
}

// settles counts the Settle calls the suite made, to show it made some.
var settles atomic.Int64

// Settle puts the union's snapshot below a fresh upper layer.
func (s *settling) Settle() error {
	snap, err := s.FS.Snapshot()
	if err != nil {
		return err
	}
	upper, err := upperOver(snap)
	if err != nil {
		return err
	}
	s.FS = packfs.New(upper, snap)
	settles.Add(1)
	return nil
}

// TestConformanceSettling runs the suite on unions whose state moves down
// into lower layers at random points of each sequence.
func TestConformanceSettling(t *testing.T) {
	opts := []conformance.Option{conformance.WithOwners()}
	if raceEnabled {
		// Each union operation is several layer operations, which the
		// race detector slows tenfold; without it the default 2,000 run.
		opts = append(opts, conformance.WithSeeds(150), conformance.WithQuickTrees())
	}
	before := settles.Load()
	conformance.Run(t, func(t *testing.T) layer.FS {
		return &settling{FS: packfs.New(mem.New(), mem.New().Snapshot())}
	}, opts...)
	if settles.Load() == before && !testsize.Short() {
		t.Error("the differential test never settled")
	}
}

// packSettling is a union whose upper layer's state is written, whiteouts
// and opaque markers included, into a new pack that goes on top of the
// lowers: the stack grows a delta pack at each Settle, like image layers.
type packSettling struct {
	*packfs.FS
	upper  *mem.FS
	lowers []fs.FS
}

// Settle packs the upper layer and starts a fresh one above the pack.
func (s *packSettling) Settle() error {
	pack, err := packBytes(s.upper.Snapshot())
	if err != nil {
		return err
	}
	if s.upper, err = upperOver(s.upper); err != nil {
		return err
	}
	s.lowers = append([]fs.FS{pack}, s.lowers...)
	s.FS = packfs.New(s.upper, s.lowers...)
	packsMade.Add(1)
	return nil
}

// packsMade counts the delta packs the suite made, to show it made some.
var packsMade atomic.Int64

// TestConformanceOverPacks runs the suite on a union of mem over a stack
// of delta packs that grows at random points of each sequence.
func TestConformanceOverPacks(t *testing.T) {
	opts := []conformance.Option{conformance.WithOwners()}
	if raceEnabled {
		opts = append(opts, conformance.WithSeeds(100), conformance.WithQuickTrees())
	}
	before := packsMade.Load()
	conformance.Run(t, func(t *testing.T) layer.FS {
		upper := mem.New()
		return &packSettling{FS: packfs.New(upper), upper: upper}
	}, opts...)
	made := packsMade.Load() - before
	t.Logf("%d delta packs made", made)
	if made == 0 && !testsize.Short() {
		t.Error("the differential test never settled into a pack")
	}
}

// upperOver returns a new, empty upper layer to stand over below: the
// upper layer's root stands for the union's root, so it carries below's
// root attributes up, as they were.
func upperOver(below fs.FS) (*mem.FS, error) {
	root, err := fs.Stat(below, ".")
	if err != nil {
		return nil, err
	}
	upper := mem.New()
	if err := upper.Chmod(".", root.Mode()); err != nil {
		return nil, err
	}
	if err := upper.Chtimes(".", time.Time{}, root.ModTime()); err != nil {
		return nil, err
	}
	if err := keepOwner(upper, ".", root); err != nil {
		return nil, err
	}
	return upper, nil
}

// keepOwner gives name in fsys the owner info records, if any.
func keepOwner(fsys layer.LchownFS, name string, info fs.FileInfo) error {
	uid, gid, ok := layer.OwnerOf(info)
	if !ok {
		return nil
	}
	id := func(v uint32) int {
		if v == layer.NoOwner {
			return -1
		}
		return int(v)
	}
	return fsys.Lchown(name, id(uid), id(gid))
}
