package mem_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"io/fs"
	"os"
	"sync"
	"testing"

	"github.com/packfs/packfs/layer/mem"
)

// TestSharedHandleReads reads one handle from several goroutines at once:
// each byte of the file is read exactly once, in order within each Read,
// whether the handle can write (Read holds the handle's lock) or not (Read
// moves the offset by compare-and-swap). A goroutine that seeks back to the
// start between rounds makes the file read again whole.
func TestSharedHandleReads(t *testing.T) {
	const size = 1 << 16
	// The file is the 4-byte indexes of its words, and every Read asks for
	// whole words, so each chunk read says where it came from.
	data := make([]byte, size)
	for i := 0; i < size; i += 4 {
		binary.BigEndian.PutUint32(data[i:], uint32(i))
	}
	fsys := mem.New()
	if err := fsys.WriteFile("f", data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_RDWR} {
		f, err := fsys.OpenFile("f", flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 3 {
			seen := make([]int, size)
			var mu sync.Mutex
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					buf := make([]byte, 4*(1+g*9))
					for {
						n, err := f.Read(buf)
						if n > 0 {
							off := findChunk(data, buf[:n])
							if off < 0 {
								t.Errorf("read %d bytes found nowhere in the file", n)
								return
							}
							mu.Lock()
							for i := off; i < off+n; i++ {
								seen[i]++
							}
							mu.Unlock()
						}
						if err == io.EOF {
							return
						}
						if err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("flag %#x round %d: byte %d read %d times", flag, round, i, c)
				}
			}
			if pos, err := f.(io.Seeker).Seek(0, io.SeekStart); err != nil || pos != 0 {
				t.Fatalf("Seek(0, start) = %d, %v", pos, err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Read(make([]byte, 1)); err == nil {
			t.Fatal("Read after Close succeeded")
		}
	}
}

// findChunk returns where b, a run of whole words, sits in data, or -1 if
// it is not data's bytes there.
func findChunk(data, b []byte) int {
	if len(b)%4 != 0 {
		return -1
	}
	off := int(binary.BigEndian.Uint32(b))
	if off%4 != 0 || off+len(b) > len(data) || !bytes.Equal(data[off:off+len(b)], b) {
		return -1
	}
	return off
}

// TestReadSeekCurrentBeside moves the offset of a read-only handle with
// Seek(2, SeekCurrent) in two goroutines while two others read it one
// byte at a time: neither a relative seek nor a Read's advance is lost to
// the other, so the offset at the end is the bytes read plus the seeks'
// sum. The window is a few instructions wide: the race detector's runs
// are the ones that find a lost update.
func TestReadSeekCurrentBeside(t *testing.T) {
	const size = 1 << 19
	fsys := mem.New()
	if err := fsys.WriteFile("f", make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sk := f.(io.Seeker)
	const goroutines, reads, seeks = 2, 100000, 100000
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			b := make([]byte, 1)
			<-start
			for range reads / goroutines {
				if n, err := f.Read(b); n != 1 || err != nil {
					t.Errorf("Read = %d, %v", n, err)
					return
				}
			}
		})
		wg.Go(func() {
			<-start
			for range seeks / goroutines {
				if _, err := sk.Seek(2, io.SeekCurrent); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	pos, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(reads + 2*seeks); pos != want {
		t.Fatalf("offset %d after %d reads of 1 byte and %d seeks of +2, want %d", pos, reads, seeks, want)
	}
	var _ fs.File = f
}
