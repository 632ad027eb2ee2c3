package packreader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/klauspost/compress/zstd"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// textish returns n bytes that compress about as source code does.
func textish(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	words := []string{"func ", "return ", "if err != nil {\n", "\t", "x", "y := ", "0x1f", "// a comment\n", "}\n", "package "}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(8) == 0 {
			fmt.Fprintf(&b, "%d", rng.Uint32())
		}
	}
	return b.Bytes()[:n]
}

// framesOf decodes the frame table of a format-3 pack.
func framesOf(t *testing.T, data []byte) (packformat.Footer, []packformat.Frame) {
	t.Helper()
	data, err := packformat.UnpackTables(data)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := packformat.DecodeFooter3(data[len(data)-packformat.FooterSize3:])
	if !ok {
		t.Fatal("not a format-3 footer")
	}
	var out []packformat.Frame
	for i := range f.FrameCount {
		out = append(out, packformat.DecodeFrame(data[f.FramesOff+i*packformat.FrameEntrySize:]))
	}
	return f, out
}

// countingAt counts the bytes read through it.
type countingAt struct {
	r io.ReaderAt
	n int64
	m sync.Mutex
}

func (c *countingAt) ReadAt(p []byte, off int64) (int, error) {
	c.m.Lock()
	c.n += int64(len(p))
	c.m.Unlock()
	return c.r.ReadAt(p, off)
}

// TestIssue16FirstByte: the first byte of a large file came back only
// after the whole content's CRC-32C was checked. A format-3 read checks
// the frames it touches: the first byte of an 8 MiB file reads one frame.
func TestIssue16FirstByte(t *testing.T) {
	big := textish(1, 8<<20)
	tree := fstest.MapFS{"big": {Data: big, Mode: 0o644}}
	for _, opts := range [][]packwriter.Option{nil, {packwriter.WithCompression(3)}} {
		var buf bytes.Buffer
		must(t, packwriter.Write(&buf, tree, opts...))
		ca := &countingAt{r: bytes.NewReader(buf.Bytes())}
		r, err := packreader.OpenReaderAt(ca, int64(buf.Len()))
		must(t, err)
		opened := ca.n
		f, err := r.Open("big")
		must(t, err)
		var one [1]byte
		if _, err := f.Read(one[:]); err != nil || one[0] != big[0] {
			t.Fatalf("first byte: %v, %q", err, one[0])
		}
		if read := ca.n - opened; read > packformat.ZstdFrameSize+4096 {
			t.Errorf("compressed=%v: the first byte read %d bytes of the pack", r.Compressed(), read)
		}
		// Every offset reads right, across frame boundaries.
		for _, off := range []int64{packformat.FrameSize - 3, 5*packformat.FrameSize + 7, int64(len(big)) - 10} {
			got := make([]byte, 20)
			n, _ := f.(io.ReaderAt).ReadAt(got, off)
			if !bytes.Equal(got[:n], big[off:min(off+20, int64(len(big)))]) {
				t.Fatalf("ReadAt %d: wrong bytes", off)
			}
		}
		f.Close()
		must(t, r.Verify())
		r.Close()
	}
}

