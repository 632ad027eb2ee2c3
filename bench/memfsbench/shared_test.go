package memfsbench

import (
	"os"
	"testing"

	"github.com/packfs/packfs/layer/mem"
)

// sharedWriter is the in-memory layer's large write that keeps the
// caller's bytes as the file's chunks (the durable store's, from its
// mapped log).
type sharedWriter interface {
	WriteShared(p []byte, off int64, advance bool, log func() ([]byte, any, error)) (int, error)
}

// BenchmarkWriteShared writes a 64 MiB file of the in-memory layer in
// 1,024 writes of 64 KiB that keep the caller's bytes, as the store's
// sequential write does: what is timed is the layer's bookkeeping alone
// (the chunk tree, the file's versions), which no data copy hides. B/op
// is the heap the layer allocates for it.
func BenchmarkWriteShared(b *testing.B) {
	const size = 64 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	fsys := mem.New()
	b.ReportAllocs()
	for b.Loop() {
		f, err := fsys.OpenFile("big", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		must(b, err)
		w := f.(sharedWriter)
		for off := 0; off < size; off += chunkSize {
			p := data[off : off+chunkSize]
			_, err := w.WriteShared(p, int64(off), true, func() ([]byte, any, error) { return p, &data, nil })
			must(b, err)
		}
		must(b, f.Close())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size/chunkSize), "ns/write")
}
