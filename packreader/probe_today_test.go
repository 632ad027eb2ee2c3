package packreader_test

import (
	"bytes"
	"encoding/binary"
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

// probeManyPack is a compressed pack of four files of three frames and a
// bit each, written once.
var probeManyPack = sync.OnceValues(func() ([]byte, map[string][]byte) {
	files := map[string][]byte{}
	tree := fstest.MapFS{}
	for k := range 4 {
		name := fmt.Sprintf("f%d", k)
		files[name] = textish(uint64(40+k), 3*packformat.ZstdFrameSize+1000*(k+1))
		tree[name] = &fstest.MapFile{Data: files[name]}
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, tree, packwriter.WithCompression(3)); err != nil {
		panic(err)
	}
	return buf.Bytes(), files
})

// TestProbeReadAheadManyFiles: four files read in sequence at once
// through one Reader whose cache holds no more than a few frames beside
// what is read ahead (8 MiB: one frame ahead; 16 MiB: two), so that the
// frames read ahead for one file are evicted by the others', or too
// small for any read-ahead (4 MiB): every reader gets its file's bytes,
// and no goroutine outlives the Reader.
func TestProbeReadAheadManyFiles(t *testing.T) {
	base := runtime.NumGoroutine()
	data, files := probeManyPack()
	rounds := 1
	if !testsize.Short() && !raceEnabled { // full size, but not under the race detector (10x)
		rounds = 8
	}
	for _, cache := range []int64{4 << 20, 8 << 20, 16 << 20, packreader.DefaultCacheSize} {
		for round := range rounds {
			r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)), packreader.WithCacheSize(cache))
			must(t, err)
			var wg sync.WaitGroup
			for name, want := range files {
				for k := range 2 {
					wg.Go(func() {
						f, err := r.Open(name)
						if err != nil {
							t.Error(err)
							return
						}
						defer f.Close()
						var got bytes.Buffer
						bufSize := 4 << 10
						if k == 1 {
							bufSize = 32 << 10
						}
						_, err = io.CopyBuffer(struct{ io.Writer }{&got}, struct{ io.Reader }{f}, make([]byte, bufSize))
						if err != nil || !bytes.Equal(got.Bytes(), want) {
							t.Errorf("cache %d round %d: %s with %d-byte reads: %v, %d bytes, equal %v",
								cache, round, name, bufSize, err, got.Len(), bytes.Equal(got.Bytes(), want))
						}
					})
				}
			}
			wg.Wait()
			must(t, r.Close())
		}
	}
	checkGoroutines(t, base)
}

