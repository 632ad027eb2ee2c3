//go:build unix

package packreader_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestProbe27KeySpanTruncated: a mapped pack whose file is truncated
// after Open, so that the pages holding the second key block of a
// directory (and the check table) are gone while its first key block
// was checked (by a lookup in the root, whose span is that block only).
// A LookupAt in the directory of a name that sorts before all of its
// names probes only the first block, which was checked: it reads no page
// that is gone, and answers ENOENT, as it did before keySpanChecked. A
// lookup whose probes do reach the lost pages reports ErrChanged.
func TestProbe27KeySpanTruncated(t *testing.T) {
	for _, format := range []int{2, 3} {
		t.Run(fmt.Sprint("format=", format), func(t *testing.T) {
			m := fstest.MapFS{}
			// d is the root's only entry (record 1); its 530 entries are
			// records 2 to 531: key blocks 0 (keys 0 to 511) and 1.
			for i := range 530 {
				m[fmt.Sprintf("d/n%05d-a-long-name-to-fill-the-string-table", 2*i+1)] = &fstest.MapFile{Mode: 0o644}
			}
			path := filepath.Join(t.TempDir(), "p.pack")
			must(t, packwriter.WriteFile(path, m, packwriter.WithFormat(format)))
			data, err := os.ReadFile(path)
			must(t, err)
			pm := probe27Parse(t, data)
			page := uint64(os.Getpagesize())
			cut := (pm.keysOff + packformat.BlockSize + page - 1) / page * page
			if cut >= uint64(len(data)) || pm.tabO < cut || pm.indexOff+2*packformat.RecordSize > cut {
				t.Fatalf("layout: keys at %d, table at %d, cut at %d of %d", pm.keysOff, pm.tabO, cut, len(data))
			}
			r, err := packreader.Open(path)
			must(t, err)
			defer r.Close()
			// Checks key block 0 (the root's span) and nothing of d's
			// but its record and name.
			e, err := r.LookupAt(nil, "d")
			must(t, err)
			if e.Dir == nil {
				t.Fatal("d is not a directory")
			}
			must(t, os.Truncate(path, int64(cut)))
			// The probes of "0" in d: entries 267, 134, 68, 35, 18, 10,
			// 6, 4, 3, 2: key block 0, checked; no key ties, so no
			// name is read.
			for _, name := range []string{"0", "a", "m", "n"} {
				if _, err := r.LookupAt(e.Dir, name); !errors.Is(err, syscall.ENOENT) {
					t.Errorf("LookupAt(d, %q) after the pack's tail was cut (its probes read only checked key block 0): %v, want ENOENT", name, err)
				}
			}
			// A lookup that probes key block 1 finds it gone.
			if _, err := r.LookupAt(e.Dir, "zzzz"); !errors.Is(err, packreader.ErrChanged) {
				t.Errorf("LookupAt(d, %q), probing key block 1: %v, want ErrChanged", "zzzz", err)
			}
		})
	}
}
