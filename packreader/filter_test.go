package packreader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// filters counts the frames of a pack by filter.
func filters(t *testing.T, data []byte) map[uint8]int {
	t.Helper()
	_, frames := framesOf(t, data)
	n := map[uint8]int{}
	for _, f := range frames[:len(frames)-1] {
		if f.Stored != 0 {
			n[f.Filter]++
		}
	}
	return n
}

// TestFilterExecutable packs this test's own binary (an executable of
// the machine it runs on), a small executable that shares a frame with
// text, and text alone, and reads them back whole and at random offsets,
// mapped and not: the executables' frames go through the x86 filter, the
// text's do not.
func TestFilterExecutable(t *testing.T) {
	p, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	bin, err := os.ReadFile(p)
	if err != nil {
		t.Skip(err)
	}
	bin = bin[:min(len(bin), 3<<20)]
	tree := fstest.MapFS{
		"bin/prog":  {Data: bin, Mode: 0o755},
		"bin/small": {Data: fakeExecutable(), Mode: 0o755},
		"doc.txt":   {Data: textish(7, 30000), Mode: 0o644},
		"src.txt":   {Data: textish(8, 3<<20), Mode: 0o644},
	}
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, packwriter.WithCompression(3)))
	data := buf.Bytes()
	if f := binary.LittleEndian.Uint32(data[16:]); f&packformat.FlagFilters == 0 {
		t.Fatalf("header flags %#x: no FlagFilters", f)
	}
	n := filters(t, data)
	// prog's frames and the one small and doc.txt share; src.txt's 3
	// frames are not filtered.
	if want := (len(bin)+packformat.ZstdFrameSize-1)/packformat.ZstdFrameSize + 1; n[packformat.FilterX86] != want {
		t.Errorf("%d filtered frames, want %d (%v)", n[packformat.FilterX86], want, n)
	}
	if n[packformat.FilterNone] < 3 {
		t.Errorf("%d frames without a filter, want 3 or more", n[packformat.FilterNone])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for how, r := range openBoth(t, data) {
		must(t, r.Verify())
		for name, f := range tree {
			got, err := r.ReadFile(name)
			must(t, err)
			if !bytes.Equal(got, f.Data) {
				t.Fatalf("%s: %s differs", how, name)
			}
			h, err := r.Open(name)
			must(t, err)
			for range 50 {
				off := rng.IntN(len(f.Data))
				b := make([]byte, min(rng.IntN(3000), len(f.Data)-off))
				if _, err := h.(io.ReaderAt).ReadAt(b, int64(off)); err != nil && err != io.EOF {
					t.Fatal(err)
				}
				if !bytes.Equal(b, f.Data[off:off+len(b)]) {
					t.Fatalf("%s: %s: ReadAt %d+%d differs", how, name, off, len(b))
				}
			}
			h.Close()
		}
	}
}

// TestGoldenFiltered: the golden pack of an executable has a filtered
// frame, and one without.
func TestGoldenFiltered(t *testing.T) {
	data, err := os.ReadFile("testdata/exec3z.pack")
	must(t, err)
	if n := filters(t, data); n[packformat.FilterX86] != 1 || n[packformat.FilterNone] != 1 {
		t.Errorf("frames by filter: %v, want one of each", n)
	}
}

