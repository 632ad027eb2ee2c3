package packfs_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

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
