package packsize

import (
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/packreader"
)

// TestTinyTree packs a small generated tree of tiny files (2,000; 200
// under -short) with and without compression, and with squashfs when it
// is installed. The compressed pack's data region must be under half the
// uncompressed one's: tiny files share frames. The whole pack is not, as
// its index (88 bytes an entry, uncompressed) dominates a tree of tiny
// files; the sizes are logged, and BenchmarkSize has full-size figures.
func TestTinyTree(t *testing.T) {
	n := 2000
	if testsize.Short() {
		n = 200
	}
	dir := t.TempDir()
	tinyTree(t, dir, n)
	stored := func(level int) (int64, int64) {
		out := filepath.Join(t.TempDir(), "p.pack")
		writePack(t, dir, out, level)
		r, err := packreader.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := r.Verify(); err != nil {
			t.Fatal(err)
		}
		st, err := r.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return st.Stored, st.Size
	}
	rawData, raw := stored(0)
	zData, z := stored(19)
	t.Logf("%d tiny files: pack %d bytes (data %d), zstd:19 %d (data %d)", n, raw, rawData, z, zData)
	if zData*2 > rawData {
		t.Errorf("compressed data region of %d bytes, uncompressed %d", zData, rawData)
	}
	if bin, why := squashfs(); bin == "" {
		t.Logf("squashfs comparison skipped: %s", why)
	} else {
		gz, _ := mksquashfs(t, bin, dir, "gzip")
		t.Logf("mksquashfs -comp gzip: %d bytes (the pack is %.2fx)", gz, float64(z)/float64(gz))
	}
}
