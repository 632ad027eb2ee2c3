package fusefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestIssue17SelfChangesSkipped makes changes through the mount, of
// every kind, and one beside it: only the one beside reaches the
// watcher, since the kernel knows what it did itself.
func TestIssue17SelfChangesSkipped(t *testing.T) {
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		t.Skipf("FUSE unavailable: %v", err)
	} else {
		f.Close()
	}
	m := mem.New()
	spy, _ := m.Watch(nil) // every change, from anywhere
	defer spy.Close()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := Mount(dir, m, &Options{EntryTimeout: time.Hour, AttrTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Unmount(); err != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		srv.Wait()
	}()
	if srv.m.watch == nil {
		t.Fatal("a mount of the in-memory layer does not watch it")
	}
	// A second watcher with the mount's filter keeps what the mount's
	// own does, without racing its loop for the changes.
	own, _ := m.Watch(srv.m.fromBeside)
	defer own.Close()
	at := func(p string) string { return filepath.Join(dir, p) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(at("f"), []byte("x"), 0o644))
	f, err := os.OpenFile(at("f"), os.O_RDWR|os.O_APPEND, 0)
	must(err)
	_, err = f.Write([]byte("more"))
	must(err)
	must(f.Truncate(2))
	must(f.Close())
	must(os.Mkdir(at("d"), 0o755))
	must(os.Rename(at("f"), at("d/g")))
	must(os.Chmod(at("d/g"), 0o600))
	must(os.Chtimes(at("d/g"), time.Now(), time.Now()))
	must(os.Symlink("d/g", at("l")))
	must(os.Remove(at("l")))
	must(os.Remove(at("d/g")))
	must(os.Remove(at("d")))
	must(m.WriteFile("beside", nil, 0o644))

	seen := spy.Changes()
	if len(seen) < 10 {
		t.Fatalf("the layer reported %d changes: %v", len(seen), seen)
	}
	got := own.Changes()
	want := []layer.Change{{Op: layer.OpCreate, Name: "beside"}}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("changes kept as made beside the mount: %v, want %v", got, want)
	}
}

// TestIssue17ResetShowsAll changes a tree beside its mount unseen (the
// changes taken for the mount's own), then tells the mount that anything
// may have changed, as a watcher that fell behind is told: every name
// and attribute the kernel held shows as the tree has it.
func TestIssue17ResetShowsAll(t *testing.T) {
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		t.Skipf("FUSE unavailable: %v", err)
	} else {
		f.Close()
	}
	m := mem.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.MkdirAll("d/e", 0o755))
	for _, f := range []string{"f", "d/g", "d/e/h", "gone"} {
		must(m.WriteFile(f, []byte(f), 0o644))
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	must(os.Mkdir(dir, 0o755))
	srv, err := Mount(dir, m, &Options{EntryTimeout: time.Hour, AttrTimeout: time.Hour})
	must(err)
	defer func() {
		if err := srv.Unmount(); err != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		srv.Wait()
	}()
	at := func(p string) string { return filepath.Join(dir, p) }
	for _, f := range []string{"f", "d/g", "d/e/h", "gone"} {
		_, err := os.Stat(at(f))
		must(err)
	}
	// Unseen: every name is taken for the mount's own meanwhile.
	names := []string{"f", "d/g", "d/e/h", "gone", "d/e"}
	done := srv.m.mine(names...)
	must(m.WriteFile("f", []byte("longer than before"), 0o644))
	must(m.Chmod("d/g", 0o600))
	must(m.Remove("gone"))
	must(m.Rename("d/e", "d/x")) // d/e goes, with h below it
	done()
	if fi, err := os.Stat(at("f")); err != nil || fi.Size() != 1 {
		t.Fatalf("the kernel did not keep f as it was: %v, %v", fi, err)
	}
	srv.m.notify(layer.Change{Op: layer.OpReset})
	if fi, err := os.Stat(at("f")); err != nil || fi.Size() != int64(len("longer than before")) {
		t.Errorf("f after a reset: %v, %v", fi, err)
	}
	if fi, err := os.Stat(at("d/g")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("d/g after a reset: %v, %v", fi, err)
	}
	for _, gone := range []string{"gone", "d/e/h", "d/e"} {
		if _, err := os.Lstat(at(gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after a reset: %v", gone, err)
		}
	}
	if b, err := os.ReadFile(at("d/x/h")); err != nil || string(b) != "d/e/h" {
		t.Errorf("d/x/h after a reset: %q, %v", b, err)
	}
}
