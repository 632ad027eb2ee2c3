package packwriter_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// lateFail wraps an fs.FS so that the reads of the file bad through its
// open number onOpen (from 1) fail with EIO after bytes have been read.
type lateFail struct {
	fs.FS
	bad    string
	onOpen int
	after  int
	opens  int
}

func (l *lateFail) Open(name string) (fs.File, error) {
	f, err := l.FS.Open(name)
	if err != nil || name != l.bad {
		return f, err
	}
	if l.opens++; l.opens != l.onOpen {
		return f, nil
	}
	return &lateFile{File: f, l: l}, nil
}

type lateFile struct {
	fs.File
	l    *lateFail
	read int
}

func (f *lateFile) Read(p []byte) (int, error) {
	if f.read >= f.l.after {
		return 0, syscall.EIO
	}
	p = p[:min(len(p), f.l.after-f.read)]
	n, err := f.File.Read(p)
	f.read += n
	return n, err
}

// TestWriteFileWriteback: WriteFile starts the writeback of each MiB as it
// goes, which must change no byte of the pack, also when a failed copy of
// a large file (b, after 2.5 MiB of it are out) takes the output back
// behind a range already handed to writeback. The pack is Write's, byte
// for byte, in both formats.
func TestWriteFileWriteback(t *testing.T) {
	src := func(onOpen int) fs.FS {
		return &lateFail{FS: fstest.MapFS{
			"a":   {Data: bytes.Repeat([]byte("a"), 3<<20/2)},
			"b":   {Data: bytes.Repeat([]byte("b"), 4<<20)},
			"c":   {Data: bytes.Repeat([]byte("c"), 3<<20)},
			"d/e": {Data: []byte("small")},
		}, bad: "b", onOpen: onOpen, after: 5 << 19}
	}
	for _, c := range []struct{ format, onOpen int }{{2, 1}, {2, 2}, {3, 1}, {3, 2}} {
		v := c.format
		var skipped []string
		skip := packwriter.WithSkip(func(p string, _ error) error { skipped = append(skipped, p); return nil })
		var buf fileBuffer
		if err := packwriter.Write(&buf, src(c.onOpen), skip, packwriter.WithFormat(v)); err != nil {
			t.Fatal(err)
		}
		if len(skipped) != 1 || skipped[0] != "b" {
			t.Fatalf("skipped %q, want b", skipped)
		}
		name := filepath.Join(t.TempDir(), "t.pack")
		if err := packwriter.WriteFile(name, src(c.onOpen), skip, packwriter.WithFormat(v)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, buf.b) {
			t.Fatalf("format %d: WriteFile wrote %d bytes unlike Write's %d", v, len(got), len(buf.b))
		}
		r, err := packreader.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Verify(); err != nil {
			t.Fatal(err)
		}
		_, err = r.Lstat("b")
		r.Close()
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("format %d: b: %v, want it left out", v, err)
		}
	}
}
