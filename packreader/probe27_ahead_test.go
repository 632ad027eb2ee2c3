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
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs/packreader"
)

// probe27Open opens the pack data mapped (from a file) or through an
// io.ReaderAt.
func probe27Open(t *testing.T, data []byte, mapped bool, opts ...packreader.Option) *packreader.Reader {
	t.Helper()
	if mapped {
		path := filepath.Join(t.TempDir(), "p.pack")
		must(t, os.WriteFile(path, data, 0o644))
		r, err := packreader.Open(path, opts...)
		must(t, err)
		return r
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)), opts...)
	must(t, err)
	return r
}

// suffixWriter checks that what is written to it is want from some
// offset on, up to its end (what WriteTo writes from a position it does
// not know).
type suffixWriter struct {
	want []byte
	got  bytes.Buffer
}

func (w *suffixWriter) Write(p []byte) (int, error) { return w.got.Write(p) }

func (w *suffixWriter) ok(complete bool) bool {
	g := w.got.Bytes()
	if len(g) > len(w.want) {
		return false
	}
	if complete {
		return bytes.Equal(g, w.want[len(w.want)-len(g):])
	}
	return bytes.Contains(w.want, g)
}

// closedOK reports whether err is nil, EOF, or says the file or Reader
// was closed.
func closedOK(err error) bool {
	return err == nil || err == io.EOF || errors.Is(err, fs.ErrClosed)
}

// TestProbe27AheadSharedHandles: goroutines read the files of a
// compressed pack through handles of their own (Read in sequence with
// small buffers, ReadAt in sequence, Seek back and forth, WriteTo) and
// through handles they share (ReadAt, Read, Seek, WriteTo at once), while
// one goroutine closes the shared handles at a random moment: every byte
// read is the file's, every error after a Close says the file is closed,
// and no goroutine outlives the Reader. Mapped and through an
// io.ReaderAt, with the default cache and one that allows a frame ahead.
func TestProbe27AheadSharedHandles(t *testing.T) {
	data, files := probeManyPack()
	names := []string{"f0", "f1", "f2", "f3"}
	for _, c := range []struct {
		mapped bool
		cache  int64
	}{{true, packreader.DefaultCacheSize}, {false, packreader.DefaultCacheSize}, {true, 8 << 20}, {false, 16 << 20}} {
		t.Run(fmt.Sprintf("mapped=%v,cache=%dM", c.mapped, c.cache>>20), func(t *testing.T) {
			base := runtime.NumGoroutine()
			r := probe27Open(t, data, c.mapped, packreader.WithCacheSize(c.cache))
			rng := rand.New(rand.NewPCG(27, uint64(c.cache)))
			shared := map[string]fs.File{}
			for _, n := range names {
				f, err := r.Open(n)
				must(t, err)
				shared[n] = f
			}
			var closedShared atomic.Bool
			var wg sync.WaitGroup
			for g := range 8 {
				seed := rng.Uint64()
				name := names[g%len(names)]
				want := files[name]
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(seed, 1))
					// Own handle.
					f, err := r.Open(name)
					if err != nil {
						t.Errorf("open %s: %v", name, err)
						return
					}
					switch g % 4 {
					case 0: // Read in sequence, 4 KiB at a time, with seeks back
						p := make([]byte, 4<<10)
						off := 0
						for off < len(want) {
							n, err := f.Read(p)
							if !bytes.Equal(p[:n], want[off:off+n]) {
								t.Errorf("%s: Read: wrong bytes at %d", name, off)
								break
							}
							off += n
							if err != nil && err != io.EOF {
								t.Errorf("%s: Read at %d: %v", name, off, err)
								break
							}
							if err == io.EOF {
								break
							}
							if rng.IntN(200) == 0 {
								back := rng.IntN(off + 1)
								got, err := f.(io.Seeker).Seek(int64(back), io.SeekStart)
								if err != nil || got != int64(back) {
									t.Errorf("%s: Seek(%d) = %d, %v", name, back, got, err)
									break
								}
								off = back
							}
						}
						if off != len(want) {
							t.Errorf("%s: read %d of %d bytes", name, off, len(want))
						}
					case 1: // ReadAt in sequence, 32 KiB pieces
						ra := f.(io.ReaderAt)
						p := make([]byte, 32<<10)
						for off := 0; off < len(want); {
							n, err := ra.ReadAt(p, int64(off))
							if !bytes.Equal(p[:n], want[off:off+n]) {
								t.Errorf("%s: ReadAt: wrong bytes at %d", name, off)
								break
							}
							off += n
							if err != nil && !(err == io.EOF && off == len(want)) {
								t.Errorf("%s: ReadAt at %d: %v", name, off, err)
								break
							}
						}
					case 2: // a few reads, then WriteTo from there
						p := make([]byte, 1000)
						pos := 0
						for range 3 {
							n, err := f.Read(p)
							if err != nil || !bytes.Equal(p[:n], want[pos:pos+n]) {
								t.Errorf("%s: Read at %d: %d, %v", name, pos, n, err)
							}
							pos += n
						}
						var b bytes.Buffer
						n, err := f.(io.WriterTo).WriteTo(&b)
						if err != nil || int(n) != len(want)-pos || !bytes.Equal(b.Bytes(), want[pos:]) {
							t.Errorf("%s: WriteTo from %d: %d, %v", name, pos, n, err)
						}
					case 3: // random ReadAt, then sequential
						ra := f.(io.ReaderAt)
						p := make([]byte, 8<<10)
						for range 20 {
							off := rng.IntN(len(want))
							n, err := ra.ReadAt(p, int64(off))
							if !bytes.Equal(p[:n], want[off:off+n]) || err != nil && err != io.EOF {
								t.Errorf("%s: ReadAt(%d): %d, %v", name, off, n, err)
							}
						}
						if _, err := io.Copy(io.Discard, struct{ io.Reader }{f}); err != nil {
							t.Errorf("%s: copy: %v", name, err)
						}
					}
					if err := f.Close(); err != nil {
						t.Errorf("%s: Close: %v", name, err)
					}
				})
				// Shared handles.
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(seed, 2))
					f := shared[name]
					p := make([]byte, 16<<10)
					for range 60 {
						wasClosed := closedShared.Load()
						switch rng.IntN(5) {
						case 0:
							off := rng.IntN(len(want))
							n, err := f.(io.ReaderAt).ReadAt(p, int64(off))
							if n > 0 && !bytes.Equal(p[:n], want[off:off+n]) {
								t.Errorf("shared %s: ReadAt(%d): wrong bytes", name, off)
							}
							if !closedOK(err) || wasClosed && !errors.Is(err, fs.ErrClosed) {
								t.Errorf("shared %s: ReadAt: %v (closed before: %v)", name, err, wasClosed)
							}
						case 1, 2:
							n, err := f.Read(p)
							if n > 0 && !bytes.Contains(want, p[:n]) {
								t.Errorf("shared %s: Read: bytes not of the file", name)
							}
							if !closedOK(err) || wasClosed && !errors.Is(err, fs.ErrClosed) {
								t.Errorf("shared %s: Read: %v (closed before: %v)", name, err, wasClosed)
							}
						case 3:
							_, err := f.(io.Seeker).Seek(int64(rng.IntN(len(want))), io.SeekStart)
							if !closedOK(err) || wasClosed && !errors.Is(err, fs.ErrClosed) {
								t.Errorf("shared %s: Seek: %v", name, err)
							}
						case 4:
							if rng.IntN(4) != 0 {
								continue
							}
							w := &suffixWriter{want: want}
							_, err := f.(io.WriterTo).WriteTo(w)
							if !closedOK(err) || wasClosed && !errors.Is(err, fs.ErrClosed) {
								t.Errorf("shared %s: WriteTo: %v", name, err)
							}
							if !w.ok(err == nil) {
								t.Errorf("shared %s: WriteTo wrote %d bytes not ending the file (err %v)", name, w.got.Len(), err)
							}
						}
					}
				})
			}
			wg.Go(func() {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
				for _, n := range names {
					if err := shared[n].Close(); err != nil {
						t.Errorf("Close of shared %s: %v", n, err)
					}
				}
				closedShared.Store(true)
			})
			wg.Wait()
			for _, n := range names {
				if err := shared[n].Close(); !errors.Is(err, fs.ErrClosed) {
					t.Errorf("second Close of shared %s: %v", n, err)
				}
			}
			must(t, r.Close())
			checkGoroutines(t, base)
		})
	}
}

