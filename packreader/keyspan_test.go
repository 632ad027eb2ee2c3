package packreader_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestKeySpanDamage: a lookup checks its directory's key blocks before
// its binary search when they are few, and a damaged one among them is
// still reported by the lookups that read it, and only by those: a
// lookup that never reads the damaged block answers as it did before.
func TestKeySpanDamage(t *testing.T) {
	m := fstest.MapFS{}
	for i := range 1000 { // 1,000 keys of 8 bytes: blocks 0 and 1 of the key table
		m[fmt.Sprintf("d/l%04d", i)] = &fstest.MapFile{Data: []byte("lower"), Mode: 0o644}
	}
	name := filepath.Join(t.TempDir(), "p.pack")
	if err := packwriter.WriteFile(name, m); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	foot := data[len(data)-128:]
	indexOff := binary.LittleEndian.Uint64(foot[0:])
	count := binary.LittleEndian.Uint64(foot[8:])
	keysOff := indexOff + 64*count
	// Records are sorted by parent then name: the root, d, then d's 1,000
	// entries, so l0999's key is the last, in key block 1.
	for _, c := range []struct {
		block   uint64
		bad, ok []string // names whose Stat fails as corrupt, and that answer as before
	}{
		{1, []string{"d/l0999"}, []string{"d/f0001", "d/a", "d/l0000"}},
		{0, []string{"d/f0001", "d/l0000", "d/l0999"}, nil},
	} {
		t.Run(fmt.Sprint("block=", c.block), func(t *testing.T) {
			bad := append([]byte(nil), data...)
			bad[keysOff+c.block*4096+8*8] ^= 0x40 // a key the search may not need
			p := filepath.Join(t.TempDir(), "bad.pack")
			if err := os.WriteFile(p, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := packreader.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for range 3 { // the first lookup and those after it
				for _, n := range c.ok {
					_, err := r.Stat(n)
					if want := n == "d/l0000"; (err == nil) != want || (!want && !errors.Is(err, fs.ErrNotExist)) {
						t.Errorf("Stat(%q) = %v", n, err)
					}
				}
				for _, n := range c.bad {
					if _, err := r.Stat(n); !errors.Is(err, packreader.ErrCorrupt) {
						t.Errorf("Stat(%q) = %v, want ErrCorrupt", n, err)
					}
				}
			}
		})
	}
}
