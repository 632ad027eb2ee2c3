package packsize

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packwriter"
)

// BenchmarkTables reports, per tree, what the tables of a pack at zstd
// level 19 take: raw (as an uncompressed pack stores them), compressed
// in 64 KiB groups as they are, and shuffled then compressed (what packed
// tables store), with the entries' count. Run it with -benchtime 1x.
func BenchmarkTables(b *testing.B) {
	goroot := goRoot(b)
	trees := []struct{ name, dir string }{
		{"gosrc", filepath.Join(goroot, "src")},
		{"goroot", goroot},
		{"tiny", ""},
	}
	for _, tr := range trees {
		b.Run("tree="+tr.name, func(b *testing.B) {
			dir := tr.dir
			if dir == "" {
				dir = b.TempDir()
				tinyTree(b, dir, tinyCount())
			}
			for b.Loop() {
				reportTables(b, dir)
			}
		})
	}
}

func reportTables(b *testing.B, dir string) {
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, os.DirFS(dir), packwriter.WithCompression(19)); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	tl, ok, err := packformat.ReadTail(bytes.NewReader(data), int64(len(data)))
	if !ok || err != nil {
		b.Fatalf("not a pack: %v", err)
	}
	f := tl.Footer
	raw, err := packformat.UnpackTables(data)
	if err != nil {
		b.Fatal(err)
	}
	l := packformat.TablesLayout{Count: f.Count, StringsSize: f.StringsSize, FrameCount: f.FrameCount}
	tables := raw[f.IndexOff : f.IndexOff+l.Len()]
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(19)), zstd.WithEncoderCRC(false))
	if err != nil {
		b.Fatal(err)
	}
	plain := 0
	for lo := 0; lo < len(tables); lo += packformat.GroupSize {
		plain += len(enc.EncodeAll(tables[lo:min(lo+packformat.GroupSize, len(tables))], nil))
	}
	packed := f.GroupsOff - f.IndexOff
	b.ReportMetric(float64(len(data)), "pack-bytes")
	b.ReportMetric(float64(f.Count), "entries")
	b.ReportMetric(float64(len(tables)), "tables-raw-bytes")
	b.ReportMetric(float64(plain), "tables-zstd-bytes")
	b.ReportMetric(float64(packed), "tables-shuffled-zstd-bytes")
	b.ReportMetric(float64(packed)/float64(f.Count), "stored-B/entry")
}
