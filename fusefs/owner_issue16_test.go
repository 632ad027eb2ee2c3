package fusefs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"golang.org/x/sys/unix"
)

func lstatOwner(t *testing.T, name string) (uint32, uint32) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(name, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid, st.Gid
}

// TestIssue16MountOwners: a mounted store shows the owners its files
// have, chown and lchown through the mount reach the store, and a chown
// drops setuid as the kernel does on tmpfs.
func TestIssue16MountOwners(t *testing.T) {
	s, err := packfs.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.WriteFile("f", []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Symlink("f", "l"); err != nil {
		t.Fatal(err)
	}
	if err := s.Lchown("f", 1234, 5678); err != nil {
		t.Fatal(err)
	}
	dir, _ := mountT(t, s, nil)
	if u, g := lstatOwner(t, filepath.Join(dir, "f")); u != 1234 || g != 5678 {
		t.Errorf("f through the mount: %d:%d, want 1234:5678", u, g)
	}
	if os.Getuid() != 0 {
		return // chown to another uid is root's
	}
	if err := os.Lchown(filepath.Join(dir, "l"), 42, 43); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(dir, "l"), 7, -1); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]uint32{"l": {42, 43}, "f": {7, 5678}} {
		fi, err := s.Lstat(name)
		if err != nil {
			t.Fatal(err)
		}
		if u, g, _ := layer.OwnerOf(fi); u != want[0] || g != want[1] {
			t.Errorf("%s in the store: %d:%d, want %v", name, u, g, want)
		}
		if u, g := lstatOwner(t, filepath.Join(dir, name)); u != want[0] || g != want[1] {
			t.Errorf("%s through the mount: %d:%d, want %v", name, u, g, want)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "f"), 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(dir, "f"), -1, -1); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "f")); err != nil || fi.Mode() != 0o755 {
		t.Errorf("after chown(-1, -1) of a setuid file: %v, %v", fi.Mode(), err)
	}
}

// TestIssue17SymlinkOwnTimes: utimensat with AT_SYMLINK_NOFOLLOW through
// the mount sets a stored link's own time (it had been dropped, since
// the store had no Lchtimes).
func TestIssue17SymlinkOwnTimes(t *testing.T) {
	s, err := packfs.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir, _ := mountT(t, s, nil)
	link := filepath.Join(dir, "l")
	if err := os.Symlink("missing", link); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	ts := []unix.Timespec{unix.NsecToTimespec(old.UnixNano()), unix.NsecToTimespec(old.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, link, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
	fi, err := s.Lstat("l")
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(old) {
		t.Errorf("the stored link's mtime: %v, want %v", fi.ModTime(), old)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the link's mtime through the mount: %v, %v", fi.ModTime(), err)
	}
}

// TestIssue16FchownRemoved: fchown and fchmod of a file removed while
// open, through the mount, change that file, as on tmpfs, and not the
// file made since under its name. They had failed with ENOENT: the kernel
// sends them without a handle, and the node had no name.
func TestIssue16FchownRemoved(t *testing.T) {
	s, err := packfs.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir, _ := mountT(t, s, nil)
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	uid, gid := 1234, 1235
	if os.Getuid() != 0 {
		uid, gid = -1, -1
	}
	if err := f.Chown(uid, gid); err != nil {
		t.Fatalf("fchown of the removed file: %v", err)
	}
	if err := f.Chmod(0o600); err != nil {
		t.Fatalf("fchmod of the removed file: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o777 != 0o600 || uid != -1 && (st.Uid != uint32(uid) || st.Gid != uint32(gid)) {
		t.Errorf("the removed file: %d:%d %o", st.Uid, st.Gid, st.Mode)
	}
	fi, err := s.Lstat("f")
	if err != nil {
		t.Fatal(err)
	}
	if u, _, _ := layer.OwnerOf(fi); fi.Mode() != 0o644 || u != layer.NoOwner {
		t.Errorf("the new file under the name changed: %v, uid %d", fi.Mode(), u)
	}
}