// TestIssue16RandomReads compares random reads of compressed and
// uncompressed packs, mapped and not, with the source, from several
// goroutines at once through a cache of a few frames.
func TestIssue16RandomReads(t *testing.T) {
	tree := fstest.MapFS{}
	for i := range 60 {
		tree[fmt.Sprintf("f%02d", i)] = &fstest.MapFile{Data: textish(uint64(i), 1+i*i*97), Mode: 0o644}
	}
	tree["big"] = &fstest.MapFile{Data: textish(99, 1<<20+12345), Mode: 0o644}
	reads, levels := 300, []int{0, 3, 19} // reads per goroutine
	if testsize.Short() {
		reads, levels = 40, []int{0, 3}
	}
	for _, level := range levels {
		name := filepath.Join(t.TempDir(), "p.pack")
		must(t, packwriter.WriteFile(name, tree, packwriter.WithCompression(level)))
		data, err := os.ReadFile(name)
		must(t, err)
		mapped, err := packreader.Open(name, packreader.WithCacheSize(3*packformat.FrameSize))
		must(t, err)
		viaRA, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)), packreader.WithCacheSize(2*packformat.FrameSize))
		must(t, err)
		for _, r := range []*packreader.Reader{mapped, viaRA} {
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), uint64(level)))
					for range reads {
						names := []string{"big", "f07", "f59", fmt.Sprintf("f%02d", rng.IntN(60))}
						p := names[rng.IntN(len(names))]
						want := tree[p].Data
						f, err := r.Open(p)
						if err != nil {
							errs <- err
							return
						}
						off := rng.Int64N(int64(len(want)))
						got := make([]byte, rng.IntN(200000))
						n, err := f.(io.ReaderAt).ReadAt(got, off)
						f.Close()
						if (err != nil && err != io.EOF) || !bytes.Equal(got[:n], want[off:min(off+int64(len(got)), int64(len(want)))]) {
							errs <- fmt.Errorf("level %d: %s at %d: %d bytes, %v", level, p, off, n, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			must(t, r.Verify())
			r.Close()
		}
	}
}

// TestIssue16DamagedFrame: a damaged frame fails the reads that touch it
// and no others, and Verify.
func TestIssue16DamagedFrame(t *testing.T) {
	for _, level := range []int{0, 3} {
		frame := int64(packformat.FrameSize)
		if level > 0 {
			frame = packformat.ZstdFrameSize
		}
		big := textish(2, 10*int(frame))
		var buf bytes.Buffer
		must(t, packwriter.Write(&buf, fstest.MapFS{"big": {Data: big}}, packwriter.WithCompression(level)))
		data := buf.Bytes()
		_, frames := framesOf(t, data)
		if len(frames) != 11 {
			t.Fatalf("level %d: %d frames, want 10 and the sentinel", level, len(frames))
		}
		data[frames[4].Off+uint64(frames[4].Stored)/2] ^= 0x40
		r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		must(t, err)
		f, err := r.Open("big")
		must(t, err)
		ra := f.(io.ReaderAt)
		p := make([]byte, 100)
		if _, err := ra.ReadAt(p, 3*frame+5); err != nil || !bytes.Equal(p, big[3*frame+5:][:100]) {
			t.Errorf("level %d: read of a sound frame: %v", level, err)
		}
		if _, err := ra.ReadAt(p, 4*frame+5); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("level %d: read of the damaged frame: %v, want ErrCorrupt", level, err)
		}
		if _, err := r.ReadFile("big"); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("level %d: ReadFile: %v, want ErrCorrupt", level, err)
		}
		if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("level %d: Verify: %v, want ErrCorrupt", level, err)
		}
		r.Close()
	}
}

// TestIssue16CraftedFrameHeader: a zstd frame whose header claims more
// than the frame table records must fail without the reader allocating
// what it claims.
func TestIssue16CraftedFrameHeader(t *testing.T) {
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, fstest.MapFS{"f": {Data: textish(3, 40000)}}, packwriter.WithCompression(3)))
	// The frame table is edited in place: in raw tables.
	data, err := packformat.UnpackTables(buf.Bytes())
	must(t, err)
	ft, frames := framesOf(t, data)
	// A frame of a MaxFrame of zeros compresses to a few bytes: put it
	// where the real frame was, and fix the checksums around it.
	enc, err := zstd.NewWriter(nil)
	must(t, err)
	bomb := enc.EncodeAll(make([]byte, packformat.MaxFrame), nil)
	if uint32(len(bomb)) > frames[0].Stored {
		t.Fatalf("bomb of %d bytes does not fit in %d", len(bomb), frames[0].Stored)
	}
	copy(data[frames[0].Off:], bomb)
	clear(data[frames[0].Off+uint64(len(bomb)) : frames[0].Off+uint64(frames[0].Stored)])
	e := data[ft.FramesOff:]
	binary.LittleEndian.PutUint32(e[16:], uint32(len(bomb)))
	binary.LittleEndian.PutUint32(e[20:], crc32.Checksum(bomb, packformat.Castagnoli))
	data = fixCRC(data)
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	defer r.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = r.ReadFile("f")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, packreader.ErrCorrupt) {
		t.Fatalf("ReadFile: %v, want ErrCorrupt", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 400<<10 && !raceEnabled {
		t.Errorf("refusing the frame allocated %d bytes", got)
	}
	if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
		t.Errorf("Verify: %v, want ErrCorrupt", err)
	}
}

