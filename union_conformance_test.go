package packfs_test

import (
	"io/fs"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/conformance"
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
	})
}

// settling is a union that can freeze its state into a lower layer: the
// conformance suite's differential test then exercises copy-up, whiteouts,
// opaque directories and merged listings against os.
type settling struct {
	*packfs.FS
	settles int
}

// Settle puts the union's snapshot below a fresh upper layer.
func (s *settling) Settle() error {
	snap, err := s.FS.Snapshot()
	if err != nil {
		return err
	}
	// The upper layer's root stands for the union's root: carry its
	// attributes up, as they were.
	root, err := snap.Stat(".")
	if err != nil {
		return err
	}
	upper := mem.New()
	if err := upper.Chmod(".", root.Mode()); err != nil {
		return err
	}
	if err := upper.Chtimes(".", time.Time{}, root.ModTime()); err != nil {
		return err
	}
	s.FS = packfs.New(upper, snap)
	s.settles++
	return nil
}

// TestConformanceSettling runs the suite on unions whose state moves down
// into lower layers at random points of each sequence.
func TestConformanceSettling(t *testing.T) {
	var opts []conformance.Option
	if raceEnabled {
		// Each union operation is several layer operations, which the
		// race detector slows tenfold; without it the default 2,000 run.
		opts = append(opts, conformance.WithSeeds(150))
	}
	conformance.Run(t, func(t *testing.T) layer.FS {
		return &settling{FS: packfs.New(mem.New(), mem.New().Snapshot())}
	}, opts...)
}
