package packreader_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// recordingAt counts the reads through it by offset: a frame's stored
// bytes are read in one ReadAt at the frame's offset, so the count at
// that offset is how many times the frame was decompressed.
type recordingAt struct {
	r  io.ReaderAt
	mu sync.Mutex
	at map[int64]int
}

func newRecordingAt(data []byte) *recordingAt {
	return &recordingAt{r: bytes.NewReader(data), at: map[int64]int{}}
}

func (c *recordingAt) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	c.at[off]++
	c.mu.Unlock()
	return c.r.ReadAt(p, off)
}

func (c *recordingAt) count(off uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[int64(off)]
}

// waitFor polls cond for up to 20 s and reports whether it came true.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// checkGoroutines fails t unless the goroutines are back to base.
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	if !waitFor(func() bool { return runtime.NumGoroutine() <= base }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
	}
}

// aheadPack is a compressed pack of a 9-frame file big, after a small
// file whose bytes share big's first frame, and the frames of big.
// It is written once; each call returns a copy of the pack.
func aheadPack(t *testing.T) (data, big []byte, frames []packformat.Frame) {
	t.Helper()
	p := aheadPackOnce()
	must(t, p.err)
	data, big = bytes.Clone(p.data), p.big
	_, all := framesOf(t, data)
	for k, f := range all[:len(all)-1] {
		if f.Stored != 0 && f.Stored == uint32(all[k+1].Pos-f.Pos) {
			t.Fatalf("frame %d is raw", k)
		}
	}
	// a-small's 3000 bytes come first in the stream.
	for k, f := range all[:len(all)-1] {
		if all[k+1].Pos > 3000 {
			frames = append(frames, f)
		}
	}
	if len(frames) != 9 {
		t.Fatalf("big has %d frames, want 9", len(frames))
	}
	return data, big, frames
}

var aheadPackOnce = sync.OnceValue(func() (p struct {
	data, big []byte
	err       error
}) {
	p.big = textish(20, 8*packformat.ZstdFrameSize+12345)
	var buf bytes.Buffer
	p.err = packwriter.Write(&buf, fstest.MapFS{
		"a-small": {Data: textish(21, 3000)},
		"big":     {Data: p.big},
	}, packwriter.WithCompression(3))
	p.data = buf.Bytes()
	return p
})

// copy32K copies src to dst hiding all but Read and Write, so that io.Copy
// reads with its 32 KiB buffer.
func copy32K(dst io.Writer, src io.Reader) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 32<<10))
}

// TestIssue16ReadAhead: a file read in sequence with a small buffer
// has the frames after its own decompressed ahead of it, each once; a
// file read at random offsets has no frame decompressed that it did not
// touch.
func TestIssue16ReadAhead(t *testing.T) {
	const frame = packformat.ZstdFrameSize
	base := runtime.NumGoroutine()
	data, big, frames := aheadPack(t)
	rec := newRecordingAt(data)
	r, err := packreader.OpenReaderAt(rec, int64(len(data)))
	must(t, err)
	defer r.Close()
	f, err := r.Open("big")
	must(t, err)
	var got bytes.Buffer
	p := make([]byte, 32<<10)
	for range 2 {
		n, err := f.Read(p)
		must(t, err)
		got.Write(p[:n])
	}
	// Two reads in frame 0: frame 1 is read ahead, without a read
	// coming to it.
	if !waitFor(func() bool { return rec.count(frames[1].Off) > 0 }) {
		t.Fatal("frame 1 was not read ahead")
	}
	if _, err := copy32K(&got, f); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), big) {
		t.Fatal("sequential read: wrong bytes")
	}
	must(t, f.Close())
	for k, fr := range frames {
		if n := rec.count(fr.Off); n != 1 {
			t.Errorf("frame %d of big decompressed %d times, want 1", k, n)
		}
	}
	checkGoroutines(t, base)

	// At random: ReadAt and Read after Seek, never where the last read
	// ended.
	rec = newRecordingAt(data)
	r2, err := packreader.OpenReaderAt(rec, int64(len(data)))
	must(t, err)
	defer r2.Close()
	f, err = r2.Open("big")
	must(t, err)
	ra := f.(io.ReadSeeker)
	touched := map[int]bool{}
	for _, off := range []int64{5*frame + 7, 2*frame + 100, 6*frame + 3, 5*frame + 32<<10 + 7 + 1, 0} {
		for _, seek := range []bool{false, true} {
			var n int
			if seek {
				_, err = ra.Seek(off, io.SeekStart)
				must(t, err)
				n, err = ra.Read(p)
			} else {
				n, err = f.(io.ReaderAt).ReadAt(p, off)
			}
			if err != nil || !bytes.Equal(p[:n], big[off:off+int64(len(p))]) {
				t.Fatalf("read at %d: %v", off, err)
			}
			touched[int(off/frame)] = true
		}
	}
	must(t, f.Close()) // waits for any read ahead
	for k, fr := range frames {
		want := 0
		if touched[k] {
			want = 1
		}
		if n := rec.count(fr.Off); n != want {
			t.Errorf("random reads: frame %d of big decompressed %d times, want %d", k, n, want)
		}
	}
	checkGoroutines(t, base)
}

