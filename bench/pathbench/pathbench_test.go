// Package pathbench measures how path resolution grows with the path's
// length: Stat of a deep file and MkdirAll of a deep path at depth x and
// at 4x, through mem, a pack, the union of mem over a pack, and the
// durable store. Each benchmark reports ns/op at both depths and their
// ratio (x4/x): linear resolution gives about 4, the quadratic and cubic
// walks of before issue 14 gave 16 and 64.
package pathbench

import (
	"bytes"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// The depths compared: 1 KB and 4 KB paths, the longest Linux takes.
const (
	short = 500
	long  = 4 * short
)

func deep(prefix string, depth int) string { return prefix + strings.Repeat("/d", depth-1) }

// tree returns a mem layer holding a file at the bottom of a path of each
// depth.
func tree(b *testing.B) *mem.FS {
	m := mem.New()
	for _, depth := range []int{short, long} {
		p := deep(fmt.Sprint("t", depth), depth)
		if err := m.MkdirAll(p, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := m.WriteFile(p+"/f", []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

func pack(b *testing.B, fsys fs.FS) *packreader.Reader {
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, fsys); err != nil {
		b.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// ratio runs op at both depths in each iteration and reports each one's
// cost and their ratio (x4/x), and the ratio of the bytes one run of each
// allocates (B-x4/x), which the machine's load does not disturb.
func ratio(b *testing.B, op func(depth, i int)) {
	op(short, -1) // warm: a pack checks the blocks it reads once
	op(long, -1)
	alloc := func(depth int) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		op(depth, -2)
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc - before.TotalAlloc)
	}
	bytesRatio := alloc(long) / alloc(short)
	var ts, tl time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		op(short, i)
		t1 := time.Now()
		op(long, i)
		ts, tl = ts+t1.Sub(t0), tl+time.Since(t1)
		i++
	}
	b.ReportMetric(float64(ts.Nanoseconds())/float64(i), "ns/x")
	b.ReportMetric(float64(tl.Nanoseconds())/float64(i), "ns/4x")
	b.ReportMetric(float64(tl)/float64(ts), "x4/x")
	b.ReportMetric(bytesRatio, "B-x4/x")
}

func BenchmarkStat(b *testing.B) {
	m := tree(b)
	p := pack(b, m.Snapshot())
	s, err := packfs.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, depth := range []int{short, long} {
		name := deep(fmt.Sprint("t", depth), depth)
		if err := s.MkdirAll(name, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := s.WriteFile(name+"/f", []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	for _, bk := range []struct {
		name string
		fsys fs.FS
	}{
		{"mem", m},
		{"pack", p},
		{"union", packfs.New(mem.New(), p)},
		{"store", s},
	} {
		b.Run("fs="+bk.name, func(b *testing.B) {
			ratio(b, func(depth, _ int) {
				if _, err := fs.Stat(bk.fsys, deep(fmt.Sprint("t", depth), depth)+"/f"); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

type mkdirAller interface {
	MkdirAll(string, fs.FileMode) error
}

func BenchmarkMkdirAll(b *testing.B) {
	p := pack(b, tree(b).Snapshot())
	s, err := packfs.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, bk := range []struct {
		name string
		fsys func() mkdirAller
	}{
		{"mem", func() mkdirAller { return mem.New() }},
		{"union", func() mkdirAller { return packfs.New(mem.New(), p) }},
		{"store", func() mkdirAller { return s }},
	} {
		b.Run("fs="+bk.name, func(b *testing.B) {
			ratio(b, func(depth, i int) {
				// A fresh top directory each time; through the union,
				// under a directory of the pack, which is copied up.
				name := deep(fmt.Sprintf("t%d/n%d-%d", short, i, depth), depth)
				if err := bk.fsys().MkdirAll(name, 0o755); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
