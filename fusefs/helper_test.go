package fusefs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/fusefs"
)

// needFuse skips the test when /dev/fuse cannot be opened.
func needFuse(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("FUSE unavailable: %v", err)
	}
	f.Close()
}

// mountT mounts fsys on a new directory under t.TempDir and unmounts it
// when the test ends, lazily if it is still busy. A watchdog aborts the
// mount shortly before the test's deadline, so that a hung server fails
// the test rather than hanging its callers.
func mountT(t testing.TB, fsys fs.FS, opts *fusefs.Options) (string, *fusefs.Server) {
	t.Helper()
	needFuse(t)
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := fusefs.Mount(dir, fsys, opts)
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	var stop *time.Timer
	if tt, ok := t.(*testing.T); ok {
		if d, ok := tt.Deadline(); ok {
			stop = time.AfterFunc(time.Until(d)-15*time.Second, func() {
				syscall.Unmount(dir, syscall.MNT_DETACH|syscall.MNT_FORCE)
			})
		}
	}
	t.Cleanup(func() {
		if stop != nil {
			stop.Stop()
		}
		if err := srv.Unmount(); err != nil {
			t.Logf("unmount %s: %v; detaching", dir, err)
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				t.Errorf("lazy unmount %s: %v", dir, err)
			}
		}
		srv.Wait()
	})
	return dir, srv
}
