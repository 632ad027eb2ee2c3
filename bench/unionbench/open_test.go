package unionbench

import (
	"io"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// openReadClose opens name, reads it to its end through buf and closes
// it: the small-file read as a program that streams files makes it.
func openReadClose(b *testing.B, fsys fs.FS, name string, buf []byte) {
	f, err := fsys.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	for {
		if _, err := f.Read(buf); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOpenReadRatio opens, reads and closes every lower file of a
// pack once through the union and once from the pack directly in each
// iteration, alternating in chunks of 500 files as
// BenchmarkReadThroughRatio does; union/direct is the union's cost over
// the pack's in one run. Names at the root and in a merged directory (one
// the upper layer also holds) are timed apart.
func BenchmarkOpenReadRatio(b *testing.B) {
	for _, where := range []string{"deep", "root", "merged"} {
		b.Run("names="+where, func(b *testing.B) {
			files := names("f")
			l := mem.New()
			must(b, l.Mkdir("d", 0o755))
			data := make([]byte, 128)
			for i, name := range files {
				if where == "root" {
					name = name[len("d/"):]
					files[i] = name
				}
				must(b, l.WriteFile(name, data, 0o644))
			}
			packed := pack(b, l.Snapshot())
			up := mem.New()
			if where == "merged" {
				must(b, up.Mkdir("d", 0o755))
				must(b, up.WriteFile("d/upper", data, 0o644))
			}
			u := packfs.New(up, packed)
			buf := make([]byte, 512)
			read := func(fsys fs.FS, chunk []string) time.Duration {
				start := time.Now()
				for _, name := range chunk {
					openReadClose(b, fsys, name, buf)
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
		})
	}
}

// BenchmarkOpenFirstLookup opens a pack of 20,000 files and stats one of
// them, directly and through a new union over it, alternating; the ratio
// is what the union adds to a program's start.
func BenchmarkOpenFirstLookup(b *testing.B) {
	name := filepath.Join(b.TempDir(), "lower.pack")
	must(b, packwriter.WriteFile(name, lower(b, names("f"))))
	var direct, union time.Duration
	for i := 0; b.Loop(); i++ {
		for k := range 2 {
			start := time.Now()
			r, err := packreader.Open(name)
			must(b, err)
			var fsys fs.FS = r
			viaUnion := (i+k)%2 == 0
			if viaUnion {
				fsys = packfs.New(mem.New(), r)
			}
			_, err = fs.Stat(fsys, "d/f10000")
			must(b, err)
			d := time.Since(start)
			must(b, r.Close())
			if viaUnion {
				union += d
			} else {
				direct += d
			}
		}
	}
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "direct-ns/open")
	b.ReportMetric(float64(union.Nanoseconds())/float64(b.N), "union-ns/open")
	b.ReportMetric(float64(union)/float64(direct), "union/direct")
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