// TestFilterHostile: frame entries that name a filter where the format
// allows none, or one it does not define, fail with ErrCorrupt, whatever
// reads them, even with every checksum around them right.
func TestFilterHostile(t *testing.T) {
	load := func(name string) []byte {
		data, err := os.ReadFile("testdata/" + name + ".pack")
		must(t, err)
		data, err = packformat.UnpackTables(data)
		must(t, err)
		return data
	}
	// setFilter rewrites the filter of the frames pick chooses.
	setFilter := func(data []byte, filter uint8, pick func(packformat.Frame, bool) bool) []byte {
		data = bytes.Clone(data)
		ft, frames := framesOf(t, data)
		hit := false
		for i, f := range frames {
			if pick(f, i == len(frames)-1) {
				f.Filter = filter
				f.Put(data[ft.FramesOff+uint64(i)*packformat.FrameEntrySize:])
				hit = true
			}
		}
		if !hit {
			t.Fatal("no frame picked")
		}
		return fixCRC(data)
	}
	zstdFrame := func(f packformat.Frame, last bool) bool { return !last && f.Stored != 0 && f.Filter == 0 }
	noFlag := func(data []byte) []byte {
		data = bytes.Clone(data)
		binary.LittleEndian.PutUint32(data[16:], binary.LittleEndian.Uint32(data[16:])&^packformat.FlagFilters)
		return fixCRC(data)
	}
	exec := load("exec3z")
	cases := map[string][]byte{
		"unknown filter":   setFilter(exec, 2, zstdFrame),
		"filter 255":       setFilter(exec, 255, zstdFrame),
		"on the sentinel":  setFilter(exec, packformat.FilterX86, func(_ packformat.Frame, last bool) bool { return last }),
		"without the flag": noFlag(exec),
		"flag, no zstd": func() []byte {
			d := bytes.Clone(load("frames3"))
			binary.LittleEndian.PutUint32(d[16:], packformat.FlagFilters)
			return fixCRC(d)
		}(),
	}
	// A raw frame: an incompressible file's.
	var buf bytes.Buffer
	noise := make([]byte, 5000)
	rand.NewChaCha8([32]byte{1}).Read(noise)
	must(t, packwriter.Write(&buf, fstest.MapFS{"noise": {Data: noise}}, packwriter.WithCompression(3)))
	raw, err := packformat.UnpackTables(buf.Bytes())
	must(t, err)
	buf.Reset()
	must(t, packwriter.Write(&buf, fstest.MapFS{"zeros": {Data: make([]byte, 3<<20)}}, packwriter.WithCompression(3)))
	holes, err := packformat.UnpackTables(buf.Bytes())
	must(t, err)
	cases["on a hole"] = setFilter(holes, packformat.FilterX86, func(f packformat.Frame, last bool) bool { return !last && f.Stored == 0 })
	cases["on a raw frame"] = setFilter(raw, packformat.FilterX86, func(f packformat.Frame, last bool) bool { return !last && f.Stored != 0 })
	for name, data := range cases {
		r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errors.Is(err, packreader.ErrCorrupt) {
				t.Errorf("%s: Open: %v, want ErrCorrupt", name, err)
			}
			continue
		}
		failed := false
		must(t, fs.WalkDir(r, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if _, err := r.ReadFile(p); errors.Is(err, packreader.ErrCorrupt) {
					failed = true
				} else if err != nil {
					t.Errorf("%s: ReadFile(%s): %v, want ErrCorrupt", name, p, err)
				}
			}
			return nil
		}))
		if !failed && name != "on the sentinel" {
			t.Errorf("%s: every file read", name)
		}
		if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("%s: Verify: %v, want ErrCorrupt", name, err)
		}
		r.Close()
	}
}

// TestFilterOnlyIfSmaller: a frame an executable shares with other files
// keeps the filter only where it makes the frame smaller; a frame of an
// executable alone is always filtered. These executables call one
// address field of zeros again and again, which the filter would make
// differ.
func TestFilterOnlyIfSmaller(t *testing.T) {
	header := fakeExecutable()[:24]
	calls := bytes.Repeat([]byte{0xe8, 0, 0, 0, 0, 0x90}, 20000)
	small := append(bytes.Clone(header), calls...)
	large := append(bytes.Clone(header), bytes.Repeat(calls, 10)...)
	for _, c := range []struct {
		name string
		tree fstest.MapFS
		want uint8
	}{
		{"shared", fstest.MapFS{"a.txt": {Data: textish(1, 5000)}, "prog": {Data: small}}, packformat.FilterNone},
		{"alone", fstest.MapFS{"prog": {Data: large[:packformat.ZstdFrameSize]}}, packformat.FilterX86},
	} {
		var buf bytes.Buffer
		must(t, packwriter.Write(&buf, c.tree, packwriter.WithCompression(3)))
		if n := filters(t, buf.Bytes()); n[c.want] != 1 || len(n) != 1 {
			t.Errorf("%s: frames by filter %v, want one of filter %d", c.name, n, c.want)
		}
		for how, r := range openBoth(t, buf.Bytes()) {
			must(t, r.Verify())
			for name, f := range c.tree {
				got, err := r.ReadFile(name)
				must(t, err)
				if !bytes.Equal(got, f.Data) {
					t.Errorf("%s %s: %s differs", c.name, how, name)
				}
			}
		}
	}
}

// TestStatsFrames: Stats counts a compressed pack's frames and those stored
// through the branch filter, what `packfs info` shows.
func TestStatsFrames(t *testing.T) {
	for _, c := range []struct {
		pack           string
		filtered, none bool
	}{
		{"exec3z.pack", true, false},
		{"frames3znofilters.pack", false, false},
		{"small3.pack", false, true},
	} {
		r, err := packreader.Open("testdata/" + c.pack)
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.Stats()
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", c.pack, err)
		}
		switch {
		case c.none && (st.Frames != 0 || st.Filtered != 0):
			t.Errorf("%s (uncompressed): %d frames, %d filtered, want none", c.pack, st.Frames, st.Filtered)
		case !c.none && st.Frames == 0:
			t.Errorf("%s: no frames counted", c.pack)
		case c.filtered && (st.Filtered == 0 || st.Filtered > st.Frames):
			t.Errorf("%s: %d of %d frames filtered, want some", c.pack, st.Filtered, st.Frames)
		case !c.filtered && st.Filtered != 0:
			t.Errorf("%s: %d frames filtered, want 0", c.pack, st.Filtered)
		}
		t.Logf("%s: %d frames, %d filtered", c.pack, st.Frames, st.Filtered)
	}
}
