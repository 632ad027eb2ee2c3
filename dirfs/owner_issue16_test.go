//go:build linux

package dirfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/layer"
)

// TestIssue17DirfsLchtimes: Lchtimes sets a symlink's own times, dangling
// or pointing out of the root, and never its target's; a path through an
// escaping link is refused.
func TestIssue17DirfsLchtimes(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	mustWrite(t, filepath.Join(outside, "o"))
	mustWrite(t, filepath.Join(dir, "f"))
	for _, l := range [][2]string{{"f", "l"}, {"missing", "dangling"}, {outside, "esc"}, {"loop", "loop"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	f, err := dirfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t1 := time.Unix(1000, 7)
	fBefore, _ := os.Stat(filepath.Join(dir, "f"))
	oBefore, _ := os.Stat(outside)
	for _, name := range []string{"l", "dangling", "esc", "loop"} {
		if err := layer.Lchtimes(f, name, t1, t1); err != nil {
			t.Fatalf("Lchtimes(%s) = %v", name, err)
		}
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.ModTime().Equal(t1) {
			t.Errorf("Lchtimes(%s): the link's mtime is %v", name, fi.ModTime())
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "f")); !fi.ModTime().Equal(fBefore.ModTime()) {
		t.Errorf("Lchtimes(l) changed the target")
	}
	if fi, _ := os.Stat(outside); !fi.ModTime().Equal(oBefore.ModTime()) {
		t.Errorf("Lchtimes(esc) changed a directory outside the root")
	}
	if err := f.Lchtimes("esc/o", t1, t1); !errors.Is(err, dirfs.ErrEscapes) {
		t.Errorf("Lchtimes(esc/o) = %v, want ErrEscapes", err)
	}
	if fi, _ := os.Stat(filepath.Join(outside, "o")); fi.ModTime().Equal(t1) {
		t.Errorf("Lchtimes(esc/o) reached outside the root")
	}
	// Only mtime given: atime is left as it was.
	li, _ := os.Lstat(filepath.Join(dir, "l"))
	if err := f.Lchtimes("l", time.Time{}, time.Unix(2000, 0)); err != nil {
		t.Fatal(err)
	}
	lj, _ := os.Lstat(filepath.Join(dir, "l"))
	at := func(fi fs.FileInfo) syscall.Timespec { return fi.Sys().(*syscall.Stat_t).Atim }
	if at(li) != at(lj) || !lj.ModTime().Equal(time.Unix(2000, 0)) {
		t.Errorf("Lchtimes(l, zero, t) changed atime or missed mtime")
	}
	for _, c := range []struct {
		name string
		want error
	}{{"/l", fs.ErrInvalid}, {"l/", fs.ErrInvalid}, {"../l", dirfs.ErrEscapes}, {"missing", fs.ErrNotExist}, {"f/x", syscall.ENOTDIR}} {
		err := f.Lchtimes(c.name, t1, t1)
		var pe *fs.PathError
		if !errors.As(err, &pe) || !errors.Is(err, c.want) {
			t.Errorf("Lchtimes(%q) = %v, want a *PathError wrapping %v", c.name, err, c.want)
		}
	}
}

// TestIssue16DirfsLchown: owners show through layer.OwnerOf; Lchown
// changes a link pointing out of the root, Chown through it is refused.
func TestIssue16DirfsLchown(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	mustWrite(t, filepath.Join(dir, "f"))
	if err := os.Symlink(outside, filepath.Join(dir, "esc")); err != nil {
		t.Fatal(err)
	}
	f, err := dirfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Chown("esc", 1, 1); !errors.Is(err, dirfs.ErrEscapes) {
		t.Errorf("Chown(esc) = %v, want ErrEscapes", err)
	}
	err = f.Lchown("esc", 1, 2)
	if os.Getuid() != 0 {
		if !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("Lchown(esc) not as root = %v, want EPERM", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	fi, err := f.Lstat("esc")
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid, ok := layer.OwnerOf(fi); !ok || uid != 1 || gid != 2 {
		t.Errorf("Lchown(esc, 1, 2) shows %d:%d %v", uid, gid, ok)
	}
	if st, _ := os.Stat(outside); st.Sys().(*syscall.Stat_t).Uid == 1 {
		t.Errorf("Lchown(esc) changed a directory outside the root")
	}
}

func mustWrite(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}
