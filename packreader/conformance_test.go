package packreader_test

import (
	"bytes"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// buildPack populates a mem layer with tree, packs it into a file and
// opens the file.
func buildPack(t *testing.T, tree conformance.Tree, opts ...packwriter.Option) (*packreader.Reader, *mem.Snapshot) {
	t.Helper()
	m := mem.New()
	if err := conformance.Populate(m, tree); err != nil {
		t.Fatal(err)
	}
	snap := m.Snapshot()
	name := filepath.Join(t.TempDir(), "tree.pack")
	if err := packwriter.WriteFile(name, snap, opts...); err != nil {
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

// The suite over a compressed pack, mapped and through an io.ReaderAt
// with a cache of two frames (so that reads evict), and over format 2.
func TestConformanceReadOnlyCompressed(t *testing.T) {
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		r, _ := buildPack(t, tree, packwriter.WithCompression(3))
		return r
	})
}

func TestConformanceReadOnlyCompressedReaderAt(t *testing.T) {
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		m := mem.New()
		if err := conformance.Populate(m, tree); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := packwriter.Write(&buf, m.Snapshot(), packwriter.WithCompression(3)); err != nil {
			t.Fatal(err)
		}
		r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()), packreader.WithCacheSize(packformat.ZstdFrameSize)) // one frame: evictions on every other frame
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	})
}

func TestConformanceReadOnlyFormat2(t *testing.T) {
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		r, _ := buildPack(t, tree, packwriter.WithFormat(2))
		return r
	})
}
