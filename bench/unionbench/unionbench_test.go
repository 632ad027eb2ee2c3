// Package unionbench measures the union's cost over reading its lower
// layer directly: read-through of 20,000 lower files and a merged ReadDir
// of 20,000 upper plus 20,000 lower entries.
package unionbench

import (
	"fmt"
	"io/fs"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

const n = 20_000

func names(prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("d/%s%05d", prefix, i)
	}
	return out
}

func lower(b *testing.B, files []string) fs.FS {
	l := mem.New()
	if err := l.Mkdir("d", 0o755); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 128)
	for _, name := range files {
		if err := l.WriteFile(name, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return l.Snapshot()
}

// BenchmarkReadThrough reads every lower file once per iteration, through
// the union and directly; ns/file is the figure to compare.
func BenchmarkReadThrough(b *testing.B) {
	files := names("f")
	low := lower(b, files)
	for _, c := range []struct {
		name string
		fsys fs.FS
	}{{"direct", low}, {"union", packfs.New(mem.New(), low)}} {
		b.Run("via="+c.name, func(b *testing.B) {
			for b.Loop() {
				for _, name := range files {
					if _, err := fs.ReadFile(c.fsys, name); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/file")
		})
	}
}

// BenchmarkMergedReadDir lists a directory holding 20,000 entries in the
// upper layer and 20,000 others in the lower.
func BenchmarkMergedReadDir(b *testing.B) {
	low := lower(b, names("l"))
	u := packfs.New(mem.New(), low)
	for _, name := range names("u") {
		if err := u.WriteFile(name, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		list, err := u.ReadDir("d")
		if err != nil || len(list) != 2*n {
			b.Fatal(len(list), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*n), "ns/entry")
}
