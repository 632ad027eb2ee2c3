package packreader_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

var update = flag.Bool("update", false, "rewrite the golden packs in testdata/")

// goldenTrees are small trees with fixed times: their packs are checked
// into testdata/ and seed FuzzOpen.
// v2 writes format 2: the tests that patch a pack's bytes at offsets of
// that layout use it.
var v2 = packwriter.WithFormat(2)

// goldenOpts are the options each golden pack is written with: "empty"
// and "small" are format 2, the packs every reader must go on opening;
// "3" means format 3, "3z" format 3 compressed.
func goldenOpts(name string) []packwriter.Option {
	switch {
	case strings.HasSuffix(name, "3z"):
		return []packwriter.Option{packwriter.WithCompression(3)}
	case strings.HasSuffix(name, "3"):
		return nil
	}
	return []packwriter.Option{v2}
}

func goldenTrees() map[string]fstest.MapFS {
	trees := goldenTrees2()
	big := bytes.Repeat([]byte("a frame of text that compresses\n"), 2100)
	for _, name := range []string{"empty", "small"} {
		trees[name+"3"] = trees[name]
		trees[name+"3z"] = trees[name]
	}
	// Two frames and a hole: a large file, a file of zeros.
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, name := range []string{"frames3", "frames3z"} {
		trees[name] = fstest.MapFS{
			"big":   {Data: big, Mode: 0o644, ModTime: t0},
			"zeros": {Data: make([]byte, 3<<16+5), Mode: 0o644, ModTime: t0},
			"tail":  {Data: append(bytes.Clone(big[:66000]), 1), Mode: 0o644, ModTime: t0},
		}
	}
	// An x86-64 executable, whose frame goes through the x86 filter, and
	// a text file of more than a frame, whose first frame does not (its
	// second holds the executable too).
	trees["exec3z"] = fstest.MapFS{
		"bin/prog": {Data: fakeExecutable(), Mode: 0o755, ModTime: t0},
		"big":      {Data: bytes.Repeat(big, 16), Mode: 0o644, ModTime: t0},
	}
	return trees
}

// fakeExecutable returns an x86-64 ELF header followed by machine-code
// patterns the x86 filter converts: calls, jumps and RIP-relative LEA
// and MOV, to a few targets, between other bytes.
func fakeExecutable() []byte {
	b := []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00\x01\x00\x00\x00")
	for i := range 600 {
		target := uint32(1000 + 4000*(i%5))
		switch i % 3 {
		case 0:
			b = append(b, 0xe8)
			b = binary.LittleEndian.AppendUint32(b, target-uint32(len(b)+4))
		case 1:
			b = append(b, 0x48, 0x8d, 0x05)
			b = binary.LittleEndian.AppendUint32(b, target-uint32(len(b)+4))
		default:
			b = append(b, 0x4c, 0x8b, 0x0d)
			b = binary.LittleEndian.AppendUint32(b, target-uint32(len(b)+4))
		}
		b = append(b, 0x90, 0x31, 0xc0, byte(i%7))
	}
	return b
}

func goldenTrees2() map[string]fstest.MapFS {
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	return map[string]fstest.MapFS{
		"empty": {},
		"small": {
			"a.txt":            {Data: []byte("hello, pack\n"), Mode: 0o644, ModTime: t0},
			"b.txt":            {Data: []byte("hello, pack\n"), Mode: 0o600, ModTime: t0.Add(time.Second)},
			"dir":              {Mode: fs.ModeDir | 0o755, ModTime: t0},
			"dir/c":            {Data: bytes.Repeat([]byte{7}, 100), Mode: 0o640, ModTime: t0},
			"dir/link":         {Data: []byte("../a.txt"), Mode: fs.ModeSymlink | 0o777, ModTime: t0},
			"dir/abs":          {Data: []byte("/dir/c"), Mode: fs.ModeSymlink | 0o777, ModTime: t0},
			"dir/loop":         {Data: []byte("loop"), Mode: fs.ModeSymlink | 0o777, ModTime: t0},
			"gone":             {Mode: layer.ModeWhiteout, ModTime: t0},
			"opq":              {Mode: fs.ModeDir | 0o700, ModTime: t0},
			"opq/.wh..wh..opq": {Mode: layer.ModeWhiteout, ModTime: t0},
			"opq/x":            {Data: []byte{}, Mode: 0o644, ModTime: t0},
		},
	}
}