// TestIssue16FrameOverrun: frame buffers have room past their frame
// for the decoder's fastest copies, which it may fill: a zstd frame that
// decodes to a few bytes more or fewer than the frame table records, with
// its size in its header or without, is corrupt all the same, through a
// mapping and through an io.ReaderAt, and in Verify.
func TestIssue16FrameOverrun(t *testing.T) {
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, fstest.MapFS{"f": {Data: textish(3, 40000)}}, packwriter.WithCompression(3)))
	clean, err := packformat.UnpackTables(buf.Bytes())
	must(t, err)
	ft, frames := framesOf(t, clean)
	raw := int(frames[1].Pos - frames[0].Pos)
	enc, err := zstd.NewWriter(nil)
	must(t, err)
	for _, extra := range []int{0, -1, 1, 8, 15, 16, 17, 4096} {
		for _, sized := range []bool{true, false} {
			// Half of text and zeros, which take less room than the
			// frame they replace.
			content := append(textish(3, raw/2), make([]byte, raw-raw/2+extra)...)
			var frame []byte
			if sized {
				frame = enc.EncodeAll(content, nil)
			} else {
				// A streamed frame leaves its content size out.
				var w bytes.Buffer
				enc.Reset(&w)
				_, err := enc.Write(content)
				must(t, err)
				must(t, enc.Close())
				frame = w.Bytes()
			}
			data := bytes.Clone(clean)
			if end := frames[0].Off + uint64(len(frame)); end > ft.IndexOff || end > ft.StringsOff || end > ft.FramesOff {
				t.Fatalf("frame of %d bytes runs into the tables", len(frame))
			}
			copy(data[frames[0].Off:], frame)
			e := data[ft.FramesOff:]
			binary.LittleEndian.PutUint32(e[16:], uint32(len(frame)))
			binary.LittleEndian.PutUint32(e[20:], crc32.Checksum(frame, packformat.Castagnoli))
			data = fixCRC(data)
			path := filepath.Join(t.TempDir(), "p.pack")
			must(t, os.WriteFile(path, data, 0o600))
			for _, mapped := range []bool{false, true} {
				var r *packreader.Reader
				if mapped {
					r, err = packreader.Open(path)
				} else {
					r, err = packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
				}
				must(t, err)
				if extra == 0 {
					// The frame of the right size: the edit is sound.
					if got, err := r.ReadFile("f"); err != nil || !bytes.Equal(got, content) {
						t.Fatalf("the frame replaced by one of its size: %v", err)
					}
					r.Close()
					continue
				}
				if _, err := r.ReadFile("f"); !errors.Is(err, packreader.ErrCorrupt) {
					t.Errorf("%+d bytes, size in header %v, mapped %v: ReadFile: %v, want ErrCorrupt", extra, sized, mapped, err)
				}
				if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
					t.Errorf("%+d bytes, size in header %v, mapped %v: Verify: %v, want ErrCorrupt", extra, sized, mapped, err)
				}
				r.Close()
			}
		}
	}
}

