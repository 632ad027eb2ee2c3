package packwriter_test

import (
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"testing"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
)

// countingFS counts the bytes read from the files it opens, which keep
// their Seek, ReadAt and SeeksHoles.
type countingFS struct {
	fs.FS
	read *atomic.Int64
}

func (c countingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if hf, ok := f.(holeFile); ok {
		return &countedHoleFile{hf, c.read}, nil
	}
	return f, nil
}

func (c countingFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(c.FS, name) }
func (c countingFS) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(c.FS, name) }
func (c countingFS) Lstat(name string) (fs.FileInfo, error)     { return fs.Lstat(c.FS, name) }
func (c countingFS) ReadLink(name string) (string, error)       { return fs.ReadLink(c.FS, name) }

type holeFile interface {
	fs.File
	io.ReaderAt
	layer.HoleSeeker
}

type countedHoleFile struct {
	holeFile
	read *atomic.Int64
}

func (f *countedHoleFile) Read(p []byte) (int, error) {
	n, err := f.holeFile.Read(p)
	f.read.Add(int64(n))
	return n, err
}

func (f *countedHoleFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.holeFile.ReadAt(p, off)
	f.read.Add(int64(n))
	return n, err
}

// TestHolesOfLayerFiles packs a file of layer/mem with a few bytes in 256
// MiB: the writer asks the file where its data is (layer.HoleSeeker) and
// reads those bytes only, where it read all 256 MiB of zeros twice to
// find the holes, and the pack keeps them. (It still hashes the zeros:
// a content's SHA-256 covers them.)
func TestHolesOfLayerFiles(t *testing.T) {
	m := mem.New()
	f, err := m.OpenFile("s", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.Truncate(256 << 20))
	_, err = f.WriteAt([]byte("middle"), 128<<20)
	must(err)
	_, err = f.WriteAt([]byte("end"), 256<<20-3)
	must(err)
	must(f.Close())
	var read atomic.Int64
	r, size := open(t, countingFS{m.Snapshot(), &read})
	if n := read.Load(); n > 4<<16 {
		t.Errorf("packing read %d bytes of the sparse file, want its two 64 KiB chunks of data twice (to hash, to store) at most", n)
	}
	if size > 3<<16 {
		t.Errorf("the pack of a 256 MiB file with two chunks of data is %d bytes", size)
	}
	pf, err := r.Open("s")
	must(err)
	defer pf.Close()
	d, err := pf.(io.Seeker).Seek(0, packreader.SeekData)
	if err != nil || d < 128<<20-1<<16 || d > 128<<20 {
		t.Errorf("the pack's first data at %d, %v; want the chunk of byte %d", d, err, 128<<20)
	}
	got := make([]byte, 6)
	if _, err := pf.(io.ReaderAt).ReadAt(got, 128<<20); err != nil || string(got) != "middle" {
		t.Errorf("ReadAt = %q, %v", got, err)
	}
}
