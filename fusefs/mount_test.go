package fusefs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/fusefs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"golang.org/x/sys/unix"
)

func ino(t *testing.T, p string) (uint64, uint64) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino, uint64(st.Nlink)
}

// direntInos lists dir with getdents64 and returns each name's d_ino.
func direntInos(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	inos := map[string]uint64{}
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return inos
		}
		for b := buf[:n]; len(b) > 0; {
			reclen := binary.LittleEndian.Uint16(b[16:])
			name := b[19:reclen]
			name = name[:bytes.IndexByte(name, 0)]
			inos[string(name)] = binary.LittleEndian.Uint64(b)
			b = b[reclen:]
		}
	}
}

// TestIssue17Inodes: inode numbers are distinct, stable and follow a
// rename; a listing gives the numbers stat gives; a directory's link
// count is 2 and one per subdirectory.
func TestIssue17Inodes(t *testing.T) {
	m := mem.New()
	for _, d := range []string{"d", "d/x", "d/y", "e"} {
		if err := m.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"d/f", "d/g", "top"} {
		if err := m.WriteFile(f, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, srv := mountT(t, m, nil)
	listed := direntInos(t, filepath.Join(dir, "d"))
	seen := map[uint64]string{}
	for _, name := range []string{"d/f", "d/g", "d/x", "d/y", "e", "top", "d"} {
		i, _ := ino(t, filepath.Join(dir, name))
		if other, dup := seen[i]; dup {
			t.Errorf("%s and %s share inode %d", name, other, i)
		}
		seen[i] = name
		if again, _ := ino(t, filepath.Join(dir, name)); again != i {
			t.Errorf("%s: inode %d, then %d", name, i, again)
		}
		if d, base := filepath.Split(name); d == "d/" && listed[base] != i {
			t.Errorf("getdents gives %s inode %d, stat %d", name, listed[base], i)
		}
	}
	if _, ok := listed["."]; !ok {
		t.Errorf("listing without \".\": %v", listed)
	}
	if _, n := ino(t, filepath.Join(dir, "d")); n != 4 {
		t.Errorf("d has %d links, want 4", n)
	}
	if _, n := ino(t, filepath.Join(dir, "d/f")); n != 1 {
		t.Errorf("d/f has %d links, want 1", n)
	}
	if _, n := ino(t, dir); n != 4 {
		t.Errorf("root has %d links, want 4", n)
	}
	before, _ := ino(t, filepath.Join(dir, "d/f"))
	if err := os.Rename(filepath.Join(dir, "d/f"), filepath.Join(dir, "e/f")); err != nil {
		t.Fatal(err)
	}
	if after, _ := ino(t, filepath.Join(dir, "e/f")); after != before {
		t.Errorf("rename changed the inode from %d to %d", before, after)
	}
	if err := os.Mkdir(filepath.Join(dir, "d/z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, n := ino(t, filepath.Join(dir, "d")); n != 5 {
		t.Errorf("after mkdir, d has %d links, want 5", n)
	}
	if err := os.Rename(filepath.Join(dir, "d/z"), filepath.Join(dir, "e/z")); err != nil {
		t.Fatal(err)
	}
	if _, n := ino(t, filepath.Join(dir, "d")); n != 4 {
		t.Errorf("after a rename out, d has %d links, want 4", n)
	}
	if _, n := ino(t, filepath.Join(dir, "e")); n != 3 {
		t.Errorf("after a rename in, e has %d links, want 3", n)
	}
	if err := os.Remove(filepath.Join(dir, "e/z")); err != nil {
		t.Fatal(err)
	}
	if _, n := ino(t, filepath.Join(dir, "e")); n != 2 {
		t.Errorf("after rmdir, e has %d links, want 2", n)
	}
	// A subdirectory made beside the mount counts once Invalidate says so.
	if err := m.Mkdir("e/outside", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := srv.Invalidate("e/outside"); err != nil {
		t.Fatal(err)
	}
	if _, n := ino(t, filepath.Join(dir, "e")); n != 3 {
		t.Errorf("after a mkdir beside the mount, e has %d links, want 3", n)
	}
}

func packOf(t *testing.T, m *mem.FS) *packreader.Reader {
	t.Helper()
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIssue17ReadOnly: a pack mounts read-only: its files, links and
// statfs read, and every change is EROFS.
func TestIssue17ReadOnly(t *testing.T) {
	m := mem.New()
	if err := m.WriteFile("f", []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Symlink("f", "l"); err != nil {
		t.Fatal(err)
	}
	dir, _ := mountT(t, packOf(t, m), nil)
	if b, err := os.ReadFile(filepath.Join(dir, "l")); err != nil || string(b) != "data" {
		t.Fatalf("read through link: %q, %v", b, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "l")); err != nil || target != "f" {
		t.Fatalf("readlink: %q, %v", target, err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Namelen != 255 {
		t.Fatalf("statfs: %+v, %v", st, err)
	}
	changes := map[string]func() error{
		"create": func() error { return os.WriteFile(filepath.Join(dir, "g"), nil, 0o644) },
		"write":  func() error { return os.WriteFile(filepath.Join(dir, "f"), nil, 0o644) },
		"mkdir":  func() error { return os.Mkdir(filepath.Join(dir, "d"), 0o755) },
		"remove": func() error { return os.Remove(filepath.Join(dir, "f")) },
		"rename": func() error { return os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "g")) },
		"chmod":  func() error { return os.Chmod(filepath.Join(dir, "f"), 0o600) },
		"link":   func() error { return os.Symlink("f", filepath.Join(dir, "k")) },
		"chtimes": func() error {
			return os.Chtimes(filepath.Join(dir, "f"), time.Now(), time.Now())
		},
	}
	for name, change := range changes {
		if err := change(); !errors.Is(err, syscall.EROFS) {
			t.Errorf("%s: %v, want EROFS", name, err)
		}
	}
}

// TestIssue17RenameFlags: RENAME_NOREPLACE refuses an existing target
// with EEXIST; RENAME_EXCHANGE, which no layer call does in one step, is
// EINVAL and changes nothing.
func TestIssue17RenameFlags(t *testing.T) {
	m := mem.New()
	dir, _ := mountT(t, m, nil)
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte(filepath.Base(p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("RENAME_NOREPLACE onto b: %v, want EEXIST", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("RENAME_EXCHANGE: %v, want EINVAL", err)
	}
	for _, p := range []string{a, b} {
		if got, err := os.ReadFile(p); err != nil || string(got) != filepath.Base(p) {
			t.Errorf("%s: %q, %v", p, got, err)
		}
	}
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, c, unix.RENAME_NOREPLACE); err != nil {
		t.Errorf("RENAME_NOREPLACE onto a free name: %v", err)
	}
	if got, err := m.ReadFile("c"); err != nil || string(got) != "a" {
		t.Errorf("c: %q, %v", got, err)
	}
}

// TestIssue17FsyncDurable: fsync through a mounted store is a durable
// commit: a read-only open of the store beside the mount sees it.
func TestIssue17FsyncDurable(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "store")
	s, err := packfs.Open(storeDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir, _ := mountT(t, s, nil)
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("synced"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	ro, err := packfs.Open(storeDir, &packfs.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.ReadFile("f"); err != nil || string(got) != "synced" {
		t.Errorf("after fsync, the store holds %q, %v", got, err)
	}
}

// TestIssue17Invalidate: a change made beside the mount shows through it
// once Invalidate is called, however long the kernel may cache.
func TestIssue17Invalidate(t *testing.T) {
	m := mem.New()
	if err := m.WriteFile("f", []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, srv := mountT(t, m, &fusefs.Options{EntryTimeout: time.Hour, AttrTimeout: time.Hour, NegativeTimeout: time.Hour})
	if got, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(got) != "old" {
		t.Fatalf("%q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "g")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("g: %v", err)
	}
	if err := m.WriteFile("f", []byte("newer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFile("g", []byte("g"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"f", "g"} {
		if err := srv.Invalidate(name); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(got) != "newer" {
		t.Errorf("f after Invalidate: %q, %v", got, err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "g")); err != nil || string(got) != "g" {
		t.Errorf("g after Invalidate: %q, %v", got, err)
	}
	if err := srv.Invalidate("../x"); !errors.Is(err, os.ErrInvalid) {
		t.Errorf("Invalidate(../x): %v", err)
	}
}

// TestIssue17SymlinkTimes: utimensat with AT_SYMLINK_NOFOLLOW on a link
// in the mount (as rsync -a and tar x make it) is the link's own, never
// its target's: a dangling link succeeds, and a target keeps its times.
// It had set the target's times, and failed with ENOENT on a dangling
// link (rsync: "failed to set times").
func TestIssue17SymlinkTimes(t *testing.T) {
	s, err := packfs.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir, _ := mountT(t, s, nil)
	target := filepath.Join(dir, "t")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	for name, to := range map[string]string{"l": "t", "d": "missing"} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		ts := []unix.Timespec{unix.NsecToTimespec(now.UnixNano()), unix.NsecToTimespec(now.UnixNano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(dir, name), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Errorf("utimensat(%s -> %s, AT_SYMLINK_NOFOLLOW): %v", name, to, err)
		}
	}
	if fi, err := os.Stat(target); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("the link's target after setting the link's times: %v, %v; want mtime %v", fi.ModTime(), err, old)
	}
}
