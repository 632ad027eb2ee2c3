package packreader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// wideTree has a directory of n files, so that its index spans several
// blocks, plus a few entries elsewhere.
func wideTree(n int) fstest.MapFS {
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	m := fstest.MapFS{
		"top":      {Data: []byte("top\n"), Mode: 0o644, ModTime: t0},
		"link":     {Data: []byte("d/f00001"), Mode: fs.ModeSymlink | 0o777, ModTime: t0},
		"sub/deep": {Data: []byte("deep\n"), Mode: 0o600, ModTime: t0},
	}
	for i := range n {
		m[fmt.Sprintf("d/f%05d", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("content %d\n", i%50)), Mode: 0o644, ModTime: t0}
	}
	return m
}

// openBoth opens data as a pack both ways: mapped from a file and through
// an io.ReaderAt.
func openBoth(t *testing.T, data []byte) map[string]*packreader.Reader {
	t.Helper()
	name := filepath.Join(t.TempDir(), "p.pack")
	must(t, os.WriteFile(name, data, 0o644))
	m, err := packreader.Open(name)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ra, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("OpenReaderAt: %v", err)
	}
	t.Cleanup(func() { m.Close(); ra.Close() })
	return map[string]*packreader.Reader{"mmap": m, "readerat": ra}
}

// packLayout returns the footer of a pack, where its check table is, and
// how many of the table's entries precede the string table's: those of the
// index and the key table.
func packLayout(data []byte) (f packformat.Footer, tableOff uint64, strBase uint64) {
	f = packformat.DecodeFooter(data[len(data)-packformat.FooterSize:])
	return f, f.StringsOff + f.StringsSize, packformat.Blocks(f.Count*packformat.RecordSize) + packformat.Blocks(f.Count*packformat.KeySize)
}

// recordsNamed maps each name in data's string table to its record.
func recordsNamed(data []byte) map[string]uint64 {
	f, _, _ := packLayout(data)
	out := map[string]uint64{}
	for i := range f.Count {
		rc, _ := packformat.DecodeRecord(data[f.IndexOff+i*packformat.RecordSize:])
		out[string(data[f.StringsOff+uint64(rc.NameOff):f.StringsOff+uint64(rc.NameOff)+uint64(rc.NameLen)])] = i
	}
	return out
}

// checkLazy reads every path of tree from r: each read gives the right
// answer or an error wrapping ErrCorrupt, and the paths in bad (whose
// records, names or keys were damaged) give ErrCorrupt. Verify must fail,
// and so must ReadDir of "d" if listFails (listings read no key).
func checkLazy(t *testing.T, r *packreader.Reader, tree fstest.MapFS, bad map[string]bool, listFails bool) {
	t.Helper()
	for p, mf := range tree {
		fi, err := r.Lstat(p)
		switch {
		case err != nil:
			if !errors.Is(err, packreader.ErrCorrupt) {
				t.Fatalf("Lstat(%s): %v, want nil or ErrCorrupt", p, err)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) || pe.Path != p {
				t.Fatalf("Lstat(%s): %v is not a *fs.PathError for the path", p, err)
			}
			continue
		case bad[p]:
			t.Fatalf("Lstat(%s) of a damaged entry succeeded", p)
		case fi.Mode() != mf.Mode || fi.Name() != filepath.Base(p):
			t.Fatalf("Lstat(%s) = %v %s, want %v", p, fi.Mode(), fi.Name(), mf.Mode)
		}
		if mf.Mode.IsRegular() {
			data, err := r.ReadFile(p)
			if err != nil && !errors.Is(err, packreader.ErrCorrupt) {
				t.Fatalf("ReadFile(%s): %v", p, err)
			}
			if err == nil && !bytes.Equal(data, mf.Data) {
				t.Fatalf("ReadFile(%s) = %q, want %q", p, data, mf.Data)
			}
		}
	}
	ents, err := r.ReadDir("d")
	switch {
	case listFails && !errors.Is(err, packreader.ErrCorrupt):
		t.Fatalf("ReadDir(d): %v, want ErrCorrupt", err)
	case !listFails && (err != nil || len(ents) != len(tree)-3):
		t.Fatalf("ReadDir(d): %d entries, %v", len(ents), err)
	}
	if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
		t.Fatalf("Verify: %v, want ErrCorrupt", err)
	}
}

// TestLazyIndexBlock flips a bit in one record of each index block after
// the first: Open must still succeed (it reads no such block), and the
// first lookup touching the block must fail with ErrCorrupt.
func TestLazyIndexBlock(t *testing.T) {
	tree := wideTree(1000)
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, v2))
	orig := buf.Bytes()
	f, _, _ := packLayout(orig)
	idxBlocks := packformat.Blocks(f.Count * packformat.RecordSize)
	if idxBlocks < 10 {
		t.Fatalf("only %d index blocks", idxBlocks)
	}
	names := recordsNamed(orig)
	byRecord := map[uint64]string{}
	for p := range tree {
		byRecord[names[filepath.Base(p)]] = p
	}
	for b := uint64(1); b < idxBlocks; b++ {
		t.Run(fmt.Sprint("block=", b), func(t *testing.T) {
			i := min(b*packformat.RecordsPerBlock+17, f.Count-1) // a record in block b
			data := bytes.Clone(orig)
			data[f.IndexOff+i*packformat.RecordSize+24] ^= 0x10 // its size
			bad := map[string]bool{}
			for j := b * packformat.RecordsPerBlock; j < min((b+1)*packformat.RecordsPerBlock, f.Count); j++ {
				if p, ok := byRecord[j]; ok {
					bad[p] = true
				}
			}
			for how, r := range openBoth(t, data) {
				t.Run(how, func(t *testing.T) { checkLazy(t, r, tree, bad, true) })
			}
		})
	}
}

