package packbench

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// formatPack writes the fixture's tree as an uncompressed pack of format
// v, maps it and reads every file once (warm).
func formatPack(b *testing.B, f *fixture, v int) *packreader.Reader {
	path := filepath.Join(b.TempDir(), fmt.Sprintf("tree%d.pack", v))
	if err := packwriter.WriteFile(path, f.mapfs, packwriter.WithFormat(v)); err != nil {
		b.Fatal(err)
	}
	r, err := packreader.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	if r.Version() != v {
		b.Fatalf("wrote format %d, read %d", v, r.Version())
	}
	for _, n := range f.names {
		if _, err := r.ReadFile(n); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// BenchmarkReadFormat reads the fixture's 20,000 files of 128 bytes in
// random order, warm, from an uncompressed pack written in format 2 and
// from one written in format 3 (the default), side by side: format 3
// keeps contents in checksummed frames, and a small file's read should
// cost no more than format 2's. The two packs hold the same tree. Run
// alternated (each format's median of five runs, from one loop):
//
//	for i in 1 2 3 4 5; do go test -run '^$' -bench 'ReadFormat' -benchtime 400000x ./packbench/; done
func BenchmarkReadFormat(b *testing.B) {
	f := getFixture(b)
	for _, v := range []int{2, 3} {
		b.Run(fmt.Sprintf("format=%d", v), func(b *testing.B) {
			r := formatPack(b, f, v)
			i := 0
			for b.Loop() {
				if _, err := r.ReadFile(f.names[i%nFiles]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkReadFormatPaired is BenchmarkReadFormat with both packs read
// in one loop, taking turns every 256 reads (the same names from each),
// so that a shared machine's load weighs on both alike: it reports each
// format's ns per read and their ratio (f3/f2). An op is 256 reads of
// each pack.
//
//	go test -run '^$' -bench 'ReadFormatPaired' -benchtime 1000x -count 5 ./packbench/
func BenchmarkReadFormatPaired(b *testing.B) {
	const turn = 256
	f := getFixture(b)
	r2, r3 := formatPack(b, f, 2), formatPack(b, f, 3)
	var t2, t3 time.Duration
	i := 0
	for b.Loop() {
		for k, r := range []*packreader.Reader{r2, r3} {
			start := time.Now()
			for j := range turn {
				if _, err := r.ReadFile(f.names[(i+j)%nFiles]); err != nil {
					b.Fatal(err)
				}
			}
			if k == 0 {
				t2 += time.Since(start)
			} else {
				t3 += time.Since(start)
			}
		}
		i += turn
	}
	n := float64(b.N) * turn
	b.ReportMetric(float64(t2.Nanoseconds())/n, "f2-ns/read")
	b.ReportMetric(float64(t3.Nanoseconds())/n, "f3-ns/read")
	b.ReportMetric(float64(t3)/float64(t2), "f3/f2")
}

// BenchmarkCompactFormat writes a pack of a mem snapshot of N distinct
// 128-byte files (packwriter.Write to io.Discard) in format 2 and in
// format 3, side by side, as BenchmarkCompact does in the default format.
// Run alternated:
//
//	for i in 1 2 3 4 5; do go test -run '^$' -bench 'CompactFormat' -benchtime 20x ./packbench/; done
func BenchmarkCompactFormat(b *testing.B) {
	const n = 20000
	snap := distinct(b, n)
	for _, v := range []int{2, 3} {
		b.Run(fmt.Sprintf("format=%d/entries=%d", v, n), func(b *testing.B) {
			for b.Loop() {
				if err := packwriter.Write(io.Discard, snap, packwriter.WithFormat(v)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// distinct returns a mem snapshot of n distinct 128-byte files in d/.
func distinct(b *testing.B, n int) fs.FS {
	m := mem.New()
	if err := m.Mkdir("d", 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := m.WriteFile(name(i), content(i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return m.Snapshot()
}

// BenchmarkCompactFormatPaired is BenchmarkCompactFormat with both
// formats written in one loop, in turn (an op is one Write of each), so
// that a shared machine's load weighs on both alike: it reports each
// format's ms per Write and their ratio (f3/f2).
//
//	go test -run '^$' -bench 'CompactFormatPaired' -benchtime 40x -count 5 ./packbench/
func BenchmarkCompactFormatPaired(b *testing.B) {
	const n = 20000
	snap := distinct(b, n)
	var t [2]time.Duration
	for b.Loop() {
		for k, v := range []int{2, 3} {
			start := time.Now()
			if err := packwriter.Write(io.Discard, snap, packwriter.WithFormat(v)); err != nil {
				b.Fatal(err)
			}
			t[k] += time.Since(start)
		}
	}
	b.ReportMetric(float64(t[0])/1e6/float64(b.N), "f2-ms/write")
	b.ReportMetric(float64(t[1])/1e6/float64(b.N), "f3-ms/write")
	b.ReportMetric(float64(t[1])/float64(t[0]), "f3/f2")
}