func goldenPack(t testing.TB, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, goldenTrees()[name], goldenOpts(name)...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// legacyGolden are golden packs the writer no longer produces, by the
// tree they hold and the header flag they lack: compressed packs written
// before packed tables (FlagPackedTables), whose tables are stored raw,
// and before frame filters (FlagFilters). Readers go on opening them.
var legacyGolden = map[string]struct {
	tree string
	lack uint32
}{
	"empty3ztables1":    {"empty3z", packformat.FlagPackedTables | packformat.FlagFilters},
	"small3ztables1":    {"small3z", packformat.FlagPackedTables | packformat.FlagFilters},
	"frames3ztables1":   {"frames3z", packformat.FlagPackedTables | packformat.FlagFilters},
	"empty3znofilters":  {"empty3z", packformat.FlagFilters},
	"small3znofilters":  {"small3z", packformat.FlagFilters},
	"frames3znofilters": {"frames3z", packformat.FlagFilters},
}

// TestGoldenLegacy opens, verifies and reads the legacy golden packs.
func TestGoldenLegacy(t *testing.T) {
	for file, g := range legacyGolden {
		name := filepath.Join("testdata", file+".pack")
		data, err := os.ReadFile(name)
		must(t, err)
		if f := binary.LittleEndian.Uint32(data[16:]); f&g.lack != 0 || f&packformat.FlagZstd == 0 {
			t.Fatalf("%s: header flags %#x", name, f)
		}
		for how, r := range openBoth(t, data) {
			must(t, r.Verify())
			if diff := cmp.Diff(dump(t, goldenTrees()[g.tree]), dump(t, r)); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", name, how, diff)
			}
		}
	}
}

// TestGolden checks that the writer still produces the checked-in packs:
// the format does not drift unnoticed. Run with -update to rewrite them.
func TestGolden(t *testing.T) {
	for name := range goldenTrees() {
		file := filepath.Join("testdata", name+".pack")
		got := goldenPack(t, name)
		if *update {
			must(t, os.WriteFile(file, got, 0o644))
			continue
		}
		want, err := os.ReadFile(file)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the writer's output differs from the golden pack (format change? run with -update)", file)
		}
		r, err := packreader.Open(file)
		must(t, err)
		must(t, r.Verify())
		if diff := cmp.Diff(dump(t, goldenTrees()[name]), dump(t, r)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
		r.Close()
	}
}

// exercise reads everything in data as a pack and fails on a panic
// (implicitly), on an error that should wrap ErrCorrupt but does not, or
// when reading it allocates more than allocLimit allows for its size.
func exercise(t *testing.T, data []byte) {
	t.Helper()
	exerciseWith(t, data, false, func() (*packreader.Reader, error) {
		return packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)), packreader.WithCacheSize(exerciseCache))
	})
}

// exerciseMapped is exercise through a mapping of data, written into a
// temporary file.
func exerciseMapped(t *testing.T, data []byte) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "fuzz.pack")
	must(t, os.WriteFile(name, data, 0o644))
	exerciseWith(t, data, true, func() (*packreader.Reader, error) {
		return packreader.Open(name, packreader.WithCacheSize(exerciseCache))
	})
}

func exerciseWith(t *testing.T, data []byte, mapped bool, open func() (*packreader.Reader, error)) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	copied := exerciseReads(t, data, open, mapped)
	runtime.ReadMemStats(&after)
	got, limit := after.TotalAlloc-before.TotalAlloc, allocLimit(len(data))+copied
	if len(data) >= 20 && binary.LittleEndian.Uint32(data[8:]) == 3 && data[16]&1 != 0 {
		limit += zstdAlloc
	}
	if os.Getenv("PACKFS_ALLOC") != "" {
		t.Logf("%d bytes: allocated %d, limit %d", len(data), got, limit)
	}
	// The race detector makes sync.Pool drop buffers at random, and so
	// reading allocate 64 KiB where it would reuse a buffer: the bound is
	// checked without it.
	if got > limit && !raceEnabled {
		t.Fatalf("reading a pack of %d bytes allocated %d bytes (%.0fx its size), more than %d (%d of them ReadFile's copies)",
			len(data), got, float64(got)/float64(len(data)), limit, copied)
	}
}

