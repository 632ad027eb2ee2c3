// Package testmount mounts small, real file systems for tests of full
// disks: a tmpfs, or an ext4 image on a loop device, under a test's
// temporary directory, unmounted when the test ends. The two differ
// where it matters to a log that reserves blocks: a fallocate that finds
// too little room gives back nothing on tmpfs, but on ext4 keeps the
// blocks it found and grows the file over them.
package testmount

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a file system of kind "tmpfs" or "ext4", of size bytes,
// on a new directory under t.TempDir, and returns it. It skips the test
// where that cannot be done (not root, no mkfs.ext4, no loop device).
func Mount(t testing.TB, kind string, size int64) string {
	t.Helper()
	base := t.TempDir()
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	switch kind {
	case "tmpfs":
		if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
			if errors.Is(err, syscall.EPERM) {
				t.Skipf("cannot mount a tmpfs (not root?): %v", err)
			}
			t.Fatalf("mount tmpfs: %v", err)
		}
	case "ext4":
		img := filepath.Join(base, "ext4.img")
		if err := os.WriteFile(img, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, size); err != nil {
			t.Fatal(err)
		}
		// -m 0: no blocks kept for root, which the test is.
		if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
			t.Skipf("no mkfs.ext4: %v %s", err, out)
		}
		if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
			t.Skipf("cannot mount an ext4 image on a loop device: %v %s", err, out)
		}
	default:
		t.Fatalf("testmount: no kind %q", kind)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	})
	return mnt
}

// Free returns the bytes free to the caller on the file system of dir.
func Free(t testing.TB, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}