// TestLazyStringBlock damages a name in the string table, the check
// table entry of a string block, and a name's key: lookups of the names in
// the damaged block fail.
func TestLazyStringBlock(t *testing.T) {
	tree := wideTree(2000)
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, v2))
	orig := buf.Bytes()
	f, tableOff, strBase := packLayout(orig)
	if f.StringsSize < 2*packformat.BlockSize {
		t.Fatalf("string table of only %d bytes", f.StringsSize)
	}
	// "d/f00900" lies in string block 1 (names of 6 bytes from about 40).
	target := "d/f00900"
	off := uint64(bytes.Index(orig[f.StringsOff:f.StringsOff+f.StringsSize], []byte("f00900")))
	blk := off / packformat.BlockSize
	bad := map[string]bool{target: true}
	rec := recordsNamed(orig)["f00900"]
	for what, at := range map[string]uint64{
		"name":  f.StringsOff + off + 2,
		"table": tableOff + (strBase+blk)*packformat.CRCSize,
		"key":   f.IndexOff + f.Count*packformat.RecordSize + rec*packformat.KeySize + 3,
	} {
		t.Run(what, func(t *testing.T) {
			data := bytes.Clone(orig)
			data[at] ^= 0x04
			for how, r := range openBoth(t, data) {
				t.Run(how, func(t *testing.T) { checkLazy(t, r, tree, bad, what != "key") })
			}
		})
	}
}

// TestRootBlock damages index block 0, which holds the root: Open fails.
func TestRootBlock(t *testing.T) {
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, wideTree(100), v2))
	f, tableOff, _ := packLayout(buf.Bytes())
	for what, at := range map[string]uint64{"record": f.IndexOff + 70, "table": tableOff + 1} {
		data := bytes.Clone(buf.Bytes())
		data[at] ^= 1
		name := filepath.Join(t.TempDir(), "p.pack")
		must(t, os.WriteFile(name, data, 0o644))
		if _, err := packreader.Open(name); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("%s: Open: %v, want ErrCorrupt", what, err)
		}
		if _, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data))); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("%s: OpenReaderAt: %v, want ErrCorrupt", what, err)
		}
	}
}

// TestLazyConcurrent has goroutines race to the first touch of every block
// of a fresh pack (run with -race): all reads succeed.
func TestLazyConcurrent(t *testing.T) {
	tree := wideTree(3000)
	name := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(name, tree))
	for range 5 {
		r, err := packreader.Open(name)
		must(t, err)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 3000 {
					p := fmt.Sprintf("d/f%05d", (i*7+g*751)%3000)
					if _, err := r.Stat(p); err != nil {
						t.Errorf("Stat(%s): %v", p, err)
						return
					}
				}
				if g == 0 {
					if _, err := r.ReadDir("d"); err != nil {
						t.Errorf("ReadDir: %v", err)
					}
				}
			}()
		}
		wg.Wait()
		must(t, r.Verify())
		must(t, r.Close())
	}
}

// TestPadding sets each padding byte of the data region in turn: reads
// are unaffected (no read touches padding), and Verify rejects the pack.
func TestPadding(t *testing.T) {
	orig := goldenPack(t, "small")
	f, _, _ := packLayout(orig)
	used := make([]bool, f.IndexOff)
	for i := range f.Count {
		rc, _ := packformat.DecodeRecord(orig[f.IndexOff+i*packformat.RecordSize:])
		if rc.Type == packformat.TypeFile {
			for j := rc.Off; j < rc.Off+rc.Size; j++ {
				used[j] = true
			}
		}
	}
	want := dump(t, goldenTrees()["small"])
	n := 0
	for at := uint64(packformat.HeaderSize); at < f.IndexOff; at++ {
		if used[at] {
			continue
		}
		n++
		data := bytes.Clone(orig)
		data[at] = 0x5a
		for how, r := range openBoth(t, data) {
			got, err := tryDump(r)
			if err != nil {
				t.Fatalf("padding byte %d, %s: %v", at, how, err)
			}
			if !cmp.Equal(want, got) {
				t.Fatalf("padding byte %d, %s: the tree differs", at, how)
			}
			if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
				t.Fatalf("padding byte %d, %s: Verify: %v, want ErrCorrupt", at, how, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("the golden pack has no padding")
	}
}

// TestStringTableLayout appends a byte to a name's run in the string
// table by lengthening the table: Verify rejects bytes no name or target
// owns.
func TestStringTableLayout(t *testing.T) {
	tree := fstest.MapFS{"a": {Data: []byte("x")}, "b": {Data: []byte("y")}}
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, v2))
	orig := buf.Bytes()
	f, tableOff, strBase := packLayout(orig)
	// Rebuild the pack with one stray byte at the end of the string table.
	strs := append(bytes.Clone(orig[f.StringsOff:f.StringsOff+f.StringsSize]), '!')
	var out []byte
	out = append(out, orig[:f.StringsOff]...)
	out = append(out, strs...)
	out = append(out, orig[tableOff:tableOff+strBase*packformat.CRCSize]...)
	out = append(out, 0, 0, 0, 0) // the string block's CRC, which fixCRC computes
	foot := bytes.Clone(orig[len(orig)-packformat.FooterSize:])
	binary.LittleEndian.PutUint64(foot[24:], f.StringsSize+1)
	out = append(out, foot...)
	if out = fixCRC(out); out == nil {
		t.Fatal("fixCRC rejected the rebuilt pack")
	}
	for how, r := range openBoth(t, out) {
		if _, err := r.ReadFile("b"); err != nil {
			t.Errorf("%s: ReadFile: %v", how, err)
		}
		if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("%s: Verify: %v, want ErrCorrupt", how, err)
		}
	}
}
