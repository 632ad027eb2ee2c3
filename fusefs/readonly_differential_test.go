package fusefs_test

import (
	"bytes"
	"io/fs"
	"os"
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestReadOnlyDifferentialPack runs the read-only differential through
// the kernel: each random tree is packed, the pack mounted, and every
// read made with system calls on the mountpoint (through dirfs), compared
// with the same calls on the tree's directory.
func TestReadOnlyDifferentialPack(t *testing.T) {
	needFuse(t)
	conformance.RunReadOnlyDifferential(t, func(t *testing.T, dir string) fs.FS {
		var buf bytes.Buffer
		if err := packwriter.Write(&buf, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		pack, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		return viaMount(t, pack, nil)
	}, readOnlyDiffOpts()...)
}

// readOnlyDiffOpts are the options of the read-only differential through
// a mount: 30 sequences in the quick run (100 take about 2 s), the
// suite's 2,000 with PACKFS_LONG=1, but under -race 100 rather than 500,
// as the other mounted runs, for the server runs several times slower.
func readOnlyDiffOpts() []conformance.Option {
	opts := []conformance.Option{conformance.WithOwners()}
	switch {
	case testsize.Short():
		opts = append(opts, conformance.WithSeeds(30))
	case raceEnabled:
		opts = append(opts, conformance.WithSeeds(100))
	}
	return opts
}
