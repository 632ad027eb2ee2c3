package packreader_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestPlacedContents: a ReadFile of an uncompressed format-3 pack
// remembers where a content it checked whole lies (placed.go), and later
// reads of the record take it from there. Contents of odd sizes (so that
// padding moves them from their stream positions), after a sparse file
// whose holes put them before their stream positions, shared by two
// names, over several frames, read again and again through ReadFile,
// Bytes and ReadFileAt, must read as written; and a damaged one must fail
// every read, never being remembered.
func TestPlacedContents(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	sparse := make([]byte, 3<<20)
	copy(sparse[len(sparse)-5:], "tail\n")
	m := fstest.MapFS{"a/sparse": {Data: sparse, Mode: 0o644}}
	for i := range 200 {
		b := make([]byte, 1+rng.IntN(300))
		for j := range b {
			b[j] = byte(rng.Uint32() | 1)
		}
		m[fmt.Sprintf("b/f%03d", i)] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	m["b/same"] = &fstest.MapFile{Data: m["b/f007"].Data, Mode: 0o644}
	big := textish(3, 200<<10)
	m["c/big"] = &fstest.MapFile{Data: big, Mode: 0o644}
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(path, m))

	r, err := packreader.Open(path)
	must(t, err)
	defer r.Close()
	if r.Version() != 3 || r.Compressed() {
		t.Fatalf("version %d, compressed %v: want an uncompressed format-3 pack", r.Version(), r.Compressed())
	}
	b, err := r.LookupAt(nil, "b")
	must(t, err)
	for round := range 3 {
		for name, f := range m {
			got, err := r.ReadFile(name)
			if err != nil || !bytes.Equal(got, f.Data) {
				t.Fatalf("round %d: ReadFile(%s): %d bytes, %v", round, name, len(got), err)
			}
			got, err = r.Bytes(name)
			if err != nil || !bytes.Equal(got, f.Data) {
				t.Fatalf("round %d: Bytes(%s): %d bytes, %v", round, name, len(got), err)
			}
			if dir, base := filepath.Split(name); dir == "b/" {
				got, err = r.ReadFileAt(pathwalk.Dir(b.Dir), base, name)
				if err != nil || !bytes.Equal(got, f.Data) {
					t.Fatalf("round %d: ReadFileAt(b, %s): %d bytes, %v", round, base, len(got), err)
				}
			}
		}
	}
	must(t, r.Verify())

	// The same pack with one byte of b/f042 flipped.
	data, err := os.ReadFile(path)
	must(t, err)
	want := m["b/f042"].Data
	at := bytes.Index(data, want)
	if at < 0 || bytes.Count(data, want) != 1 {
		t.Fatal("b/f042's content is not stored once, as is")
	}
	data[at+len(want)/2] ^= 0x10
	bad := filepath.Join(t.TempDir(), "bad.pack")
	must(t, os.WriteFile(bad, data, 0o644))
	r2, err := packreader.Open(bad)
	must(t, err)
	defer r2.Close()
	for round := range 3 {
		if _, err := r2.ReadFile("b/f042"); !errors.Is(err, packreader.ErrCorrupt) {
			t.Fatalf("round %d: ReadFile of the damaged content: %v, want ErrCorrupt", round, err)
		}
		if _, err := r2.Bytes("b/f042"); !errors.Is(err, packreader.ErrCorrupt) {
			t.Fatalf("round %d: Bytes of the damaged content: %v, want ErrCorrupt", round, err)
		}
		if got, err := r2.ReadFile("b/f041"); err != nil || !bytes.Equal(got, m["b/f041"].Data) {
			t.Fatalf("round %d: ReadFile of its neighbour: %v", round, err)
		}
	}
	if err := r2.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
		t.Fatalf("Verify: %v, want ErrCorrupt", err)
	}
}

// TestPlacedByHandles: a handle's read that finds a content whole in one
// raw, checked frame remembers where it is, as ReadFile does, and later
// reads of the record (other handles, at any offset and length, and
// ReadFile) take it from there; a damaged content is never remembered:
// every read of it fails, through handles as through ReadFile.
func TestPlacedByHandles(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	m := fstest.MapFS{}
	for i := range 100 {
		b := make([]byte, 1+rng.IntN(3000))
		for j := range b {
			b[j] = byte(rng.Uint32() | 1)
		}
		m[fmt.Sprintf("d/f%03d", i)] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	m["d/big"] = &fstest.MapFile{Data: textish(4, 300<<10), Mode: 0o644} // several frames
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(path, m))
	check := func(r *packreader.Reader, name string, want []byte) error {
		f, err := r.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		ra := f.(io.ReaderAt)
		for range 4 {
			off := rng.IntN(len(want))
			n := 1 + rng.IntN(len(want)-off)
			got := make([]byte, n)
			if _, err := ra.ReadAt(got, int64(off)); err != nil && !(err == io.EOF && off+n == len(want)) {
				return err
			}
			if !bytes.Equal(got, want[off:off+n]) {
				return fmt.Errorf("ReadAt(%d, %d) read other bytes", off, n)
			}
		}
		got, err := io.ReadAll(f.(io.Reader))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) { // ReadAt moves no offset
			return fmt.Errorf("Read read other bytes")
		}
		return nil
	}
	r, err := packreader.Open(path)
	must(t, err)
	defer r.Close()
	for round := range 3 {
		for name, f := range m {
			if err := check(r, name, f.Data); err != nil {
				t.Fatalf("round %d: %s: %v", round, name, err)
			}
			if got, err := r.ReadFile(name); err != nil || !bytes.Equal(got, f.Data) {
				t.Fatalf("round %d: ReadFile(%s): %v", round, name, err)
			}
		}
	}

	data, err := os.ReadFile(path)
	must(t, err)
	want := m["d/f042"].Data
	at := bytes.Index(data, want)
	if at < 0 || bytes.Count(data, want) != 1 {
		t.Fatal("d/f042's content is not stored once, as is")
	}
	data[at+len(want)/2] ^= 0x10
	bad := filepath.Join(t.TempDir(), "bad.pack")
	must(t, os.WriteFile(bad, data, 0o644))
	r2, err := packreader.Open(bad)
	must(t, err)
	defer r2.Close()
	for round := range 3 {
		f, err := r2.Open("d/f042")
		must(t, err)
		if _, err := io.ReadAll(f.(io.Reader)); !errors.Is(err, packreader.ErrCorrupt) {
			t.Fatalf("round %d: Read of the damaged content: %v, want ErrCorrupt", round, err)
		}
		f.Close()
		if _, err := r2.ReadFile("d/f042"); !errors.Is(err, packreader.ErrCorrupt) {
			t.Fatalf("round %d: ReadFile of the damaged content: %v, want ErrCorrupt", round, err)
		}
		if err := check(r2, "d/f041", m["d/f041"].Data); err != nil {
			t.Fatalf("round %d: its neighbour: %v", round, err)
		}
	}
}