// TestIssue16ReadAheadBeside: sequential readers of one file, with
// read-ahead, beside random readers, ReadFile and WriteTo of the same
// frames, through one Reader and a cache large or small enough to evict
// frames read ahead: every read returns the content's bytes.
func TestIssue16ReadAheadBeside(t *testing.T) {
	base := runtime.NumGoroutine()
	data, big, _ := aheadPack(t)
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, os.WriteFile(path, data, 0o644))
	rounds := 4
	if testsize.Short() {
		rounds = 1
	}
	for _, mapped := range []bool{false, true} {
		for _, cache := range []int64{packreader.DefaultCacheSize, 9 << 20} {
			for round := range rounds {
				name := fmt.Sprintf("mapped=%v/cache=%d/round=%d", mapped, cache, round)
				var r *packreader.Reader
				var err error
				if mapped {
					r, err = packreader.Open(path, packreader.WithCacheSize(cache))
				} else {
					r, err = packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)), packreader.WithCacheSize(cache))
				}
				must(t, err)
				var wg sync.WaitGroup
				fail := func(format string, args ...any) { t.Errorf(name+": "+format, args...) }
				for k := range 3 {
					wg.Go(func() {
						f, err := r.Open("big")
						if err != nil {
							fail("open: %v", err)
							return
						}
						defer f.Close()
						var got bytes.Buffer
						if k == 0 {
							// bufio's default buffer.
							_, err = io.CopyBuffer(struct{ io.Writer }{&got}, struct{ io.Reader }{f}, make([]byte, 4<<10))
						} else {
							_, err = copy32K(&got, f)
						}
						if err != nil || !bytes.Equal(got.Bytes(), big) {
							fail("sequential reader %d: %v, equal %v", k, err, bytes.Equal(got.Bytes(), big))
						}
					})
				}
				wg.Go(func() {
					f, err := r.Open("big")
					if err != nil {
						fail("open: %v", err)
						return
					}
					defer f.Close()
					rng := rand.New(rand.NewPCG(uint64(round), 7))
					p := make([]byte, 5000)
					for range 200 {
						off := rng.Int64N(int64(len(big)))
						n, err := f.(io.ReaderAt).ReadAt(p, off)
						if (err != nil && err != io.EOF) || !bytes.Equal(p[:n], big[off:min(off+int64(len(p)), int64(len(big)))]) {
							fail("ReadAt %d: %v", off, err)
							return
						}
					}
				})
				wg.Go(func() {
					if b, err := r.ReadFile("big"); err != nil || !bytes.Equal(b, big) {
						fail("ReadFile: %v", err)
					}
				})
				wg.Go(func() {
					f, err := r.Open("big")
					if err != nil {
						fail("open: %v", err)
						return
					}
					defer f.Close()
					var got bytes.Buffer
					if _, err := io.Copy(&got, f); err != nil || !bytes.Equal(got.Bytes(), big) {
						fail("WriteTo: %v", err)
					}
				})
				wg.Wait()
				must(t, r.Close())
			}
		}
	}
	checkGoroutines(t, base)
}

