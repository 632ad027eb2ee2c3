package packreader_test

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// benchPack writes a pack of 1,000 small files and one of 16 MiB into a
// temporary directory and maps it.
func benchPack(b *testing.B) *packreader.Reader {
	b.Helper()
	big := make([]byte, 16<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>12) // not zeros, which format 3 stores as holes
	}
	m := fstest.MapFS{"big": {Data: big, Mode: 0o644}}
	for i := range 1000 {
		m[fmt.Sprintf("d/f%04d", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("content of file %d\n", i)), Mode: 0o644}
	}
	name := filepath.Join(b.TempDir(), "bench.pack")
	if err := packwriter.WriteFile(name, m); err != nil {
		b.Fatal(err)
	}
	r, err := packreader.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// BenchmarkMappedRead measures the reader's per-call cost over a mapped
// pack: small reads are where a per-call guard would show. Run with
//
//	go test -run '^$' -bench BenchmarkMappedRead -benchtime 300ms -count 5 ./packreader/
func BenchmarkMappedRead(b *testing.B) {
	r := benchPack(b)
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("d/f%04d", i)
	}
	b.Run("op=Stat", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := r.Stat(names[i%len(names)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("op=ReadFile", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := r.ReadFile(names[i%len(names)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	f, err := r.Open("big")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	ra := f.(io.ReaderAt)
	for _, n := range []int{512, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("op=ReadAt/size=%d", n), func(b *testing.B) {
			buf := make([]byte, n)
			b.SetBytes(int64(n))
			off := int64(0)
			for b.Loop() {
				if _, err := ra.ReadAt(buf, off); err != nil {
					b.Fatal(err)
				}
				if off += int64(n); off+int64(n) > 16<<20 {
					off = 0
				}
			}
		})
	}
	b.Run("op=WriteTo", func(b *testing.B) {
		b.SetBytes(16 << 20)
		for b.Loop() {
			if _, err := f.(io.Seeker).Seek(0, io.SeekStart); err != nil {
				b.Fatal(err)
			}
			if _, err := f.(io.WriterTo).WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=ReadDir", func(b *testing.B) {
		for b.Loop() {
			if _, err := fs.ReadDir(r, "d"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLookupMiss looks up names that sort before every name of a
// directory of 1,000 entries, as a union over a pack does for each file
// it creates beside the pack's (each lookup misses, and the binary search
// only ever reads the directory's first key block). op=Miss is LookupAt
// in that directory; op=Stat a whole path's Stat.
//
//	go test -run '^$' -bench LookupMiss -count 5 ./packreader/
func BenchmarkLookupMiss(b *testing.B) {
	m := fstest.MapFS{}
	for i := range 1000 {
		m[fmt.Sprintf("d/l%04d", i)] = &fstest.MapFile{Data: []byte("lower"), Mode: 0o644}
	}
	name := filepath.Join(b.TempDir(), "miss.pack")
	if err := packwriter.WriteFile(name, m); err != nil {
		b.Fatal(err)
	}
	r, err := packreader.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("f%04d", i)
	}
	d, err := r.LookupAt(nil, "d")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("op=Miss", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := r.LookupAt(d.Dir, names[i%len(names)]); err == nil {
				b.Fatal("found")
			}
			i++
		}
	})
	b.Run("op=Stat", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, err := r.Stat("d/" + names[i%len(names)]); err == nil {
				b.Fatal("found")
			}
			i++
		}
	})
}
