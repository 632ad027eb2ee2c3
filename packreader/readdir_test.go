package packreader_test

import (
	"bytes"
	"errors"
	"io/fs"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// openPacked returns a Reader of a pack of fsys, written in memory.
func openPacked(t *testing.T, fsys fs.FS, opts ...packwriter.Option) *packreader.Reader {
	t.Helper()
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, fsys, opts...); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestReadDirZero: a directory handle's ReadDir(0), like ReadDir(-1),
// returns every entry left, as fs.ReadDirFile says for n <= 0; it
// returned none.
func TestReadDirZero(t *testing.T) {
	for _, opts := range [][]packwriter.Option{nil, {packwriter.WithCompression(3)}} {
		r := openPacked(t, fstest.MapFS{"d/a": {}, "d/b": {}, "d/c": {}}, opts...)
		f, err := r.Open("d")
		if err != nil {
			t.Fatal(err)
		}
		d := f.(fs.ReadDirFile)
		if list, err := d.ReadDir(0); len(list) != 3 || err != nil {
			t.Errorf("first ReadDir(0) = %d entries, %v; want 3, nil", len(list), err)
		}
		if list, err := d.ReadDir(0); len(list) != 0 || err != nil {
			t.Errorf("ReadDir(0) at the end = %d entries, %v; want 0, nil", len(list), err)
		}
		f.Close()
		f, _ = r.Open("d")
		d = f.(fs.ReadDirFile)
		d.ReadDir(1)
		if list, err := d.ReadDir(0); len(list) != 2 || err != nil {
			t.Errorf("ReadDir(0) after ReadDir(1) = %d entries, %v; want 2, nil", len(list), err)
		}
		f.Close()
	}
}

// TestReadDirOfFile: ReadDir of a file fails as os.ReadDir does, at
// "open" (which os makes with O_DIRECTORY), with ENOTDIR.
func TestReadDirOfFile(t *testing.T) {
	r := openPacked(t, fstest.MapFS{"d/f": {Data: []byte("x")}})
	_, err := r.ReadDir("d/f")
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "d/f" || !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("ReadDir of a file: %v; want open d/f: not a directory", err)
	}
}
