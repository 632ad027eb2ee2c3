package packbench

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

const (
	nFiles   = 20000
	fileSize = 128
)

func content(i int) []byte {
	b := make([]byte, fileSize)
	r := rand.New(rand.NewPCG(uint64(i), 1))
	for j := range b {
		b[j] = byte(r.Uint32())
	}
	return b
}

func name(i int) string { return fmt.Sprintf("d/f%05d", i) }

// fixture is the same tree as a host directory, a zip, a pack and a MapFS.
type fixture struct {
	dir, zipPath, packPath string
	mapfs                  fstest.MapFS
	names                  []string // random order
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  error
)

func getFixture(b *testing.B) *fixture {
	fixOnce.Do(func() { fixErr = buildFixture() })
	if fixErr != nil {
		b.Fatal(fixErr)
	}
	return &fix
}

func buildFixture() error {
	root, err := os.MkdirTemp("", "packbench")
	if err != nil {
		return err
	}
	fix.dir = filepath.Join(root, "tree")
	fix.mapfs = fstest.MapFS{}
	if err := os.MkdirAll(filepath.Join(fix.dir, "d"), 0o755); err != nil {
		return err
	}
	fix.zipPath = filepath.Join(root, "tree.zip")
	zf, err := os.Create(fix.zipPath)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(zf)
	mt := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range nFiles {
		data := content(i)
		if err := os.WriteFile(filepath.Join(fix.dir, filepath.FromSlash(name(i))), data, 0o644); err != nil {
			return err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name(i), Method: zip.Store, Modified: mt})
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		fix.mapfs[name(i)] = &fstest.MapFile{Data: data, Mode: 0o644, ModTime: mt}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := zf.Close(); err != nil {
		return err
	}
	fix.packPath = filepath.Join(root, "tree.pack")
	if err := packwriter.WriteFile(fix.packPath, os.DirFS(fix.dir)); err != nil {
		return err
	}
	fix.names = make([]string, nFiles)
	for i, j := range rand.New(rand.NewPCG(1, 2)).Perm(nFiles) {
		fix.names[i] = name(j)
	}
	return nil
}

// backends opens each backend as an fs.FS; close releases it.
func backends(b *testing.B, f *fixture) []struct {
	name  string
	fsys  fs.FS
	close func()
} {
	pr, err := packreader.Open(f.packPath)
	if err != nil {
		b.Fatal(err)
	}
	zr, err := zip.OpenReader(f.zipPath)
	if err != nil {
		b.Fatal(err)
	}
	return []struct {
		name  string
		fsys  fs.FS
		close func()
	}{
		{"pack", pr, func() { pr.Close() }},
		{"os", os.DirFS(f.dir), func() {}},
		{"zip", zr, func() { zr.Close() }},
		{"mapfs", f.mapfs, func() {}},
	}
}

// warm makes one untimed pass of op over every name, so that the warm
// benchmarks measure warm accesses: first touches of a pack's mapping
// (page faults) are BenchmarkReadFirstTouch's subject.
func warm(b *testing.B, f *fixture, op func(string) error) {
	for _, n := range f.names {
		if err := op(n); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	f := getFixture(b)
	for _, be := range backends(b, f) {
		b.Run("backend="+be.name, func(b *testing.B) {
			warm(b, f, func(n string) error { _, err := fs.ReadFile(be.fsys, n); return err })
			i := 0
			for b.Loop() {
				if _, err := fs.ReadFile(be.fsys, f.names[i%nFiles]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		be.close()
	}
}

// BenchmarkReadFirstTouch opens the pack afresh and reads every file once
// in random order: the first pass over a cold mapping, page faults
// included (the file itself is in the page cache). Reported per file.
func BenchmarkReadFirstTouch(b *testing.B) {
	f := getFixture(b)
	b.Run("backend=pack", func(b *testing.B) {
		for b.Loop() {
			r, err := packreader.Open(f.packPath)
			if err != nil {
				b.Fatal(err)
			}
			for _, n := range f.names {
				if _, err := r.ReadFile(n); err != nil {
					b.Fatal(err)
				}
			}
			r.Close()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nFiles), "ns/file")
	})
}

func BenchmarkStat(b *testing.B) {
	f := getFixture(b)
	for _, be := range backends(b, f) {
		b.Run("backend="+be.name, func(b *testing.B) {
			warm(b, f, func(n string) error { _, err := fs.Stat(be.fsys, n); return err })
			i := 0
			for b.Loop() {
				if _, err := fs.Stat(be.fsys, f.names[i%nFiles]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		be.close()
	}
}

func BenchmarkReadDir(b *testing.B) {
	f := getFixture(b)
	for _, be := range backends(b, f) {
		b.Run("backend="+be.name, func(b *testing.B) {
			if _, err := fs.ReadDir(be.fsys, "d"); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				ents, err := fs.ReadDir(be.fsys, "d")
				if err != nil || len(ents) != nFiles {
					b.Fatal(len(ents), err)
				}
			}
		})
		be.close()
	}
}

func BenchmarkOpen(b *testing.B) {
	f := getFixture(b)
	b.Run("backend=pack", func(b *testing.B) {
		for b.Loop() {
			r, err := packreader.Open(f.packPath)
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
	b.Run("backend=zip", func(b *testing.B) {
		for b.Loop() {
			r, err := zip.OpenReader(f.zipPath)
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
}

// BenchmarkOpen1M opens a pack of 1,000,000 entries (1,000 directories of
// 1,000 files of 8 bytes): header, footer and the root's index block; the
// rest of its 64 MB index is checked block by block as reads touch it.
func BenchmarkOpen1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "1m.pack")
	if err := packwriter.WriteFile(path, synth{dirs: 1000, files: 1000}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := packreader.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

func BenchmarkCompact(b *testing.B) {
	for _, n := range []int{20000, 80000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			m := mem.New()
			if err := m.Mkdir("d", 0o755); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if err := m.WriteFile(name(i), content(i), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			snap := m.Snapshot()
			for b.Loop() {
				if err := packwriter.Write(io.Discard, snap); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}