// TestIssue16SharedFrames: small files compress together: a thousand
// files of 100 bytes take a couple of frames, not a thousand, and a frame
// that does not shrink is stored raw.
func TestIssue16SharedFrames(t *testing.T) {
	tree := fstest.MapFS{}
	for i := range 1000 {
		tree[fmt.Sprintf("d%d/f%03d", i%10, i)] = &fstest.MapFile{Data: textish(uint64(i), 100)}
	}
	noise := make([]byte, 2*packformat.ZstdFrameSize)
	rand.NewChaCha8([32]byte{5}).Read(noise)
	tree["noise"] = &fstest.MapFile{Data: noise}
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, packwriter.WithCompression(3)))
	_, frames := framesOf(t, buf.Bytes())
	raw := 0
	for i := 0; i+1 < len(frames); i++ {
		if uint64(frames[i].Stored) == frames[i+1].Pos-frames[i].Pos {
			raw++
		}
	}
	if len(frames) > 6 || raw < 1 {
		t.Errorf("%d frames (%d raw) for 1000 small files and one of noise", len(frames)-1, raw)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	must(t, err)
	must(t, r.Verify())
	for name, f := range tree {
		got, err := r.ReadFile(name)
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if fi, err := fs.Stat(r, "noise"); err != nil || fi.Size() != int64(len(noise)) {
		t.Fatal(fi, err)
	}
}

// TestIssue16Format2Golden: the format-2 packs in testdata still open,
// verify and read as their trees.
func TestIssue16Format2Golden(t *testing.T) {
	for _, name := range []string{"empty", "small"} {
		r, err := packreader.Open(filepath.Join("testdata", name+".pack"))
		must(t, err)
		if r.Version() != 2 {
			t.Errorf("%s: version %d", name, r.Version())
		}
		must(t, r.Verify())
		r.Close()
	}
}

// TestIssue16ParallelWriteTo: WriteTo of a compressed content reads
// frames ahead on several goroutines and writes them in order, from any
// offset; a damaged frame stops it with ErrCorrupt after the frames
// before it.
func TestIssue16ParallelWriteTo(t *testing.T) {
	big := textish(7, 20*packformat.ZstdFrameSize+777)
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, fstest.MapFS{"big": {Data: big}}, packwriter.WithCompression(3)))
	data := buf.Bytes()
	for _, start := range []int64{0, 5, packformat.ZstdFrameSize + 3} {
		r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		must(t, err)
		f, err := r.Open("big")
		must(t, err)
		_, err = f.(io.Seeker).Seek(start, io.SeekStart)
		must(t, err)
		var out bytes.Buffer
		n, err := f.(io.WriterTo).WriteTo(&out)
		if err != nil || n != int64(len(big))-start || !bytes.Equal(out.Bytes(), big[start:]) {
			t.Fatalf("WriteTo from %d: %d bytes, %v", start, n, err)
		}
		f.Close()
		r.Close()
	}
	_, frames := framesOf(t, data)
	bad := bytes.Clone(data)
	bad[frames[9].Off+1] ^= 0xff
	r, err := packreader.OpenReaderAt(bytes.NewReader(bad), int64(len(bad)))
	must(t, err)
	defer r.Close()
	f, err := r.Open("big")
	must(t, err)
	var out bytes.Buffer
	n, err := f.(io.WriterTo).WriteTo(&out)
	if !errors.Is(err, packreader.ErrCorrupt) || n != 9*packformat.ZstdFrameSize || !bytes.Equal(out.Bytes(), big[:n]) {
		t.Errorf("WriteTo over a damaged frame 9: %d bytes, %v", n, err)
	}
}

