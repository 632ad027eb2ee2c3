package packwriter

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"io/fs"
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
	pack, err := packformat.UnpackTables(pack)
	if err != nil {
		t.Fatal(err)
	}
	f := packformat.DecodeFooter(pack[len(pack)-packformat.FooterSize:])
	if pack[8] == packformat.Version3 {
		f, _ = packformat.DecodeFooter3(pack[len(pack)-packformat.FooterSize3:])
	}
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
	}{
		{"sha256", []Option{WithFormat(2)}}, {"collisions", []Option{collide, WithFormat(2)}},
		{"sha256/v3", nil}, {"collisions/v3", []Option{collide}}, {"zstd", []Option{collide, WithCompression(3)}},
	} {
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
				if pack[8] == packformat.Version2 && int(f.IndexOff) != want {
					t.Errorf("data region ends at %d, want %d", f.IndexOff, want)
				}
			})
		}
	}
}

// TestDedupBatches writes enough small files to go through the hashing
// goroutine in several batches, with large files between them (which
// drain the queue): equal contents share storage, different ones do not,
// and two writes give the same bytes.
func TestDedupBatches(t *testing.T) {
	big := bytes.Repeat([]byte("abcdefgh"), smallFile/8+1)
	m := fstest.MapFS{}
	for i := range 500 {
		m[fmt.Sprintf("f%03d", i)] = &fstest.MapFile{Data: []byte(fmt.Sprint("content ", i%37))}
		if i%150 == 0 {
			m[fmt.Sprintf("f%03dbig", i)] = &fstest.MapFile{Data: append(bytes.Clone(big), byte(i%2))}
		}
	}
	collide := func(c *config) { c.newHash = func() hash.Hash { return constHash{sha256.New()} } }
	for _, opts := range [][]Option{nil, {collide}, {WithFormat(2)}, {WithCompression(3)}} {
		var a, b bytes.Buffer
		writeFS(t, &a, m, opts...)
		writeFS(t, &b, m, opts...)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("two writes of the same tree differ")
		}
		off := offsets(t, a.Bytes())
		byContent := map[string]uint64{}
		for name, f := range m {
			o, seen := byContent[string(f.Data)]
			if !seen {
				byContent[string(f.Data)] = off[name]
			} else if o != off[name] {
				t.Fatalf("%s: equal contents stored at %d and %d", name, o, off[name])
			}
		}
		distinct := map[uint64]bool{}
		for _, o := range byContent {
			distinct[o] = true
		}
		if len(distinct) != len(byContent) {
			t.Fatalf("%d distinct contents share %d offsets", len(byContent), len(distinct))
		}
	}
}

func writeFS(t *testing.T, w io.Writer, fsys fs.FS, opts ...Option) {
	t.Helper()
	if err := Write(w, fsys, opts...); err != nil {
		t.Fatal(err)
	}
}