// TestIssue16ReadAheadClose: a file read in sequence, with frames read
// ahead, closed or its Reader closed at any point: reads after that fail
// with fs.ErrClosed, reads before it return the content's bytes, and no
// goroutine outlives the file's Close or, where the file is left open,
// the Reader's.
func TestIssue16ReadAheadClose(t *testing.T) {
	base := runtime.NumGoroutine()
	data, big, _ := aheadPack(t)
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, os.WriteFile(path, data, 0o644))
	rounds := 100
	if testsize.Short() {
		rounds = 12
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range rounds {
		closeReader := round%2 == 1
		var r *packreader.Reader
		var err error
		if round%4 < 2 {
			r, err = packreader.Open(path)
		} else {
			r, err = packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		}
		must(t, err)
		f, err := r.Open("big")
		must(t, err)
		started := make(chan struct{})
		done := make(chan error)
		go func() {
			p := make([]byte, 32<<10)
			var off int
			for {
				n, err := f.Read(p)
				if !bytes.Equal(p[:n], big[off:off+n]) {
					done <- fmt.Errorf("wrong bytes at %d", off)
					return
				}
				if off == 0 {
					close(started)
				}
				off += n
				if err != nil {
					if err == io.EOF && off == len(big) {
						err = nil
					}
					done <- err
					return
				}
			}
		}()
		<-started
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		if closeReader {
			must(t, r.Close())
		} else {
			must(t, f.Close())
		}
		if err := <-done; err != nil && !errors.Is(err, fs.ErrClosed) {
			t.Fatalf("round %d: read: %v", round, err)
		}
		if closeReader {
			f.Close()
		} else {
			must(t, r.Close())
		}
	}
	checkGoroutines(t, base)
}

// TestIssue16ReadAheadDamaged: a damaged frame that read-ahead
// decompressed first fails the sequential read at that frame's first
// byte, not before: every byte before it comes back.
func TestIssue16ReadAheadDamaged(t *testing.T) {
	const frame = packformat.ZstdFrameSize
	data, big, frames := aheadPack(t)
	data[frames[4].Off+uint64(frames[4].Stored)/2] ^= 0x40
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, os.WriteFile(path, data, 0o644))
	for _, mapped := range []bool{false, true} {
		rec := newRecordingAt(data)
		var r *packreader.Reader
		var err error
		if mapped {
			r, err = packreader.Open(path)
		} else {
			r, err = packreader.OpenReaderAt(rec, int64(len(data)))
		}
		must(t, err)
		f, err := r.Open("big")
		must(t, err)
		p := make([]byte, 32<<10)
		var got bytes.Buffer
		for got.Len() < 3*frame+64<<10 {
			n, err := f.Read(p)
			must(t, err)
			got.Write(p[:n])
		}
		// A read launches read-ahead only while fewer goroutines than
		// its depth run: on a loaded machine those of frames 2 and 3
		// may still run at the last read, which then launches none.
		// Reads go on, a few KiB at a time, short of the damaged frame,
		// until one has launched it.
		fetched := func() bool { return mapped || rec.count(frames[4].Off) > 0 }
		for small := p[:4<<10]; !fetched() && got.Len()+len(small) < 4*frame; {
			n, err := f.Read(small)
			must(t, err)
			got.Write(small[:n])
			time.Sleep(100 * time.Microsecond)
		}
		if !waitFor(fetched) {
			t.Fatal("the damaged frame was not read ahead")
		}
		// A 32 KiB read that straddles the damaged frame's start returns
		// the bytes before it, and the next read the error, as read(2)
		// does: each tries the frame.
		want := 2
		if got.Len()%(32<<10) != 0 {
			want = 3
		}
		_, err = copy32K(&got, f)
		if !errors.Is(err, packreader.ErrCorrupt) || got.Len() != 4*frame || !bytes.Equal(got.Bytes(), big[:4*frame]) {
			t.Errorf("mapped %v: read %d bytes, then %v; want %d bytes, then ErrCorrupt", mapped, got.Len(), err, 4*frame)
		}
		if !mapped {
			if n := rec.count(frames[4].Off); n != want {
				t.Errorf("damaged frame read %d times, want %d (read ahead, then by each read that came to it)", n, want)
			}
		}
		// The frames after it read.
		if n, err := f.(io.ReaderAt).ReadAt(p, 5*frame); err != nil || !bytes.Equal(p[:n], big[5*frame:][:len(p)]) {
			t.Errorf("mapped %v: read after the damaged frame: %v", mapped, err)
		}
		must(t, f.Close())
		must(t, r.Close())
	}
}

