// Package unionbench measures the union's cost over reading its lower
// layer directly: read-through of 20,000 lower files (from a mapped pack
// and from an in-memory snapshot) and a merged ReadDir of 20,000 upper
// plus 20,000 lower entries.
package unionbench

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
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

// pack writes fsys into a pack file and opens it, mapped.
func pack(b *testing.B, fsys fs.FS) *packreader.Reader {
	name := filepath.Join(b.TempDir(), "lower.pack")
	if err := packwriter.WriteFile(name, fsys); err != nil {
		b.Fatal(err)
	}
	r, err := packreader.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkReadThrough reads every lower file once per iteration, through
// the union and directly, with the lower a pack (mapped) and an in-memory
// snapshot; ns/file is the figure to compare within one lower.
func BenchmarkReadThrough(b *testing.B) {
	files := names("f")
	snap := lower(b, files)
	packed := pack(b, snap)
	for _, c := range []struct {
		name string
		fsys fs.FS
	}{
		{"lower=pack/via=direct", packed},
		{"lower=pack/via=union", packfs.New(mem.New(), packed)},
		{"lower=mem/via=direct", snap},
		{"lower=mem/via=union", packfs.New(mem.New(), snap)},
	} {
		b.Run(c.name, func(b *testing.B) {
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

// BenchmarkReadThroughRatio reads every lower file once through the union
// and once from the pack directly in each iteration, alternating in chunks
// of 500 files so that both see the same load on a shared machine:
// union/direct is the union's cost over the pack's in one run.
func BenchmarkReadThroughRatio(b *testing.B) {
	files := names("f")
	packed := pack(b, lower(b, files))
	u := packfs.New(mem.New(), packed)
	read := func(fsys fs.FS, chunk []string) time.Duration {
		start := time.Now()
		for _, name := range chunk {
			if _, err := fs.ReadFile(fsys, name); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var direct, union time.Duration
	for b.Loop() {
		for i := 0; i < len(files); i += 500 {
			chunk := files[i:min(i+500, len(files))]
			if i/500%2 == 0 {
				direct += read(packed, chunk)
				union += read(u, chunk)
			} else {
				union += read(u, chunk)
				direct += read(packed, chunk)
			}
		}
	}
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N*n), "direct-ns/file")
	b.ReportMetric(float64(union.Nanoseconds())/float64(b.N*n), "union-ns/file")
	b.ReportMetric(float64(union)/float64(direct), "union/direct")
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