// TestProbe27AheadAfterClose: a file closed while read ahead of, and one
// closed before any read, answer every call after Close with ErrClosed;
// the read-ahead goroutines are gone once Close returns.
func TestProbe27AheadAfterClose(t *testing.T) {
	data, files := probeManyPack()
	for _, mapped := range []bool{true, false} {
		t.Run(fmt.Sprint("mapped=", mapped), func(t *testing.T) {
			r := probe27Open(t, data, mapped)
			defer r.Close()
			// Warm the decoder, whose goroutines stay.
			if _, err := r.ReadFile("f0"); err != nil {
				t.Fatal(err)
			}
			base := runtime.NumGoroutine()
			for k, name := range []string{"f1", "f2", "f3"} {
				f, err := r.Open(name)
				must(t, err)
				p := make([]byte, 4<<10)
				// Read in sequence into the second frame (k > 0), so that
				// frames are read ahead, or not at all (k == 0).
				for off := 0; k > 0 && off < 1<<20+k*(200<<10); {
					n, err := f.Read(p)
					must(t, err)
					if !bytes.Equal(p[:n], files[name][off:off+n]) {
						t.Fatalf("%s: wrong bytes at %d", name, off)
					}
					off += n
				}
				must(t, f.Close())
				checkGoroutines(t, base) // Close waited for them: they are ending
				if _, err := f.Read(p); !errors.Is(err, fs.ErrClosed) {
					t.Errorf("%s: Read after Close: %v", name, err)
				}
				if _, err := f.(io.ReaderAt).ReadAt(p, 0); !errors.Is(err, fs.ErrClosed) {
					t.Errorf("%s: ReadAt after Close: %v", name, err)
				}
				if _, err := f.(io.Seeker).Seek(0, io.SeekStart); !errors.Is(err, fs.ErrClosed) {
					t.Errorf("%s: Seek after Close: %v", name, err)
				}
				var b bytes.Buffer
				if n, err := f.(io.WriterTo).WriteTo(&b); !errors.Is(err, fs.ErrClosed) || n != 0 {
					t.Errorf("%s: WriteTo after Close: %d, %v", name, n, err)
				}
				if _, err := f.Stat(); !errors.Is(err, fs.ErrClosed) {
					t.Errorf("%s: Stat after Close: %v", name, err)
				}
				if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
					t.Errorf("%s: second Close: %v", name, err)
				}
			}
		})
	}
}

