package packwriter_test

import (
	"bytes"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// inode is a FileInfo.Sys with an owner and an inode, as packreader.Sys
// and the methods packwriter reads.
type inode struct {
	ino      uint64
	nlink    uint32
	uid, gid uint32
}

func (s *inode) Owner() (uint32, uint32) { return s.uid, s.gid }
func (s *inode) Inode() (uint64, uint32) { return s.ino, s.nlink }

func sysOf(t *testing.T, r *packreader.Reader, p string) *packreader.Sys {
	t.Helper()
	fi, err := r.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := fi.Sys().(*packreader.Sys)
	if !ok {
		t.Fatalf("%s: Sys %T", p, fi.Sys())
	}
	return s
}

func open(t *testing.T, fsys fs.FS, opts ...packwriter.Option) (*packreader.Reader, int) {
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
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
	return r, buf.Len()
}

// TestIssue16ZeroRuns: runs of zeros in a source that cannot report its
// holes (here a MapFS) are stored as holes too.
func TestIssue16ZeroRuns(t *testing.T) {
	data := make([]byte, 8<<20+1)
	data[len(data)-1] = 1
	for _, opts := range [][]packwriter.Option{nil, {packwriter.WithCompression(3)}} {
		r, size := open(t, fstest.MapFS{"z": {Data: data}}, opts...)
		if size > 16<<10 {
			t.Errorf("8 MiB of zeros and a byte pack to %d bytes", size)
		}
		got, err := r.ReadFile("z")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadFile: %v", err)
		}
	}
}

// TestIssue16Links: files that share a source inode become one inode of
// the pack, with their owner, but only when they are the same file: a
// source whose inode numbers repeat across different files (a union of
// packs, say) keeps them apart.
func TestIssue16Links(t *testing.T) {
	same := &inode{ino: 7, nlink: 3, uid: 1000, gid: 100}
	tree := fstest.MapFS{
		"a":     {Data: []byte("one"), Mode: 0o644, Sys: same},
		"d/b":   {Data: []byte("one"), Mode: 0o644, Sys: same},
		"d/c":   {Data: []byte("two"), Mode: 0o644, Sys: same}, // a repeated number, not the same file
		"e":     {Data: []byte("one"), Mode: 0o644, Sys: &inode{ino: 8, nlink: 1, uid: 5, gid: 6}},
		"owned": {Mode: fs.ModeDir | 0o755, Sys: &inode{ino: 9, nlink: 2, uid: 42, gid: 43}},
	}
	r, _ := open(t, tree, packwriter.WithCompression(3))
	a, b, c, e := sysOf(t, r, "a"), sysOf(t, r, "d/b"), sysOf(t, r, "d/c"), sysOf(t, r, "e")
	if a.Ino != b.Ino || a.Nlink != 2 || c.Ino == a.Ino || c.Nlink != 1 || e.Ino == a.Ino || e.Nlink != 1 {
		t.Errorf("a %+v, d/b %+v, d/c %+v, e %+v", a, b, c, e)
	}
	if a.Uid != 1000 || a.Gid != 100 || e.Uid != 5 || e.Gid != 6 {
		t.Errorf("owners: a %+v, e %+v", a, e)
	}
	if o := sysOf(t, r, "owned"); o.Uid != 42 || o.Gid != 43 || o.Nlink != 2 {
		t.Errorf("directory: %+v", o)
	}
	// Repacking the pack keeps owners and links.
	r2, _ := open(t, r)
	if a2, b2 := sysOf(t, r2, "a"), sysOf(t, r2, "d/b"); a2.Ino != b2.Ino || a2.Nlink != 2 || a2.Uid != 1000 {
		t.Errorf("repacked: a %+v, d/b %+v", a2, b2)
	}
}

// TestIssue16HoleAfterHole: a content that starts with zeros right after
// one that ended with zeros gets a hole of its own, so that its first
// frame holds its first byte.
func TestIssue16HoleAfterHole(t *testing.T) {
	a := make([]byte, 3<<16)
	a[0] = 1
	b := make([]byte, 3<<16)
	b[len(b)-1] = 2
	for _, opts := range [][]packwriter.Option{nil, {packwriter.WithCompression(3)}} {
		r, _ := open(t, fstest.MapFS{"a": {Data: a}, "b": {Data: b}}, opts...)
		for name, want := range map[string][]byte{"a": a, "b": b} {
			got, err := r.ReadFile(name)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %v", name, err)
			}
		}
	}
}