// allocLimit is what FORMAT.md's promise (no input makes the reader
// allocate more than the file's size) leaves exercise for a pack of size
// bytes, besides the copies ReadFile returns: a small multiple of the size
// (each entry, 72 bytes of index and key table, becomes a path, a
// DirEntry, a FileInfo and an open file in exercise's calls; measured at
// most 12x on the golden packs and their bit flips), plus a constant for
// the Reader, the walk and a 64 KiB buffer that contents are read through.
func allocLimit(size int) uint64 { return allocPerByte*uint64(size) + allocConst }

const (
	allocPerByte = 16
	allocConst   = 96 << 10
	// exerciseCache bounds the frames a Reader of a compressed pack
	// keeps in exercise, and zstdAlloc what such a Reader may allocate
	// besides allocLimit: its cache, a frame being decompressed
	// beside it and the decoder's state.
	exerciseCache = 256 << 10
	zstdAlloc     = exerciseCache + 4*packformat.MaxFrame
)

// exerciseReads runs every read of the Reader over data and returns the
// bytes that ReadFile returned, copies the caller asked for, and those of
// the paths fs.WalkDir built.
func exerciseReads(t *testing.T, data []byte, open func() (*packreader.Reader, error), mapped bool) (copied uint64) {
	r, err := open()
	if err != nil {
		if !errors.Is(err, packreader.ErrCorrupt) {
			t.Fatalf("open: %v does not wrap ErrCorrupt", err)
		}
		return 0
	}
	defer r.Close()
	// Verify reads every content, holes included: a pack whose holes
	// make its contents many times its size is verified elsewhere.
	verr := errors.New("not verified")
	if streamSize(data) <= uint64(bigContent(len(data))) {
		verr = r.Verify()
	}
	_, _ = r.Stats()
	if verr != nil && !errors.Is(verr, packreader.ErrCorrupt) && verr.Error() != "not verified" {
		t.Fatalf("Verify: %v does not wrap ErrCorrupt", verr)
	}
	_ = fs.WalkDir(r, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if verr == nil && errors.Is(err, packreader.ErrCorrupt) {
				t.Fatalf("Verify passed, but walking %s: %v", p, err)
			}
			return nil
		}
		fi, serr := r.Stat(p)
		if serr == nil && fi.Size() > int64(bigContent(len(data))) {
			// Holes make a content's size independent of the pack's:
			// reading it whole is a copy the caller asks for, and
			// no measure of the reader. Read its ends.
			if f, err := r.Open(p); err == nil {
				var buf [7]byte
				ra := f.(io.ReaderAt)
				_, _ = ra.ReadAt(buf[:], 0)
				_, _ = ra.ReadAt(buf[:], fi.Size()-3)
				f.Close()
			}
			return nil
		}
		target, _ := r.ReadLink(p)
		copied += uint64(len(target))
		_ = r.Opaque(p)
		b, rerr := r.ReadFile(p)
		copied += uint64(cap(b)) + uint64(len(p)) // the copy, and the walk's path
		if bb, err := r.Bytes(p); err == nil {
			if rerr == nil && !bytes.Equal(bb, b) {
				t.Fatalf("Bytes and ReadFile of %s differ", p)
			}
			if !mapped {
				copied += uint64(cap(bb)) // Bytes copies what it cannot map
			} else if bb2, err := r.Bytes(p); err == nil && len(bb) > 0 && &bb[0] != &bb2[0] {
				// Mapped, Bytes copies a content it cannot give as one
				// stretch of the mapping (one with holes, say): two
				// calls that give two copies tell it.
				copied += uint64(cap(bb)) + uint64(cap(bb2))
			}
		}
		for _, e := range []error{serr, rerr} {
			if verr == nil && errors.Is(e, packreader.ErrCorrupt) {
				t.Fatalf("Verify passed, but %s: %v", p, e)
			}
		}
		if f, err := r.Open(p); err == nil {
			var buf [7]byte
			_, _ = f.Read(buf[:])
			_, _ = f.(interface {
				ReadAt([]byte, int64) (int, error)
			}).ReadAt(buf[:], 3)
			f.Close()
		}
		return nil
	})
	_, _ = r.Glob("*/*")
	_, _ = r.Stat("dir/link/x")
	return copied
}

