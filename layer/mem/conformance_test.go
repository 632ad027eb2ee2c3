package mem_test

import (
	"io/fs"
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestConformance runs the whole suite, differential test included, on
// fresh layers, checking the layer's invariants after each test.
func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) layer.FS {
		f := mem.New()
		t.Cleanup(func() {
			if err := f.Check(); err != nil {
				t.Error(err)
			}
		})
		return f
	}, conformance.WithOwners())
}

// TestConformanceIndexed is TestConformance with a hash index in every
// directory of two entries or more, so that every lookup the suite makes
// of a live layer, concurrent ones included, goes through one.
func TestConformanceIndexed(t *testing.T) {
	conformance.Run(t, func(t *testing.T) layer.FS {
		f := mem.NewIndexed()
		t.Cleanup(func() {
			if err := f.Check(); err != nil {
				t.Error(err)
			}
		})
		return f
	}, conformance.WithOwners())
}

// TestConformanceReadOnly checks snapshots of the suite's trees.
func TestConformanceReadOnly(t *testing.T) {
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		f := mem.New()
		if err := conformance.Populate(f, tree); err != nil {
			t.Fatal(err)
		}
		return f.Snapshot()
	})
}