// TestProbeReadAheadSwitch: a file read in sequence (so that frames are
// read ahead), then at random by ReadAt and by Seek and Read, then in
// sequence again from a new place, returns the content's bytes at every
// read, and Seek reports the offset that the reads left.
func TestProbeReadAheadSwitch(t *testing.T) {
	const frame = packformat.ZstdFrameSize
	base := runtime.NumGoroutine()
	data, big, _ := aheadPack(t)
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	defer r.Close()
	f, err := r.Open("big")
	must(t, err)
	rs := f.(io.ReadSeeker)
	ra := f.(io.ReaderAt)
	rng := rand.New(rand.NewPCG(3, 4))
	var pos int64
	p := make([]byte, 32<<10)
	read := func(what string) {
		t.Helper()
		n, err := rs.Read(p)
		end := min(pos+int64(len(p)), int64(len(big)))
		if pos >= int64(len(big)) {
			if n != 0 || err != io.EOF {
				t.Fatalf("%s: Read at %d (end) = %d, %v", what, pos, n, err)
			}
			return
		}
		if err != nil && err != io.EOF || !bytes.Equal(p[:n], big[pos:end]) {
			t.Fatalf("%s: Read at %d = %d, %v; want %d bytes", what, pos, n, err, end-pos)
		}
		pos += int64(n)
		if got, err := rs.Seek(0, io.SeekCurrent); err != nil || got != pos {
			t.Fatalf("%s: offset %d, %v, want %d", what, got, err, pos)
		}
	}
	for range 5 {
		read("sequential")
	}
	for k := range 60 {
		switch k % 3 {
		case 0:
			off := rng.Int64N(int64(len(big)) + 100)
			n, err := ra.ReadAt(p, off)
			end := min(off+int64(len(p)), int64(len(big)))
			if off >= int64(len(big)) {
				if n != 0 || err != io.EOF {
					t.Fatalf("ReadAt %d past the end = %d, %v", off, n, err)
				}
				continue
			}
			if (err != nil && err != io.EOF) || !bytes.Equal(p[:n], big[off:end]) || n != int(end-off) {
				t.Fatalf("ReadAt %d = %d, %v; want %d bytes", off, n, err, end-off)
			}
		case 1:
			// ReadAt does not move the offset.
			read("after ReadAt")
		case 2:
			off := rng.Int64N(int64(len(big)))
			got, err := rs.Seek(off, io.SeekStart)
			if err != nil || got != off {
				t.Fatalf("Seek %d = %d, %v", off, got, err)
			}
			pos = off
			read("after Seek")
		}
	}
	// In sequence again, from frame 2, to the end.
	pos = 2*frame + 17
	if _, err := rs.Seek(pos, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	for pos < int64(len(big)) {
		read("sequential again")
	}
	read("at the end")
	must(t, f.Close())
	checkGoroutines(t, base)
}

// TestProbeReadAheadDamagedFarAhead: a damaged last frame, far past the
// frames a reader reads: a reader that stops before it and closes sees
// no error, ReadAt of every frame before it reads, ReadFile fails with
// ErrCorrupt, and a reader in sequence fails at the damaged frame's first
// byte, after every byte before it.
func TestProbeReadAheadDamagedFarAhead(t *testing.T) {
	const frame = packformat.ZstdFrameSize
	base := runtime.NumGoroutine()
	data, big, frames := aheadPack(t)
	last := frames[len(frames)-1]
	data[last.Off+uint64(last.Stored)/2] ^= 0x20
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	defer r.Close()

	f, err := r.Open("big")
	must(t, err)
	p := make([]byte, 32<<10)
	for off := 0; off < 3*frame; {
		n, err := f.Read(p)
		if err != nil || !bytes.Equal(p[:n], big[off:off+n]) {
			t.Fatalf("read at %d: %v", off, err)
		}
		off += n
	}
	must(t, f.Close())

	f, err = r.Open("big")
	must(t, err)
	for k := range len(frames) - 1 {
		off := int64(k*frame + 5)
		if n, err := f.(io.ReaderAt).ReadAt(p, off); err != nil || !bytes.Equal(p[:n], big[off:off+int64(len(p))]) {
			t.Fatalf("ReadAt %d: %v", off, err)
		}
	}
	must(t, f.Close())

	if b, err := r.ReadFile("big"); !errors.Is(err, packreader.ErrCorrupt) || b != nil {
		t.Errorf("ReadFile: %d bytes, %v; want none and ErrCorrupt", len(b), err)
	}

	f, err = r.Open("big")
	must(t, err)
	var got bytes.Buffer
	_, err = copy32K(&got, f)
	want := int(len(frames)-1) * frame
	if !errors.Is(err, packreader.ErrCorrupt) || got.Len() != want || !bytes.Equal(got.Bytes(), big[:want]) {
		t.Errorf("sequential read: %d bytes, then %v; want %d bytes, then ErrCorrupt", got.Len(), err, want)
	}
	must(t, f.Close())
	checkGoroutines(t, base)
}

// probeWordsPack is a compressed pack of one file of five frames whose
// every 4-byte word is its own offset, written once.
var probeWordsPack = sync.OnceValues(func() ([]byte, []byte) {
	words := make([]byte, 5*packformat.ZstdFrameSize)
	for i := 0; i < len(words); i += 4 {
		binary.BigEndian.PutUint32(words[i:], uint32(i))
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, fstest.MapFS{"w": {Data: words}}, packwriter.WithCompression(3)); err != nil {
		panic(err)
	}
	return buf.Bytes(), words
})

// TestProbeReadAheadSharedHandle: one file read by several goroutines at
// once through Read (each read of whole words, so that each says where
// it came from), beside ReadAt and Seek(0, SeekCurrent) on it, reads each
// byte once; and with a Close racing them, every call after the Close
// fails with fs.ErrClosed, every one before it returns the content's
// bytes, and no goroutine outlives the Close.
func TestProbeReadAheadSharedHandle(t *testing.T) {
	base := runtime.NumGoroutine()
	data, words := probeWordsPack()
	_, all := framesOf(t, data)
	for _, fr := range all[:len(all)-1] {
		if fr.Stored == 0 {
			t.Fatal("the pack is not compressed")
		}
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	defer r.Close()
	rounds := 4
	if !testsize.Short() && !raceEnabled { // full size, but not under the race detector (10x)
		rounds = 40
	}
	for round := range rounds {
		closeAt := -1
		if round%2 == 1 {
			closeAt = 20 + round*7
		}
		f, err := r.Open("w")
		must(t, err)
		seen := make([]int, len(words))
		var mu sync.Mutex
		var calls sync.WaitGroup
		var closed sync.Once
		var closedDone bool // under mu: Close has returned
		var count int
		doClose := func() {
			closed.Do(func() {
				must(t, f.Close())
				mu.Lock()
				closedDone = true
				mu.Unlock()
			})
		}
		for g := range 4 {
			calls.Go(func() {
				p := make([]byte, 4*(1024+g*1500))
				for k := 0; ; k++ {
					if g == 3 && closeAt < 0 && k == 200 {
						return
					}
					mu.Lock()
					count++
					if count == closeAt {
						mu.Unlock()
						doClose()
						mu.Lock()
					}
					wasClosed := closedDone
					mu.Unlock()
					var n int
					var err error
					if g == 3 {
						off := int64(rand.IntN(len(words)/4)) * 4
						n, err = f.(io.ReaderAt).ReadAt(p, off)
						if err == nil && !bytes.Equal(p[:n], words[off:off+int64(n)]) {
							t.Errorf("ReadAt %d: wrong bytes", off)
							return
						}
						if err == io.EOF {
							continue
						}
						if _, serr := f.(io.Seeker).Seek(0, io.SeekCurrent); serr != nil && !errors.Is(serr, fs.ErrClosed) {
							t.Errorf("Seek: %v", serr)
						}
					} else {
						n, err = f.Read(p)
						if n > 0 {
							if n%4 != 0 {
								t.Errorf("Read of %d bytes", n)
								return
							}
							off := int(binary.BigEndian.Uint32(p))
							if off+n > len(words) || !bytes.Equal(words[off:off+n], p[:n]) {
								t.Errorf("Read: %d bytes found nowhere", n)
								return
							}
							mu.Lock()
							for i := off; i < off+n; i++ {
								seen[i]++
							}
							mu.Unlock()
						}
						if err == io.EOF {
							if closeAt < 0 {
								return
							}
							continue
						}
					}
					if wasClosed && !errors.Is(err, fs.ErrClosed) {
						t.Errorf("goroutine %d: after Close: %d, %v", g, n, err)
						return
					}
					if errors.Is(err, fs.ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("goroutine %d: %v", g, err)
						return
					}
				}
			})
		}
		calls.Wait()
		doClose()
		for i, c := range seen {
			if c > 1 || closeAt < 0 && c != 1 {
				t.Fatalf("round %d: byte %d read %d times", round, i, c)
			}
		}
	}
	checkGoroutines(t, base)
}

// TestProbeReadAheadReaderClose: eight readers of four files in sequence
// through one Reader, a mapping or an io.ReaderAt, closed under them at
// a random point: every read before returns the files' bytes, every
// read after fails with fs.ErrClosed, and no goroutine outlives the
// Reader's Close and the files'.
func TestProbeReadAheadReaderClose(t *testing.T) {
	base := runtime.NumGoroutine()
	data, files := probeManyPack()
	path := filepath.Join(t.TempDir(), "p.pack")
	must(t, os.WriteFile(path, data, 0o644))
	rounds := 6
	if !testsize.Short() && !raceEnabled { // full size, but not under the race detector (10x)
		rounds = 60
	}
	rng := rand.New(rand.NewPCG(8, 8))
	for round := range rounds {
		var r *packreader.Reader
		var err error
		if round%2 == 0 {
			r, err = packreader.Open(path, packreader.WithCacheSize(16<<20))
		} else {
			r, err = packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)), packreader.WithCacheSize(16<<20))
		}
		must(t, err)
		var wg sync.WaitGroup
		var started sync.WaitGroup
		for name, want := range files {
			for range 2 {
				started.Add(1)
				wg.Go(func() {
					f, err := r.Open(name)
					started.Done()
					if err != nil {
						if !errors.Is(err, fs.ErrClosed) {
							t.Errorf("open %s: %v", name, err)
						}
						return
					}
					defer f.Close()
					p := make([]byte, 32<<10)
					for off := 0; ; {
						n, err := f.Read(p)
						if !bytes.Equal(p[:n], want[off:off+n]) {
							t.Errorf("round %d: %s: wrong bytes at %d", round, name, off)
							return
						}
						off += n
						if err == io.EOF && off == len(want) {
							return
						}
						if err != nil {
							if !errors.Is(err, fs.ErrClosed) {
								t.Errorf("round %d: %s at %d: %v", round, name, off, err)
							}
							return
						}
					}
				})
			}
		}
		started.Wait()
		time.Sleep(time.Duration(rng.IntN(20000)) * time.Microsecond)
		must(t, r.Close())
		wg.Wait()
	}
	checkGoroutines(t, base)
}
