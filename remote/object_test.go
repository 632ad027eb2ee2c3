package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/packfs/packfs/remote"
)

func blob(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestCoalesce: readers of one cold block at once make one request.
func TestCoalesce(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096, ReadAhead: -1})
	data := blob(1 << 20)
	putRaw(t, b, "blob", data)
	o, err := b.OpenObject(context.Background(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	s0 := b.Stats()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			p := make([]byte, 100)
			off := int64(500000 + i*10)
			if _, err := o.ReadAt(p, off); err != nil || !bytes.Equal(p, data[off:off+100]) {
				t.Errorf("ReadAt at %d: %v", off, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := b.Stats().Gets - s0.Gets; n != 1 {
		t.Errorf("32 readers of one block: %d requests, want 1", n)
	}
}

// TestReadAtRandom compares random reads, sequential runs among them,
// from several goroutines through a small cache with the bytes stored.
func TestReadAtRandom(t *testing.T) {
	srv := newServer(t)
	data := blob(3<<20 + 123)
	for _, ra := range []int64{-1, 0} {
		t.Run(fmt.Sprint("readahead", ra), func(t *testing.T) {
			b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096, CacheBytes: 64 << 10, ReadAhead: ra})
			putRaw(t, b, "blob", data)
			o, err := b.OpenObject(context.Background(), "blob")
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 1))
					off := int64(0)
					for range 200 {
						if r.IntN(3) != 0 {
							off = r.Int64N(int64(len(data)) + 100)
						}
						n := r.IntN(3) * r.IntN(40000)
						if r.IntN(20) == 0 {
							n = 200000 // larger than half the cache
						}
						p := make([]byte, n)
						got, err := o.ReadAt(p, off)
						want := max(0, min(n, len(data)-int(off)))
						if got != want || (got < n && err != io.EOF) || (got == n && err != nil && !(n == 0 && err == io.EOF)) {
							t.Errorf("ReadAt(%d, %d) = %d, %v; want %d", n, off, got, err, want)
							return
						}
						if got > 0 && !bytes.Equal(p[:got], data[off:off+int64(got)]) {
							t.Errorf("ReadAt(%d, %d): wrong bytes", n, off)
							return
						}
						off += int64(got)
					}
				}()
			}
			wg.Wait()
		})
	}
}

// TestReadAhead: a sequential read of a large object makes far fewer
// requests than it has blocks.
func TestReadAhead(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096, ReadAhead: 256 << 10})
	data := blob(4 << 20)
	putRaw(t, b, "blob", data)
	o, err := b.OpenObject(context.Background(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	s0 := b.Stats()
	got, err := io.ReadAll(io.NewSectionReader(o, 0, o.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read: %v", err)
	}
	n := b.Stats().Gets - s0.Gets
	t.Logf("sequential read of %d blocks: %d requests", len(data)/4096, n)
	if n > int64(len(data)/(128<<10)) {
		t.Errorf("sequential read of %d blocks: %d requests", len(data)/4096, n)
	}
}
