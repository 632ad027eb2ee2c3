package packfs_test

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// wantMode fails unless name in fsys has mode.
func wantMode(t *testing.T, fsys fs.FS, name string, mode fs.FileMode) {
	t.Helper()
	fi, err := fs.Lstat(fsys, name)
	if err != nil {
		t.Errorf("Lstat(%s): %v", name, err)
		return
	}
	if fi.Mode() != mode {
		t.Errorf("Lstat(%s).Mode() = %v, want %v", name, fi.Mode(), mode)
	}
}

// setgidLower returns a pack holding the setgid directory g, and g/sub
// made inside it, as a union's only lower.
func setgidLower(t *testing.T) fs.FS {
	t.Helper()
	base := mem.New()
	if err := base.Mkdir("g", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := base.Chmod("g", fs.ModeSetgid|0o755); err != nil {
		t.Fatal(err)
	}
	if err := base.Mkdir("g/sub", 0o700); err != nil {
		t.Fatal(err)
	}
	return packOf(t, base.Snapshot())
}

// TestIssue13SetgidUnionLowerParent is issue 13, item 2, through the
// union: a directory made in a setgid directory that only a lower layer
// holds is setgid, and so are the parents MkdirAll makes there.
func TestIssue13SetgidUnionLowerParent(t *testing.T) {
	lower := setgidLower(t)
	wantMode(t, lower, "g/sub", fs.ModeDir|fs.ModeSetgid|0o700)
	u := packfs.New(mem.New(), lower)
	if err := u.Mkdir("g/c", 0o750); err != nil {
		t.Fatal(err)
	}
	wantMode(t, u, "g/c", fs.ModeDir|fs.ModeSetgid|0o750)
	wantMode(t, u, "g", fs.ModeDir|fs.ModeSetgid|0o755)
	if err := u.MkdirAll("g/sub/x/y", 0o700); err != nil {
		t.Fatal(err)
	}
	wantMode(t, u, "g/sub/x", fs.ModeDir|fs.ModeSetgid|0o700)
	wantMode(t, u, "g/sub/x/y", fs.ModeDir|fs.ModeSetgid|0o700)
	if err := u.WriteFile("g/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantMode(t, u, "g/f", 0o644)
	// The same through a snapshot put below a fresh upper, as a settled
	// union does.
	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	u2 := packfs.New(mem.New(), snap)
	if err := u2.Mkdir("g/c/d", 0o755); err != nil {
		t.Fatal(err)
	}
	wantMode(t, u2, "g/c/d", fs.ModeDir|fs.ModeSetgid|0o755)
}

// TestIssue13SetgidStore is issue 13, item 2, through the durable store:
// the inherited bit is logged, replayed and checkpointed.
func TestIssue13SetgidStore(t *testing.T) {
	dir := t.TempDir()
	opts := &packfs.Options{Sync: packfs.SyncNone}
	s, err := packfs.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Mkdir("g", 0o755))
	must(s.Chmod("g", fs.ModeSetgid|0o755))
	must(s.Mkdir("g/c", 0o700))
	must(s.MkdirAll("g/x/y", 0o750))
	check := func(when string) {
		t.Helper()
		for name, mode := range map[string]fs.FileMode{
			"g":     fs.ModeDir | fs.ModeSetgid | 0o755,
			"g/c":   fs.ModeDir | fs.ModeSetgid | 0o700,
			"g/x":   fs.ModeDir | fs.ModeSetgid | 0o750,
			"g/x/y": fs.ModeDir | fs.ModeSetgid | 0o750,
		} {
			fi, err := s.Lstat(name)
			if err != nil || fi.Mode() != mode {
				t.Errorf("%s: Lstat(%s) = %v, %v; want mode %v", when, name, fi, err, mode)
			}
		}
	}
	check("live")
	must(s.Close())
	s, err = packfs.Open(dir, opts)
	must(err)
	check("after reopening (replay)")
	must(s.Checkpoint())
	must(s.Close())
	s, err = packfs.Open(dir, opts)
	must(err)
	defer s.Close()
	check("after a checkpoint and reopening")
	must(s.Mkdir("g/after", 0o711))
	wantMode(t, s, "g/after", fs.ModeDir|fs.ModeSetgid|0o711)
}

// TestIssue13SymlinkEmptyTargetUnion is issue 13, item 3, through the
// union: the empty target is refused first, before the new name is looked
// up in any layer and before anything is copied up.
func TestIssue13SymlinkEmptyTargetUnion(t *testing.T) {
	base := mem.New()
	if err := base.Mkdir("a", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := base.WriteFile("a/c", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	upper := mem.New()
	u := packfs.New(upper, packOf(t, base.Snapshot()))
	for _, name := range []string{"a/c", "a/new", "a/c/x", "missing/x"} {
		err := u.Symlink("", name)
		var le *os.LinkError
		if !errors.As(err, &le) || !errors.Is(err, fs.ErrNotExist) || le.Op != "symlink" || le.New != name {
			t.Errorf("Symlink(\"\", %q) = %v, want a symlink LinkError wrapping ENOENT", name, err)
		}
	}
	if list, _ := upper.ReadDir("."); len(list) != 0 {
		t.Errorf("the refused symlinks copied %v up", list)
	}
}

// TestIssue14NameLimitsUnion is issue 14, item 6, through the union: names
// Linux refuses are refused before any copy-up, so that a failed creation
// leaves even the upper layer as it was.
func TestIssue14NameLimitsUnion(t *testing.T) {
	base := mem.New()
	if err := base.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := base.WriteFile("d/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	upper := mem.New()
	u := packfs.New(upper, packOf(t, base.Snapshot()))
	long := "d/" + strings.Repeat("n", 256)
	check := func(call string, err error, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s = %.80v, want %v", call, err, want)
		}
	}
	_, err := u.Create(long)
	check("Create(d/256 bytes)", err, syscall.ENAMETOOLONG)
	check("Mkdir(d/256 bytes)", u.Mkdir(long, 0o755), syscall.ENAMETOOLONG)
	check("Symlink(f, d/256 bytes)", u.Symlink("f", long), syscall.ENAMETOOLONG)
	check("Rename(d/f, d/256 bytes)", u.Rename("d/f", long), syscall.ENAMETOOLONG)
	check("WriteFile(d/NUL)", u.WriteFile("d/a\x00b", nil, 0o644), syscall.EINVAL)
	check("Mkdir(d/NUL)", u.Mkdir("d/a\x00b", 0o755), syscall.EINVAL)
	check("Rename(d/f, d/NUL)", u.Rename("d/f", "d/a\x00b"), syscall.EINVAL)
	check("Symlink(4,096 bytes, d/l)", u.Symlink(strings.Repeat("t", 4096), "d/l"), syscall.ENAMETOOLONG)
	if list, _ := upper.ReadDir("."); len(list) != 0 {
		t.Errorf("the refused creations copied %v up", list)
	}
	// A limit applies to the name created, wherever its parent lives.
	ok := "d/" + strings.Repeat("m", 255)
	if err := u.WriteFile(ok, []byte("y"), 0o644); err != nil {
		t.Errorf("WriteFile(d/255 bytes): %v", err)
	}
}

// TestIssue13OffsetsPastMaxUnion is issue 13, item 5, through the union,
// on a file copied up from a lower and on one made in the upper.
func TestIssue13OffsetsPastMaxUnion(t *testing.T) {
	base := mem.New()
	if err := base.WriteFile("low", []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := packfs.New(mem.New(), packOf(t, base.Snapshot()))
	conformance.Tests["OffsetsPastMax"](t, func(t *testing.T) layer.FS { return u })
	f, err := u.OpenFile("low", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := f.WriteAt([]byte("xy"), math.MaxInt64-1); n != 0 || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("WriteAt(xy, MaxInt64-1) on a copied-up file = %d, %v; want 0, EINVAL", n, err)
	}
	if got, err := fs.ReadFile(u, "low"); string(got) != "0123456789" || err != nil {
		t.Errorf("ReadFile(low) = %q, %v", got, err)
	}
}

// TestIssue13SetgidMkdirAllOneStep: MkdirAll's one-step paths (the
// union's chain below its first Mkdir, mem's own chain, and a copy-up of
// a setgid directory) keep and inherit the setgid bit, as one Mkdir at a
// time does.
func TestIssue13SetgidMkdirAllOneStep(t *testing.T) {
	u := packfs.New(mem.New(), setgidLower(t))
	if err := u.MkdirAll("g/a/b/c/d", 0o750); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"g/a", "g/a/b", "g/a/b/c", "g/a/b/c/d"} {
		wantMode(t, u, p, fs.ModeDir|fs.ModeSetgid|0o750)
	}
	// A file written in the lower's setgid directory copies it up.
	if err := u.WriteFile("g/sub/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantMode(t, u, "g/sub", fs.ModeDir|fs.ModeSetgid|0o700)
	wantMode(t, u, "g", fs.ModeDir|fs.ModeSetgid|0o755)

	m := mem.New()
	if err := m.Mkdir("s", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Chmod("s", fs.ModeSetgid|0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.MkdirAll("s/x/y/z", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"s/x", "s/x/y", "s/x/y/z"} {
		wantMode(t, m, p, fs.ModeDir|fs.ModeSetgid|0o700)
	}
}
