package packreader_test

import (
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// buildPack populates a mem layer with tree, packs it into a file and
// opens the file.
func buildPack(t *testing.T, tree conformance.Tree) (*packreader.Reader, *mem.Snapshot) {
	t.Helper()
	m := mem.New()
	if err := conformance.Populate(m, tree); err != nil {
		t.Fatal(err)
	}
	snap := m.Snapshot()
	name := filepath.Join(t.TempDir(), "tree.pack")
	if err := packwriter.WriteFile(name, snap); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, snap
}

func TestConformanceReadOnly(t *testing.T) {
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		r, _ := buildPack(t, tree)
		return r
	})
}
