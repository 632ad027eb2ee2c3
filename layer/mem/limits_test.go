package mem_test

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// checked returns a new layer whose invariants are checked when t ends.
func checked(t *testing.T) *mem.FS {
	f := mem.New()
	t.Cleanup(func() {
		if err := f.Check(); err != nil {
			t.Error(err)
		}
	})
	return f
}

func newChecked(t *testing.T) layer.FS { return checked(t) }

// TestIssue13SetgidMkdir is issue 13, item 2: Mkdir and MkdirAll under a
// setgid directory make setgid directories, and a snapshot keeps the bit.
func TestIssue13SetgidMkdir(t *testing.T) {
	conformance.Tests["SetgidMkdir"](t, newChecked)
	f := checked(t)
	if err := f.Mkdir("g", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod("g", fs.ModeSetgid|0o755); err != nil {
		t.Fatal(err)
	}
	snap := f.Snapshot()
	if err := f.MkdirAll("g/a/b", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"g/a", "g/a/b"} {
		if fi, err := f.Lstat(name); err != nil || fi.Mode() != fs.ModeDir|fs.ModeSetgid|0o700 {
			t.Errorf("Lstat(%s) = %v, %v; want a setgid directory", name, fi, err)
		}
	}
	if fi, err := snap.Lstat("g"); err != nil || fi.Mode() != fs.ModeDir|fs.ModeSetgid|0o755 {
		t.Errorf("snapshot: Lstat(g) = %v, %v", fi, err)
	}
}

// TestIssue13SymlinkEmptyTarget is issue 13, item 3: an empty target is
// ENOENT before newname is looked at (it was EEXIST for an existing name).
func TestIssue13SymlinkEmptyTarget(t *testing.T) {
	conformance.Tests["SymlinkEmptyTarget"](t, newChecked)
}

// TestIssue13OffsetsPastMax is issue 13, item 5: the layer's largest file
// is tmpfs's, math.MaxInt64 bytes; a read or write whose end passes it is
// EINVAL, as on tmpfs, where it was reported done and the data dropped.
func TestIssue13OffsetsPastMax(t *testing.T) {
	conformance.Tests["OffsetsPastMax"](t, newChecked)
	conformance.Tests["NegativeOffsets"](t, newChecked)
	f := checked(t)
	h, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The last byte there is can be written, read and snapshotted.
	if n, err := h.WriteAt([]byte("x"), math.MaxInt64-1); n != 1 || err != nil {
		t.Fatalf("WriteAt(x, MaxInt64-1) = %d, %v", n, err)
	}
	fi, err := h.Stat()
	if err != nil || fi.Size() != math.MaxInt64 {
		t.Fatalf("Stat = %v, %v; want size MaxInt64", fi, err)
	}
	snap := f.Snapshot()
	for _, fsys := range []fs.FS{f, snap} {
		r, err := fsys.Open("f")
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		n, err := r.(io.ReaderAt).ReadAt(buf[:1], math.MaxInt64-1)
		if n != 1 || err != nil || buf[0] != 'x' {
			t.Errorf("ReadAt(1 byte, MaxInt64-1) = %d, %v, %q; want x", n, err, buf[:1])
		}
		if n, err := r.(io.ReaderAt).ReadAt(buf[:1], 1<<40); n != 1 || err != nil || buf[0] != 0 {
			t.Errorf("ReadAt in the hole = %d, %v, %q; want a zero byte", n, err, buf[:1])
		}
		r.Close()
	}
	// Writing on from there is refused, and the offset stays.
	if _, err := h.Seek(math.MaxInt64-1, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n, err := h.Write([]byte("yz")); n != 0 || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Write(yz) at MaxInt64-1 = %d, %v; want 0, EINVAL", n, err)
	}
	if n, err := h.Write([]byte("y")); n != 1 || err != nil {
		t.Errorf("Write(y) at MaxInt64-1 = %d, %v", n, err)
	}
	if off, err := h.Seek(0, io.SeekCurrent); off != math.MaxInt64 || err != nil {
		t.Errorf("offset = %d, %v; want MaxInt64", off, err)
	}
	if n, err := h.Write([]byte("z")); n != 0 || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Write(z) at MaxInt64 = %d, %v; want 0, EINVAL", n, err)
	}
	// An O_APPEND write that would pass the end is refused too.
	a, err := f.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n, err := a.Write([]byte("w")); n != 0 || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("appending past MaxInt64 = %d, %v; want 0, EINVAL", n, err)
	}
	if err := h.Truncate(math.MaxInt64); err != nil {
		t.Errorf("Truncate(MaxInt64): %v", err)
	}
	if err := h.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if got, err := f.ReadFile("f"); string(got) != "\x00\x00\x00" || err != nil {
		t.Errorf("ReadFile after Truncate(3) = %q, %v", got, err)
	}
}

// TestIssue14NameLimits is issue 14, item 6: the layer refuses at creation
// what Linux refuses (NUL, an element over 255 bytes, a path or a symlink
// target of 4,096 bytes or more), for whiteouts too, and changes nothing.
func TestIssue14NameLimits(t *testing.T) {
	conformance.Tests["NameLimits"](t, newChecked)
	f := checked(t)
	if err := f.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	long := "d/" + strings.Repeat("n", 256)
	for _, c := range []struct {
		name string
		err  error
	}{
		{long, syscall.ENAMETOOLONG},
		{"d/a\x00b", syscall.EINVAL},
		{strings.Repeat("d/", 2047) + "dd", syscall.ENAMETOOLONG},
		{strings.Repeat("d/", 2048), fs.ErrInvalid}, // not an io/fs path: that first
		{"missing/" + strings.Repeat("n", 256), syscall.ENOENT},
	} {
		err := f.Whiteout(c.name)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "whiteout" || !errors.Is(err, c.err) {
			t.Errorf("Whiteout(%.20q...) = %.60v, want a whiteout PathError wrapping %v", c.name, err, c.err)
		}
	}
	if list, err := f.ReadDir("d"); len(list) != 0 || err != nil {
		t.Errorf("ReadDir(d) = %v, %v; want it empty", list, err)
	}
	if err := f.Whiteout("d/" + strings.Repeat("w", 255)); err != nil {
		t.Errorf("Whiteout(255 bytes): %v", err)
	}
}