// TestProbe27AheadCloseDuringRead: a file read in sequence (Read with a
// small buffer, or WriteTo) on one goroutine and closed on another at a
// random moment: the reader gets the file's bytes up to the Close and
// then ErrClosed, and Close returns with no read-ahead left running.
// Then the Reader is closed during reads of other handles, which are
// closed after it.
func TestProbe27AheadCloseDuringRead(t *testing.T) {
	data, files := probeManyPack()
	rounds := 6
	for _, mapped := range []bool{true, false} {
		t.Run(fmt.Sprint("mapped=", mapped), func(t *testing.T) {
			base := runtime.NumGoroutine()
			rng := rand.New(rand.NewPCG(7, 27))
			for round := range rounds {
				r := probe27Open(t, data, mapped, packreader.WithCacheSize(int64(8+8*(round%3))<<20))
				var wg sync.WaitGroup
				var handles []fs.File
				for k, name := range []string{"f0", "f1", "f2", "f3", "f0", "f1"} {
					want := files[name]
					f, err := r.Open(name)
					must(t, err)
					handles = append(handles, f)
					wg.Go(func() {
						if k%3 == 2 {
							w := &suffixWriter{want: want}
							n, err := f.(io.WriterTo).WriteTo(w)
							if !closedOK(err) || !bytes.Equal(w.got.Bytes(), want[:n]) {
								t.Errorf("round %d: %s: WriteTo: %d, %v", round, name, n, err)
							}
							return
						}
						p := make([]byte, 4<<10)
						for off := 0; ; {
							n, err := f.Read(p)
							if !bytes.Equal(p[:n], want[off:off+n]) {
								t.Errorf("round %d: %s: wrong bytes at %d", round, name, off)
								return
							}
							off += n
							if err == io.EOF {
								if off != len(want) {
									t.Errorf("round %d: %s: EOF at %d of %d", round, name, off, len(want))
								}
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
				time.Sleep(time.Duration(rng.IntN(30000)) * time.Microsecond)
				// Close half the handles, then the Reader, then the rest.
				for _, f := range handles[:3] {
					if err := f.Close(); err != nil {
						t.Errorf("round %d: Close: %v", round, err)
					}
				}
				time.Sleep(time.Duration(rng.IntN(10000)) * time.Microsecond)
				must(t, r.Close())
				wg.Wait()
				for _, f := range handles[3:] {
					if err := f.Close(); err != nil {
						t.Errorf("round %d: Close after the Reader's: %v", round, err)
					}
				}
				p := make([]byte, 10)
				for _, f := range handles {
					if _, err := f.Read(p); !errors.Is(err, fs.ErrClosed) {
						t.Errorf("round %d: Read after both Closes: %v", round, err)
					}
				}
			}
			checkGoroutines(t, base)
		})
	}
}

// TestProbe27AheadFileRoom: a FileRoom reused for file after file, each
// read in sequence far enough for frames to be read ahead and closed
// while they are: a read-ahead goroutine of the file before never
// touches the room after Close (the race detector watches), and each
// file reads its own bytes.
func TestProbe27AheadFileRoom(t *testing.T) {
	data, files := probeManyPack()
	for _, mapped := range []bool{true, false} {
		t.Run(fmt.Sprint("mapped=", mapped), func(t *testing.T) {
			base := runtime.NumGoroutine()
			r := probe27Open(t, data, mapped, packreader.WithCacheSize(8<<20))
			room := new(packreader.FileRoom)
			rng := rand.New(rand.NewPCG(1, 27))
			for k := range 16 {
				name := fmt.Sprintf("f%d", k%4)
				want := files[name]
				f, err := r.OpenAtIn(room, nil, name, name)
				must(t, err)
				p := make([]byte, 32<<10)
				stop := rng.IntN(len(want))
				for off := 0; off < stop; {
					n, err := f.Read(p)
					if !bytes.Equal(p[:n], want[off:off+n]) {
						t.Fatalf("%d %s: wrong bytes at %d", k, name, off)
					}
					off += n
					if err != nil {
						break
					}
				}
				must(t, f.Close())
			}
			must(t, r.Close())
			checkGoroutines(t, base)
		})
	}
}