// TestIssue16HugeHole: a pack of a few hundred bytes may claim a file of
// a terabyte of holes. Reading it streams zeros; ReadFile refuses to copy
// it (EFBIG) instead of allocating a terabyte.
func TestIssue16HugeHole(t *testing.T) {
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, fstest.MapFS{"z": {Data: make([]byte, 3*packformat.FrameSize)}}))
	data := buf.Bytes()
	ft, frames := framesOf(t, data)
	if len(frames) != 2 || frames[0].Stored != 0 {
		t.Fatalf("frames %+v: want one hole and the sentinel", frames)
	}
	// Make the hole, the stream and the file a terabyte long.
	const tb = 1 << 40
	le := binary.LittleEndian
	le.PutUint64(data[ft.FramesOff+packformat.FrameEntrySize:], tb) // the sentinel's Pos
	le.PutUint64(data[len(data)-packformat.FooterSize3+72:], tb)    // Stream
	for i := range ft.Count {
		rec := data[ft.IndexOff+i*packformat.RecordSize:]
		if rec[10] == packformat.TypeFile {
			le.PutUint64(rec[24:], tb)
		}
	}
	data = fixCRC(data)
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	defer r.Close()
	if _, err := r.ReadFile("z"); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("ReadFile of a terabyte: %v, want EFBIG", err)
	}
	f, err := r.Open("z")
	must(t, err)
	defer f.Close()
	p := make([]byte, 10)
	if n, err := f.(io.ReaderAt).ReadAt(p, tb-5); n != 5 || err != io.EOF || !bytes.Equal(p[:5], make([]byte, 5)) {
		t.Fatalf("ReadAt at the end: %d, %v", n, err)
	}
}

// TestIssue16SeekData: Seek takes SEEK_DATA and SEEK_HOLE as lseek does,
// over the holes of a format-3 content.
func TestIssue16SeekData(t *testing.T) {
	const fr = packformat.FrameSize
	data := make([]byte, 8*fr+100)
	copy(data[2*fr:], "extent one")
	copy(data[5*fr+10:], "extent two")
	data[len(data)-1] = 1
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, fstest.MapFS{"s": {Data: data}, "plain": {Data: []byte("abc")}}))
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	must(t, err)
	defer r.Close()
	f, err := r.Open("s")
	must(t, err)
	defer f.Close()
	sk := f.(io.Seeker)
	for _, c := range []struct {
		off    int64
		whence int
		want   int64
	}{
		{0, packreader.SeekData, 2 * fr}, {0, packreader.SeekHole, 0},
		{2*fr + 5, packreader.SeekData, 2*fr + 5}, {2 * fr, packreader.SeekHole, 3 * fr},
		{3 * fr, packreader.SeekData, 5 * fr}, {5 * fr, packreader.SeekHole, 6 * fr},
		{6 * fr, packreader.SeekData, 8 * fr}, {8 * fr, packreader.SeekHole, 8*fr + 100},
	} {
		got, err := sk.Seek(c.off, c.whence)
		if err != nil || got != c.want {
			t.Errorf("Seek(%d, %d) = %d, %v; want %d", c.off, c.whence, got, err, c.want)
		}
	}
	if _, err := sk.Seek(int64(len(data)), packreader.SeekData); !errors.Is(err, syscall.ENXIO) {
		t.Errorf("SEEK_DATA at the end: %v, want ENXIO", err)
	}
	p, err := r.Open("plain")
	must(t, err)
	defer p.Close()
	if got, err := p.(io.Seeker).Seek(1, packreader.SeekHole); got != 3 || err != nil {
		t.Errorf("SEEK_HOLE in a file without holes: %d, %v", got, err)
	}
}

// checkingWriter compares what it is given with want, calling each (if
// set) before it looks at the bytes of each Write.
type checkingWriter struct {
	want []byte
	off  int
	each func()
	bad  bool
}

func (w *checkingWriter) Write(p []byte) (int, error) {
	if w.each != nil {
		w.each()
	}
	if !bytes.Equal(p, w.want[w.off:w.off+len(p)]) {
		w.bad = true
	}
	w.off += len(p)
	return len(p), nil
}

