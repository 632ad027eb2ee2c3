package packwriter_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// failing wraps an fs.FS so that opening the names in bad fails once the
// name has been opened ok times, and reads of them fail after half.
type failing struct {
	fs.FS
	bad   map[string]int
	opens map[string]int
}

func (f *failing) Open(name string) (fs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	ok, isBad := f.bad[name]
	if !isBad {
		return file, nil
	}
	f.opens[name]++
	if f.opens[name] <= ok {
		return file, nil
	}
	return &halfFile{File: file}, nil
}

// halfFile reads one buffer, then fails with EIO.
type halfFile struct {
	fs.File
	read bool
}

func (h *halfFile) Read(p []byte) (int, error) {
	if h.read {
		return 0, syscall.EIO
	}
	h.read = true
	return h.File.Read(p)
}

func tree() fstest.MapFS {
	return fstest.MapFS{
		"a.txt":       {Data: []byte("alpha")},
		"big1":        {Data: bytes.Repeat([]byte("1"), 3<<20)},
		"big2":        {Data: bytes.Repeat([]byte("2"), 3<<20)},
		"d/small.txt": {Data: []byte("small")},
		"d/pipe":      {Mode: fs.ModeNamedPipe},
		"z.txt":       {Data: []byte("zulu")},
	}
}

// TestSkip: with WithSkip, an entry that cannot be read (here, a large
// file failing half way through its copy, after part of it is out) and
// one of a type packs do not hold are left out, and the rest reads back
// whole: offsets stay right after a failed copy.
func TestSkip(t *testing.T) {
	src := &failing{FS: tree(), bad: map[string]int{"big1": 1}, opens: map[string]int{}}
	var skipped []string
	var buf fileBuffer
	err := packwriter.Write(&buf, src, packwriter.WithSkip(func(p string, err error) error {
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != p {
			t.Errorf("skip %s: %v is not a *fs.PathError naming it", p, err)
		}
		skipped = append(skipped, p+": "+err.Error())
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 2 || !strings.Contains(skipped[0], "big1") || !strings.Contains(skipped[1], "d/pipe: a FIFO") {
		t.Errorf("skipped %q", skipped)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.b), int64(len(buf.b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
	want := tree()
	delete(want, "big1")
	delete(want, "d/pipe")
	for name, f := range want {
		got, err := fs.ReadFile(r, name)
		if err != nil || !bytes.Equal(got, f.Data) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	for _, name := range []string{"big1", "d/pipe"} {
		if _, err := r.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want it left out", name, err)
		}
	}
	if ents, _ := r.ReadDir("d"); len(ents) != 1 {
		t.Errorf("d lists %v", ents)
	}
}

// TestSkipStream: a copy that fails half way into a stream cannot be
// taken back, and stops Write whatever the skip function says.
func TestSkipStream(t *testing.T) {
	src := &failing{FS: tree(), bad: map[string]int{"big1": 1}, opens: map[string]int{}}
	err := packwriter.Write(io.Discard, src, packwriter.WithSkip(func(string, error) error { return nil }))
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "stream") {
		t.Errorf("Write = %v, want EIO and that the stream cannot be taken back", err)
	}
}

// fileBuffer is an in-memory file: a writer that seeks and truncates.
type fileBuffer struct {
	b   []byte
	off int
}

func (f *fileBuffer) Write(p []byte) (int, error) {
	if need := f.off + len(p); need > len(f.b) {
		f.b = append(f.b, make([]byte, need-len(f.b))...)
	}
	copy(f.b[f.off:], p)
	f.off += len(p)
	return len(p), nil
}

func (f *fileBuffer) Seek(off int64, whence int) (int64, error) {
	if whence != io.SeekStart {
		return 0, errors.ErrUnsupported
	}
	f.off = int(off)
	return off, nil
}

func (f *fileBuffer) Truncate(n int64) error {
	f.b = f.b[:n]
	return nil
}

// TestSkipStops: without WithSkip the first bad entry stops Write, and a
// skip function's error stops it too.
func TestSkipStops(t *testing.T) {
	if err := packwriter.Write(io.Discard, tree()); err == nil || !strings.Contains(err.Error(), "a FIFO") {
		t.Errorf("Write = %v, want the FIFO's error", err)
	}
	stop := errors.New("stop")
	err := packwriter.Write(io.Discard, tree(), packwriter.WithSkip(func(string, error) error { return stop }))
	if !errors.Is(err, stop) {
		t.Errorf("Write = %v, want %v", err, stop)
	}
}

// TestFilter: a filtered directory goes with its subtree.
func TestFilter(t *testing.T) {
	var buf bytes.Buffer
	keep := func(p string, fi fs.FileInfo) bool { return p != "d" && p != "big2" }
	if err := packwriter.Write(&buf, tree(), packwriter.WithFilter(keep), packwriter.WithSkip(func(string, error) error { return nil })); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := r.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "a.txt big1 z.txt" {
		t.Errorf("root lists %q", names)
	}
}
