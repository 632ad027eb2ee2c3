package packfs

import (
	"bytes"
	"io/fs"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs"
)

// packCounter is a store directory that counts the bytes written to its
// packs.
type packCounter struct {
	*vfs.Dir
	written atomic.Int64
}

func (c *packCounter) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := c.Dir.OpenFile(name, flag, perm)
	if err != nil || !strings.HasPrefix(name, "pack-") {
		return f, err
	}
	return &countedFile{f, &c.written}, nil
}

type countedFile struct {
	vfs.File
	n *atomic.Int64
}

func (f *countedFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.n.Add(int64(n))
	return n, err
}

func (f *countedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

// heap returns the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCheckpointOpenFile writes one large file through one handle while
// automatic checkpoints run, as a program copying a file into a mounted
// store does. A checkpoint moves the open handle to the new union, whose
// upper layer must then hold the file: it shares the bytes the old one
// held (the log's mapped pages) rather than copy them into the heap, and
// the next checkpoint comes only once the log has grown by the file's
// size, so that the packs written in all stay within a small multiple of
// the file, not the square of the number of checkpoints.
func TestCheckpointOpenFile(t *testing.T) {
	const write = 1 << 20
	writes := 128
	if testsize.Short() || raceOn {
		writes = 48
	}
	dir, err := vfs.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := &packCounter{Dir: dir}
	s, err := Open("", &Options{FS: c, Sync: SyncNone, CheckpointBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), write/16)
	base := heap()
	for i := range writes {
		chunk[0] = byte(i)
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
		// A writer slower than the checkpoints (a program writing
		// through a mount, say): each one it set off ends first.
		s.bg.Wait()
	}
	size := int64(writes * write)
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	after := heap()
	if grown := int64(after) - int64(base); grown > size/4 {
		t.Errorf("with a %d-byte file open for writing across checkpoints the heap grew by %d bytes", size, grown)
	}
	if _, err := f.Write(chunk); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadFile("big")
	if err != nil || int64(len(got)) != size+write || got[0] != 0 || got[size-write] != byte(writes-1) {
		t.Fatalf("ReadFile: %d bytes, %v", len(got), err)
	}
	if w := c.written.Load(); w > 4*size {
		t.Errorf("writing a %d-byte file across checkpoints wrote %d bytes of packs (%.1fx)", size, w, float64(w)/float64(size))
	}
	t.Logf("%d-byte file: %d bytes of packs written (%.2fx); heap %d -> %d", size, c.written.Load(), float64(c.written.Load())/float64(size), base, after)
}