// streamSize returns the raw stream size a format-3 pack's footer claims
// (which bounds every content's size), 0 for other data.
func streamSize(data []byte) uint64 {
	if len(data) < 64+packformat.FooterSize3 || binary.LittleEndian.Uint32(data[8:]) != 3 {
		return 0
	}
	f, _ := packformat.DecodeFooter3(data[len(data)-packformat.FooterSize3:])
	return f.Stream
}

// bigContent is the size of a content over which exerciseReads reads only
// a few bytes of it, for a pack of size bytes.
func bigContent(size int) int { return 64*size + 4<<20 }

// fixCRC recomputes the check table and the footer CRC of a pack-shaped
// data so that fuzzing reaches the record checks behind them. It returns
// nil when the footer does not describe a layout it can fix.
func fixCRC(data []byte) []byte {
	if len(data) < 128 {
		return nil
	}
	if binary.LittleEndian.Uint32(data[8:]) == 3 {
		return fixCRC3(data)
	}
	d := bytes.Clone(data)
	size := uint64(len(d))
	foot := d[size-64:]
	le := binary.LittleEndian
	idx, count, strOff, strSize := le.Uint64(foot[0:]), le.Uint64(foot[8:]), le.Uint64(foot[16:]), le.Uint64(foot[24:])
	if idx < 64 || idx > size-64 || count > size/64 || strOff != idx+72*count || strSize > size || strOff+strSize > size-64 {
		return nil
	}
	blocks := func(n uint64) uint64 { return (n + 4095) / 4096 }
	tabOff := strOff + strSize
	if tabOff+4*(blocks(64*count)+blocks(8*count)+blocks(strSize)) != size-64 {
		return nil
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	pos := tabOff
	for _, region := range [][]byte{d[idx : idx+64*count], d[idx+64*count : strOff], d[strOff:tabOff]} {
		for len(region) > 0 {
			n := min(len(region), 4096)
			le.PutUint32(d[pos:], crc32.Checksum(region[:n], tab))
			pos += 4
			region = region[n:]
		}
	}
	crc := crc32.Update(0, tab, d[:64])
	crc = crc32.Update(crc, tab, foot[:48])
	le.PutUint32(foot[48:], crc)
	return d
}

// fixCRC3 is fixCRC for format 3.
func fixCRC3(data []byte) []byte {
	if len(data) < 64+128 {
		return nil
	}
	d := bytes.Clone(data)
	size := uint64(len(d))
	foot := d[size-128:]
	le := binary.LittleEndian
	idx, count, strOff, strSize := le.Uint64(foot[0:]), le.Uint64(foot[8:]), le.Uint64(foot[16:]), le.Uint64(foot[24:])
	framesOff, nframes, attrsOff := le.Uint64(foot[48:]), le.Uint64(foot[56:]), le.Uint64(foot[64:])
	if idx < 64 || idx > size || count > size/64 || strOff != idx+72*count || strSize > size ||
		framesOff != strOff+strSize || nframes > size/24 || attrsOff != framesOff+24*nframes || attrsOff+16*count > size {
		return nil
	}
	blocks := func(n uint64) uint64 { return (n + 4095) / 4096 }
	tabOff := attrsOff + 16*count
	if tabOff+4*(blocks(64*count)+blocks(8*count)+blocks(strSize)+blocks(24*nframes)+blocks(16*count)) != size-128 {
		return nil
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	pos := tabOff
	for _, region := range [][]byte{d[idx : idx+64*count], d[idx+64*count : strOff], d[strOff:framesOff], d[framesOff:attrsOff], d[attrsOff:tabOff]} {
		for len(region) > 0 {
			n := min(len(region), 4096)
			le.PutUint32(d[pos:], crc32.Checksum(region[:n], tab))
			pos += 4
			region = region[n:]
		}
	}
	crc := crc32.Update(0, tab, d[:64])
	crc = crc32.Update(crc, tab, foot[:112])
	le.PutUint32(foot[112:], crc)
	return d
}

func FuzzOpen(f *testing.F) {
	for name := range legacyGolden {
		data, err := os.ReadFile(filepath.Join("testdata", name+".pack"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for name := range goldenTrees() {
		data, err := os.ReadFile(filepath.Join("testdata", name+".pack"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		exercise(t, data)
		if fixed := fixCRC(data); fixed != nil {
			exercise(t, fixed)
			exerciseMapped(t, fixed)
		}
	})
}

// TestTruncated opens every prefix of a golden pack.
func TestTruncated(t *testing.T) {
	for _, name := range []string{"small", "small3", "small3z", "frames3z"} {
		t.Run(name, func(t *testing.T) { testTruncated(t, goldenPack(t, name)) })
	}
}

func testTruncated(t *testing.T, data []byte) {
	for n := range len(data) {
		_, err := packreader.OpenReaderAt(bytes.NewReader(data[:n]), int64(n))
		if !errors.Is(err, packreader.ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
	// A file truncated on disk, opened with mmap.
	name := filepath.Join(t.TempDir(), "t.pack")
	must(t, os.WriteFile(name, data[:len(data)-1], 0o644))
	if _, err := packreader.Open(name); !errors.Is(err, packreader.ErrCorrupt) {
		t.Fatalf("Open of a truncated file: %v, want ErrCorrupt", err)
	}
}

// TestBitFlips flips every third bit of a golden pack (so every byte, and
// every bit position, is hit): each result must fail
// with ErrCorrupt at Open or at the read that touches it, or read back
// exactly the original tree (a flip in alignment padding).
func TestBitFlips(t *testing.T) {
	for _, name := range []string{"small", "small3", "small3z", "frames3z"} {
		t.Run(name, func(t *testing.T) { testBitFlips(t, name) })
	}
}

func testBitFlips(t *testing.T, name string) {
	data := goldenPack(t, name)
	want := dump(t, goldenTrees()[name])
	step := 3
	if len(data) > 1000 {
		step = 11 // still every byte and every bit position
	}
	for bit := 0; bit < len(data)*8; bit += step {
		d := bytes.Clone(data)
		d[bit/8] ^= 1 << (bit % 8)
		for _, crcFixed := range []bool{false, true} {
			if crcFixed {
				if d = fixCRC(d); d == nil {
					continue
				}
			}
			exercise(t, d)
			r, err := packreader.OpenReaderAt(bytes.NewReader(d), int64(len(d)))
			if err != nil {
				continue
			}
			if !crcFixed {
				got, err := tryDump(r)
				if err == nil && !cmp.Equal(want, got) {
					t.Fatalf("bit %d: no error, but the tree differs:\n%s", bit, cmp.Diff(want, got))
				}
				if err != nil && !errors.Is(err, packreader.ErrCorrupt) {
					t.Fatalf("bit %d: %v, want ErrCorrupt", bit, err)
				}
			}
			r.Close()
		}
	}
}

func tryDump(fsys fs.FS) (out []entry, err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("panic: %v", e)
		}
	}()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := fs.Lstat(fsys, p)
		if err != nil {
			return err
		}
		e := entry{Path: p, Mode: fi.Mode()}
		switch fi.Mode().Type() {
		case 0:
			e.ModTime = fi.ModTime().UTC()
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			e.Data = string(data)
		case fs.ModeDir:
			e.ModTime = fi.ModTime().UTC()
		case fs.ModeSymlink:
			if e.Target, err = fs.ReadLink(fsys, p); err != nil {
				return err
			}
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// FuzzRoundTrip builds a tree from the input, packs it and checks that the
// pack holds exactly that tree.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x01\x00\x03hello\x02\x05\x07\x03\x00\x01"))
	f.Add([]byte("\x00\x00\x00\x00\x01\x01\x01\x02\x05\x01\x03\x05abcdefgh"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := treeFrom(data)
		var buf bytes.Buffer
		if err := packwriter.Write(&buf, m); err != nil {
			t.Fatal(err)
		}
		r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Verify(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(dump(t, m), dump(t, r)); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
	})
}

// treeFrom decodes a tree from fuzz input, three bytes an entry: kind,
// parent choice, name and parameters; file contents are taken from what
// follows.
func treeFrom(data []byte) fstest.MapFS {
	m := fstest.MapFS{}
	dirs := []string{"."}
	for len(data) >= 3 {
		kind, a, b := data[0], data[1], data[2]
		data = data[3:]
		name := path.Join(dirs[int(a)%len(dirs)], fmt.Sprintf("%c%d", 'a'+b%5, b%3))
		if _, ok := m[name]; ok {
			continue
		}
		mt := time.Unix(int64(b)*1e6, int64(a)*1e3)
		switch kind % 4 {
		case 0:
			m[name] = &fstest.MapFile{Mode: fs.ModeDir | fs.FileMode(0o700|int(a)&0o77), ModTime: mt}
			dirs = append(dirs, name)
		case 1:
			n := min(int(a)%32, len(data))
			m[name] = &fstest.MapFile{Data: bytes.Clone(data[:n]), Mode: fs.FileMode(b) & 0o777, ModTime: mt}
			data = data[n:]
		case 2:
			target := fmt.Sprintf("../%c%d", 'a'+a%5, a%3)
			if a%7 == 0 {
				target = "/" + dirs[int(b)%len(dirs)]
			}
			m[name] = &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777, ModTime: mt}
		case 3:
			if b%2 == 0 {
				name = path.Join(path.Dir(name), layer.OpaqueName)
			}
			m[name] = &fstest.MapFile{Mode: layer.ModeWhiteout, ModTime: mt}
		}
	}
	return m
}

// TestIssue14AllocationBound holds exercise's allocation bound on packs
// larger than the golden ones: many small files (each first read of a
// file through an io.ReaderAt used to allocate a 64 KiB buffer: 1,000
// files of a 79 KB pack cost 70 MB, 880x), and many entries sharing one
// content.
func TestIssue14AllocationBound(t *testing.T) {
	shared := fstest.MapFS{}
	for i := range 500 {
		shared[fmt.Sprintf("s/%03d", i)] = &fstest.MapFile{Data: bytes.Repeat([]byte("x"), 3000), Mode: 0o644}
	}
	for name, tree := range map[string]fstest.MapFS{"wide": wideTree(1000), "shared": shared, "fault": faultTree()} {
		for _, v := range []string{"", "3", "3z"} {
			t.Run(name+v, func(t *testing.T) {
				var buf bytes.Buffer
				must(t, packwriter.Write(&buf, tree, goldenOpts(v)...))
				exercise(t, buf.Bytes())
			})
		}
	}
}

// TestIssue14ListingSpan crafts directories whose two children name bytes
// 60 KB apart in the string table, around a long symlink target: listing
// each directory copied the 60 KB between them (386x the pack's size over
// a walk). A listing now requires the names (and targets) of the entries
// it lists to follow one another, as the string table's layout says.
func TestIssue14ListingSpan(t *testing.T) {
	target := "a" + strings.Repeat("z", 60000) + "b"
	tree := fstest.MapFS{"t": {Data: []byte(target), Mode: fs.ModeSymlink | 0o777}}
	for i := range 200 {
		tree[fmt.Sprintf("d%03d/a", i)] = &fstest.MapFile{Data: []byte("A"), Mode: 0o644}
		tree[fmt.Sprintf("d%03d/b", i)] = &fstest.MapFile{Data: []byte("A"), Mode: 0o644}
	}
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, v2))
	data := buf.Bytes()
	f, _, _ := packLayout(data)
	strs := data[f.StringsOff : f.StringsOff+f.StringsSize]
	var targetOff uint64
	for i := range f.Count {
		rc, _ := packformat.DecodeRecord(data[f.IndexOff+i*packformat.RecordSize:])
		if rc.Type == packformat.TypeSymlink {
			targetOff = rc.Off
		}
	}
	patched := 0
	for i := range f.Count {
		b := data[f.IndexOff+i*packformat.RecordSize:]
		rc, _ := packformat.DecodeRecord(b)
		switch string(strs[rc.NameOff : rc.NameOff+uint32(rc.NameLen)]) {
		case "a":
			binary.LittleEndian.PutUint32(b[4:], uint32(targetOff))
			patched++
		case "b":
			binary.LittleEndian.PutUint32(b[4:], uint32(targetOff)+uint32(len(target))-1)
		}
	}
	if patched != 200 {
		t.Fatalf("patched %d records", patched)
	}
	data = fixCRC(data)
	exercise(t, data)
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	if _, err := r.ReadDir("d000"); !errors.Is(err, packreader.ErrCorrupt) {
		t.Errorf("ReadDir of a directory whose names are apart: %v, want ErrCorrupt", err)
	}
}

// TestIssue14SharedBadContent damages a content that 500 entries share,
// gives each of the 500 records of one content a different wrong
// checksum, or gives each a different size: every ReadFile of each entry
// allocated a copy before finding the checksum wrong (and every entry
// checked the same content again). The Reader now remembers each
// content's checksum, and checks a content before it allocates the copy.
func TestIssue14SharedBadContent(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789"), 300)
	tree := fstest.MapFS{}
	for i := range 500 {
		tree[fmt.Sprintf("s/%03d", i)] = &fstest.MapFile{Data: content, Mode: 0o644}
	}
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, v2))
	for _, how := range []string{"content", "checksums", "sizes"} {
		t.Run("damaged="+how, func(t *testing.T) {
			data := bytes.Clone(buf.Bytes())
			if how == "content" {
				off := bytes.Index(data, content)
				if off < 0 {
					t.Fatal("content not found")
				}
				data[off+1000] ^= 1
			} else {
				f, _, _ := packLayout(data)
				for i := range f.Count {
					b := data[f.IndexOff+i*packformat.RecordSize:]
					switch {
					case b[10] != packformat.TypeFile:
					case how == "checksums":
						binary.LittleEndian.PutUint32(b[56:], uint32(i))
					default:
						binary.LittleEndian.PutUint64(b[24:], uint64(len(content))-i)
					}
				}
				data = fixCRC(data)
			}
			exercise(t, data)
			r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
			must(t, err)
			for _, p := range []string{"s/000", "s/001", "s/499"} {
				if _, err := r.ReadFile(p); !errors.Is(err, packreader.ErrCorrupt) {
					t.Errorf("ReadFile %s of a damaged content: %v, want ErrCorrupt", p, err)
				}
				if f, err := r.Open(p); err != nil {
					t.Error(err)
				} else if _, err := f.Read(make([]byte, 10)); !errors.Is(err, packreader.ErrCorrupt) {
					t.Errorf("Read %s of a damaged content: %v, want ErrCorrupt", p, err)
				}
			}
		})
	}
}

// TestIssue14ListingOverlap crafts 2,000 directories whose child runs
// all stretch to the end of the index: listing one allocated its whole
// claimed run, and a dirEntry chunk, before finding the second child's
// parent wrong, 8 MB in all for a pack of 146 KB (the cost grew with the
// square of the entries). A listing now checks a chunk's parent links
// before it allocates, and grows its result as entries pass.
func TestIssue14ListingOverlap(t *testing.T) {
	tree := fstest.MapFS{}
	for i := range 2000 {
		tree[fmt.Sprintf("d%04d/f", i)] = &fstest.MapFile{Data: []byte("A"), Mode: 0o644}
	}
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, v2))
	data := buf.Bytes()
	f, _, _ := packLayout(data)
	for i := range f.Count {
		b := data[f.IndexOff+i*packformat.RecordSize:]
		if rc, _ := packformat.DecodeRecord(b); i > 0 && rc.Type == packformat.TypeDir {
			binary.LittleEndian.PutUint64(b[24:], f.Count-rc.Off)
		}
	}
	data = fixCRC(data)
	exercise(t, data)
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	if _, err := r.ReadDir("d0000"); !errors.Is(err, packreader.ErrCorrupt) {
		t.Errorf("ReadDir of a directory claiming others' children: %v, want ErrCorrupt", err)
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestIssue14VerifyOverlap crafts 200 entries that give one 64 KiB
// content 200 overlapping spans, each with its right CRC-32C and SHA-256:
// Verify hashed every span before finding that they overlap, reading
// 12.9 MB of an 81 KB pack. It now checks the data region's layout first,
// and hashes each distinct content once.
func TestIssue14VerifyOverlap(t *testing.T) {
	data := overlapPack(t)
	c := &countingReaderAt{r: bytes.NewReader(data)}
	r, err := packreader.OpenReaderAt(c, int64(len(data)))
	must(t, err)
	opened := c.n.Load()
	if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) || !strings.Contains(err.Error(), "overlaps") {
		t.Errorf("Verify of overlapping contents: %v, want ErrCorrupt for the overlap", err)
	}
	if read := c.n.Load() - opened; read > int64(len(data)) {
		t.Errorf("Verify read %d bytes of a pack of %d", read, len(data))
	}
	exercise(t, data)
}

// TestIssue14ReadOverlap reads each entry of overlapPack once: each first
// read of a span checked it, 25.9 MB read for an 81 KB pack. The spans
// checked now add up to no more than the data region, and a span past
// that is refused unread.
func TestIssue14ReadOverlap(t *testing.T) {
	data := overlapPack(t)
	c := &countingReaderAt{r: bytes.NewReader(data)}
	r, err := packreader.OpenReaderAt(c, int64(len(data)))
	must(t, err)
	opened := c.n.Load()
	ok := 0
	for i := range 200 {
		_, err := r.ReadFile(fmt.Sprintf("f%03d", i))
		if err == nil {
			ok++
		} else if !errors.Is(err, packreader.ErrCorrupt) {
			t.Fatalf("ReadFile f%03d: %v, want ErrCorrupt", i, err)
		}
	}
	if ok == 0 || ok == 200 {
		t.Errorf("%d of 200 overlapping contents read, want some and not all", ok)
	}
	if read := c.n.Load() - opened; read > 3*int64(len(data)) {
		t.Errorf("reading every entry once read %d bytes of a pack of %d", read, len(data))
	}
}

// overlapPack crafts 200 entries that give one 64 KiB content 200
// overlapping spans, each with its right CRC-32C and SHA-256, and the
// footer's logical size to match.
func overlapPack(t *testing.T) []byte {
	content := make([]byte, 64<<10)
	for i := range content {
		content[i] = byte(i * 31)
	}
	tree := fstest.MapFS{}
	for i := range 200 {
		tree[fmt.Sprintf("f%03d", i)] = &fstest.MapFile{Data: content, Mode: 0o644}
	}
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, v2))
	data := buf.Bytes()
	f, _, _ := packLayout(data)
	var logical uint64
	for i := range f.Count {
		b := data[f.IndexOff+i*packformat.RecordSize:]
		if b[10] != packformat.TypeFile {
			continue
		}
		size := uint64(len(content)) - 8*i
		binary.LittleEndian.PutUint64(b[24:], size)
		binary.LittleEndian.PutUint32(b[56:], crc32.Checksum(content[:size], crc32.MakeTable(crc32.Castagnoli)))
		sum := sha256.Sum256(content[:size])
		copy(b[40:56], sum[:16])
		logical += size
	}
	binary.LittleEndian.PutUint64(data[len(data)-packformat.FooterSize+40:], logical)
	return fixCRC(data)
}

// TestIssue15TrailingData: bytes appended to a pack are named as such, not
// as a truncated pack.
func TestIssue15TrailingData(t *testing.T) {
	m := mem.New()
	if err := m.WriteFile("a", []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	data := append(buf.Bytes(), "garbage\n"...)
	_, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	if !errors.Is(err, packreader.ErrCorrupt) || !strings.Contains(err.Error(), "8 bytes of trailing data") {
		t.Errorf("open with 8 bytes appended: %v; want ErrCorrupt naming trailing data", err)
	}
	cut := buf.Bytes()[:buf.Len()-3]
	if _, err := packreader.OpenReaderAt(bytes.NewReader(cut), int64(len(cut))); !errors.Is(err, packreader.ErrCorrupt) || strings.Contains(err.Error(), "trailing") {
		t.Errorf("open of a truncated pack: %v", err)
	}
}