// TestIssue16WriteToInPlace: WriteTo gives w the bytes of decompressed
// frames where they lie in the cache. They must stay what they are while
// w runs: with other reads evicting them from a cache of two frames, and
// with the Reader closed and another one reading the same pack, whose
// frames take buffers the closed one gave up.
func TestIssue16WriteToInPlace(t *testing.T) {
	big := textish(8, 12*packformat.ZstdFrameSize+999)
	path := filepath.Join(t.TempDir(), "p.pack")
	f, err := os.Create(path)
	must(t, err)
	must(t, packwriter.Write(f, fstest.MapFS{"big": {Data: big}}, packwriter.WithCompression(3)))
	must(t, f.Close())
	// Another pack, of other bytes.
	otherBig := textish(9, len(big))
	otherPath := filepath.Join(t.TempDir(), "q.pack")
	f, err = os.Create(otherPath)
	must(t, err)
	must(t, packwriter.Write(f, fstest.MapFS{"big": {Data: otherBig}}, packwriter.WithCompression(3)))
	must(t, f.Close())
	t.Run("evicted", func(t *testing.T) {
		r, err := packreader.Open(path, packreader.WithCacheSize(2*packformat.ZstdFrameSize))
		must(t, err)
		defer r.Close()
		h, err := r.Open("big")
		must(t, err)
		defer h.Close()
		other, err := r.Open("big")
		must(t, err)
		defer other.Close()
		rng := rand.New(rand.NewPCG(1, 2))
		buf := make([]byte, 300<<10)
		w := &checkingWriter{want: big, each: func() {
			// Touch three frames elsewhere: the cache holds two.
			for range 3 {
				off := rng.Int64N(int64(len(big)))
				n, _ := other.(io.ReaderAt).ReadAt(buf, off)
				if !bytes.Equal(buf[:n], big[off:off+int64(n)]) {
					t.Errorf("ReadAt %d: wrong bytes", off)
				}
			}
		}}
		n, err := h.(io.WriterTo).WriteTo(w)
		if err != nil || n != int64(len(big)) || w.bad {
			t.Errorf("WriteTo: %d bytes, %v, wrong bytes %v", n, err, w.bad)
		}
	})
	t.Run("closed", func(t *testing.T) {
		r, err := packreader.Open(path)
		must(t, err)
		h, err := r.Open("big")
		must(t, err)
		closed := false
		w := &checkingWriter{want: big}
		w.each = func() {
			if closed {
				return
			}
			// While w holds the first frame, the Reader closes and
			// another one reads a whole pack of other bytes: the bytes
			// w was given must not change under it.
			closed = true
			must(t, r.Close())
			r2, err := packreader.Open(otherPath)
			must(t, err)
			defer r2.Close()
			got, err := r2.ReadFile("big")
			if err != nil || !bytes.Equal(got, otherBig) {
				t.Errorf("ReadFile from a second Reader: %v", err)
			}
		}
		n, err := h.(io.WriterTo).WriteTo(w)
		if w.bad {
			t.Errorf("WriteTo gave w bytes that changed under it (%d bytes, %v)", n, err)
		}
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("WriteTo after Close: %d bytes, %v, want ErrClosed", n, err)
		}
	})
}

