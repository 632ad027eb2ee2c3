package mem

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/layer"
)

// sparseSource is a file of size bytes whose only data are the extents
// given, each full of one byte; it counts the bytes read from it.
type sparseSource struct {
	size int64
	ext  [][2]int64 // sorted, apart
	read int64
	off  int64
}

func (s *sparseSource) byteAt(off int64) byte {
	for _, e := range s.ext {
		if off >= e[0] && off < e[1] {
			return byte(e[0]>>16) | 1
		}
	}
	return 0
}

func (s *sparseSource) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) && off+int64(n) < s.size {
		p[n] = s.byteAt(off + int64(n))
		n++
	}
	s.read += int64(n)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (s *sparseSource) Read(p []byte) (int, error) {
	n, err := s.ReadAt(p, s.off)
	s.off += int64(n)
	return n, err
}

func (s *sparseSource) Seek(off int64, whence int) (int64, error) {
	if whence != layer.SeekData && whence != layer.SeekHole {
		return 0, errors.ErrUnsupported
	}
	if off >= s.size {
		return 0, syscall.ENXIO
	}
	for _, e := range s.ext {
		if whence == layer.SeekData && off < e[1] {
			return max(off, e[0]), nil
		}
		if whence == layer.SeekHole && off < e[0] {
			return off, nil
		}
		if whence == layer.SeekHole && off < e[1] {
			return e[1], nil
		}
	}
	if whence == layer.SeekData {
		return 0, syscall.ENXIO
	}
	return off, nil
}

func (s *sparseSource) SeeksHoles() bool           { return true }
func (s *sparseSource) Stat() (fs.FileInfo, error) { return sourceInfo{s.size}, nil }

type sourceInfo struct{ size int64 }

func (i sourceInfo) Name() string       { return "f" }
func (i sourceInfo) Size() int64        { return i.size }
func (i sourceInfo) Mode() fs.FileMode  { return 0o644 }
func (i sourceInfo) ModTime() time.Time { return time.Time{} }
func (i sourceInfo) IsDir() bool        { return false }
func (i sourceInfo) Sys() any           { return nil }

// TestCopyInReadsOnlyData copies in a file of a TiB whose data are three
// extents, from a source that says where its data is: the copy reads
// the extents and nothing else, and holds the same bytes.
func TestCopyInReadsOnlyData(t *testing.T) {
	src := &sparseSource{size: 1 << 40, ext: [][2]int64{{100, 70_000}, {1 << 30, 1<<30 + 5}, {1<<40 - 3, 1 << 40}}}
	s, err := copyState(Copy{Name: "f", Mode: 0o644, Data: src}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(70_000 - 100 + 5 + 3); src.read != want {
		t.Errorf("the copy read %d bytes of the source, want its %d bytes of data", src.read, want)
	}
	if s.data.Size() != src.size {
		t.Fatalf("size %d, want %d", s.data.Size(), src.size)
	}
	for _, off := range []int64{0, 99, 100, 69_999, 70_000, 1<<30 - 1, 1 << 30, 1<<30 + 4, 1<<30 + 5, 1<<40 - 4, 1<<40 - 3, 1<<40 - 1} {
		b := make([]byte, 1)
		s.data.readAt(b, off)
		if want := src.byteAt(off); b[0] != want {
			t.Errorf("byte %d = %d, want %d", off, b[0], want)
		}
	}
}