// TestIssue16ReadAheadTruncated: a mapped pack truncated under a
// sequential read fails the read with ErrChanged where the lost pages
// begin, without killing the process: read-ahead goroutines that touch
// them recover the fault as reads do.
func TestIssue16ReadAheadTruncated(t *testing.T) {
	const frame = packformat.ZstdFrameSize
	base := runtime.NumGoroutine()
	data, big, frames := aheadPack(t)
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, os.WriteFile(path, data, 0o644))
	r, err := packreader.Open(path)
	must(t, err)
	defer r.Close()
	// Load the tables before the cut.
	if _, err := r.ReadFile("a-small"); err != nil {
		t.Fatal(err)
	}
	f, err := r.Open("big")
	must(t, err)
	defer f.Close()
	must(t, os.Truncate(path, int64(frames[3].Off)))
	p := make([]byte, 32<<10)
	var got bytes.Buffer
	for got.Len() < 2*frame+64<<10 {
		n, err := f.Read(p)
		must(t, err)
		got.Write(p[:n])
	}
	// Frames 3 and on are read ahead by now, or being: let those
	// goroutines run into the lost pages before the read does (if they
	// do not, the test still checks the read).
	waitFor(func() bool { return runtime.NumGoroutine() <= base })
	_, err = copy32K(&got, f)
	if !errors.Is(err, packreader.ErrChanged) || got.Len() != 3*frame || !bytes.Equal(got.Bytes(), big[:3*frame]) {
		t.Errorf("read %d bytes, then %v; want %d, then ErrChanged", got.Len(), err, 3*frame)
	}
}

// TestReadStraddlingDamage: a read that starts before a damaged frame and
// ends in it returns the bytes before it, as read(2) does: Read with no
// error, the error at the next Read, which starts at the damage; ReadAt
// with the error, as io.ReaderAt says. Through a mapping and through an
// io.ReaderAt, without read-ahead (the reads are not in sequence).
func TestReadStraddlingDamage(t *testing.T) {
	const frame = packformat.ZstdFrameSize
	data, big, frames := aheadPack(t)
	data[frames[4].Off+uint64(frames[4].Stored)/2] ^= 0x40
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, os.WriteFile(path, data, 0o644))
	for _, mapped := range []bool{false, true} {
		var r *packreader.Reader
		var err error
		if mapped {
			r, err = packreader.Open(path)
		} else {
			r, err = packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
		}
		must(t, err)
		f, err := r.Open("big")
		must(t, err)
		p := make([]byte, 4096)
		at := int64(4*frame - 1000)
		n, err := f.(io.ReaderAt).ReadAt(p, at)
		if n != 1000 || !errors.Is(err, packreader.ErrCorrupt) || !bytes.Equal(p[:n], big[at:at+1000]) {
			t.Errorf("mapped %v: ReadAt across the damage = %d, %v; want the 1000 bytes before it and ErrCorrupt", mapped, n, err)
		}
		_, err = f.(io.Seeker).Seek(at, io.SeekStart)
		must(t, err)
		n, err = f.Read(p)
		if n != 1000 || err != nil || !bytes.Equal(p[:n], big[at:at+1000]) {
			t.Errorf("mapped %v: Read across the damage = %d, %v; want the 1000 bytes before it and no error", mapped, n, err)
		}
		n, err = f.Read(p)
		if n != 0 || !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("mapped %v: the Read after = %d, %v; want ErrCorrupt", mapped, n, err)
		}
		must(t, f.Close())
		must(t, r.Close())
	}
}