// TestIssue16ParallelReadFile: ReadFile of a large compressed file
// decompresses its frames on several goroutines. The copy is the
// content's, for one with holes after another file's frame; a damaged frame fails it with ErrCorrupt; a mapped pack
// truncated under it fails it with ErrChanged, on whichever goroutine
// touched the lost page, without killing the process.
func TestIssue16ParallelReadFile(t *testing.T) {
	const frame = packformat.ZstdFrameSize
	big := textish(10, 6*frame+12345)
	clear(big[2*frame : 4*frame+7]) // two whole frames of zeros: holes
	tree := fstest.MapFS{
		"a-small": {Data: textish(11, 3000)},
		"big":     {Data: big},
	}
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(path, tree, packwriter.WithCompression(3)))
	data, err := os.ReadFile(path)
	must(t, err)
	_, frames := framesOf(t, data)
	holes := 0
	for _, f := range frames {
		if f.Stored == 0 && f.Pos < frames[len(frames)-1].Pos {
			holes++
		}
	}
	if holes == 0 {
		t.Fatal("no hole in the pack")
	}
	for _, mapped := range []bool{false, true} {
		var r *packreader.Reader
		if mapped {
			r, err = packreader.Open(path, packreader.WithCacheSize(0))
		} else {
			r, err = packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)), packreader.WithCacheSize(0))
		}
		must(t, err)
		for range 2 {
			got, err := r.ReadFile("big")
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("mapped %v: ReadFile: %v, equal %v", mapped, err, bytes.Equal(got, big))
			}
		}
		must(t, r.Close())
	}
	// A damaged frame in the middle of the content.
	bad := bytes.Clone(data)
	for k, f := range frames {
		if k > 4 && f.Stored != 0 && f.Stored != uint32(frames[k+1].Pos-f.Pos) {
			bad[f.Off+5] ^= 0x40
			break
		}
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(bad), int64(len(bad)))
	must(t, err)
	if _, err := r.ReadFile("big"); !errors.Is(err, packreader.ErrCorrupt) {
		t.Errorf("ReadFile over a damaged frame: %v, want ErrCorrupt", err)
	}
	r.Close()
	// Truncated while mapped, past the first frame of big.
	r, err = packreader.Open(path, packreader.WithCacheSize(0))
	must(t, err)
	defer r.Close()
	// A first read loads the tables: the goroutines then fault on the
	// frames' stored bytes.
	_, err = r.ReadFile("big")
	must(t, err)
	must(t, os.Truncate(path, int64(frames[2].Off)))
	if _, err := r.ReadFile("big"); !errors.Is(err, packreader.ErrChanged) {
		t.Errorf("ReadFile of a truncated pack: %v, want ErrChanged", err)
	}
}

// TestReadFileDamagedFrameCostsNoCopy: ReadFile of a compressed content
// whose third frame is damaged fails before it allocates the content's
// copy, through a mapping and through an io.ReaderAt. It used to check only
// the first frame first, so a pack of a kilobyte whose content claimed a
// megabyte cost a megabyte per failed call (found by FuzzOpen).
func TestReadFileDamagedFrameCostsNoCopy(t *testing.T) {
	const size = 4 << 20
	name := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(name, fstest.MapFS{"big": {Data: textish(5, size), Mode: 0o644}}, packwriter.WithCompression(3)))
	data, err := os.ReadFile(name)
	must(t, err)
	_, frames := framesOf(t, data)
	if len(frames) < 4 || frames[2].Stored == 0 {
		t.Fatalf("want 3 stored frames or more, got %+v", frames)
	}
	data[frames[2].Off+uint64(frames[2].Stored)/2] ^= 0x40
	must(t, os.WriteFile(name, data, 0o644))
	mapped, err := packreader.Open(name)
	must(t, err)
	defer mapped.Close()
	viaRA, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	for how, r := range map[string]*packreader.Reader{"mapped": mapped, "ReaderAt": viaRA} {
		for range 2 { // the second call finds the frames checked
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b, err := r.ReadFile("big")
			runtime.ReadMemStats(&after)
			if !errors.Is(err, packreader.ErrCorrupt) || b != nil {
				t.Fatalf("%s: ReadFile: %d bytes, %v; want ErrCorrupt", how, len(b), err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > size/4 {
				t.Errorf("%s: a failed ReadFile of %d bytes allocated %d", how, size, got)
			}
		}
		// The frames before the damaged one still read.
		f, err := r.Open("big")
		must(t, err)
		got, err := io.ReadAll(io.LimitReader(f, int64(frames[2].Pos-frames[0].Pos)))
		must(t, err)
		if want := textish(5, size)[:len(got)]; !bytes.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s: the %d bytes before the damage read wrong", how, len(got))
		}
		f.Close()
	}
}
