package packreader_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// The read-only differential over packs: each random tree the suite makes
// on the host is packed, the pack opened, and the same reads compared
// with os on the directory.

func TestReadOnlyDifferential(t *testing.T) {
	// The quick run does 30 sequences for each of the four (100 cost
	// about 3 s in all); the full run the suite's number, but 100 under
	// the race detector, where the suite's 500 for each took 150 s.
	opts := []conformance.Option{conformance.WithOwners()}
	switch {
	case testsize.Short():
		opts = append(opts, conformance.WithSeeds(30))
	case raceEnabled:
		opts = append(opts, conformance.WithSeeds(100))
	}
	for _, pack := range []struct {
		name string
		opts []packwriter.Option
	}{
		{"plain", nil},
		{"compressed", []packwriter.Option{packwriter.WithCompression(3)}},
	} {
		t.Run(pack.name+"/Open", func(t *testing.T) {
			conformance.RunReadOnlyDifferential(t, func(t *testing.T, dir string) fs.FS {
				name := filepath.Join(t.TempDir(), "tree.pack")
				if err := packwriter.WriteFile(name, os.DirFS(dir), pack.opts...); err != nil {
					t.Fatal(err)
				}
				return closing(t)(packreader.Open(name))
			}, opts...)
		})
		t.Run(pack.name+"/OpenReaderAt", func(t *testing.T) {
			conformance.RunReadOnlyDifferential(t, func(t *testing.T, dir string) fs.FS {
				var buf bytes.Buffer
				if err := packwriter.Write(&buf, os.DirFS(dir), pack.opts...); err != nil {
					t.Fatal(err)
				}
				return closing(t)(packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len())))
			}, opts...)
		})
	}
}

// closing returns a function that fails t on an error of opening a
// Reader, and closes the Reader when t ends.
func closing(t *testing.T) func(*packreader.Reader, error) *packreader.Reader {
	return func(r *packreader.Reader, err error) *packreader.Reader {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
}
