package packwriter

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/internal/packformat"
)

// offsets writes fsys and returns each file's data offset by name (names
// are unique in these tests' trees).
func offsets(t *testing.T, pack []byte) map[string]uint64 {
	t.Helper()
	f := packformat.DecodeFooter(pack[len(pack)-packformat.FooterSize:])
	strs := pack[f.StringsOff : f.StringsOff+f.StringsSize]
	out := map[string]uint64{}
	for i := range f.Count {
		rc, _ := packformat.DecodeRecord(pack[f.IndexOff+i*packformat.RecordSize:])
		if rc.Type == packformat.TypeFile {
			out[string(strs[rc.NameOff:uint64(rc.NameOff)+uint64(rc.NameLen)])] = rc.Off
		}
	}
	return out
}

func tree() fstest.MapFS {
	big := bytes.Repeat([]byte("0123456789abcdef"), (smallFile/16)+100)
	big2 := bytes.Clone(big)
	big2[len(big2)-1] ^= 1
	return fstest.MapFS{
		"a":     {Data: []byte("same")},
		"d/b":   {Data: []byte("same")},
		"c":     {Data: []byte("diff")},
		"big1":  {Data: big},
		"d/big": {Data: big},
		"big3":  {Data: big2},
		"e1":    {Data: nil},
		"e2":    {Data: []byte{}},
	}
}

// constHash makes every content collide.
type constHash struct{ hash.Hash }

func (constHash) Sum(b []byte) []byte { return append(b, make([]byte, 32)...) }

func writeTo(t *testing.T, w io.Writer, opts ...Option) {
	t.Helper()
	if err := Write(w, tree(), opts...); err != nil {
		t.Fatal(err)
	}
}

func TestDedup(t *testing.T) {
	collide := func(c *config) { c.newHash = func() hash.Hash { return constHash{sha256.New()} } }
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"sha256", nil}, {"collisions", []Option{collide}}} {
		for _, dst := range []string{"buffer", "file"} {
			t.Run(tc.name+"/"+dst, func(t *testing.T) {
				var pack []byte
				if dst == "buffer" {
					var buf bytes.Buffer
					writeTo(t, &buf, tc.opts...)
					pack = buf.Bytes()
				} else {
					f, err := os.Create(filepath.Join(t.TempDir(), "p"))
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					writeTo(t, f, tc.opts...)
					if pack, err = os.ReadFile(f.Name()); err != nil {
						t.Fatal(err)
					}
				}
				off := offsets(t, pack)
				if off["a"] != off["b"] {
					t.Errorf("identical a and d/b stored at %d and %d", off["a"], off["b"])
				}
				if off["big1"] != off["big"] {
					t.Errorf("identical big1 and d/big stored at %d and %d", off["big1"], off["big"])
				}
				if off["a"] == off["c"] || off["big1"] == off["big3"] {
					t.Errorf("different contents share storage: %v", off)
				}
				want := int(packformat.HeaderSize) + 8 + 8 + 2*int(packformat.Align(uint64(len(tree()["big1"].Data))))
				f := packformat.DecodeFooter(pack[len(pack)-packformat.FooterSize:])
				if int(f.IndexOff) != want {
					t.Errorf("data region ends at %d, want %d", f.IndexOff, want)
				}
			})
		}
	}
}
