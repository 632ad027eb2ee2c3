package main

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/packreader"
)

// startMount runs packfs mount args... in a child process and returns
// once it serves. The mount is detached when the test ends, whatever
// became of the child.
func startMount(t *testing.T, mnt string, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		t.Skipf("FUSE unavailable: %v", err)
	} else {
		f.Close()
	}
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := childCommand(t, append([]string{"mount"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		syscall.Unmount(mnt, syscall.MNT_DETACH)
	})
	var log strings.Builder
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		ok := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !ok && strings.Contains(sc.Text(), "serving") {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("packfs mount %v did not start: %s", args, log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("packfs mount %v: not serving after 30s", args)
	}
	return cmd, &log
}

// isMountpoint reports whether dir is a mountpoint.
func isMountpoint(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

func newStoreDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := packfs.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestIssue17MountKillAfterFsync: a SIGKILL of the mount process loses
// nothing a program fsync'd through the mount.
func TestIssue17MountKillAfterFsync(t *testing.T) {
	store := newStoreDir(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	cmd, _ := startMount(t, mnt, store, mnt)
	want := map[string]string{}
	for i, name := range []string{"a", "dir/b", "dir/c"} {
		p := filepath.Join(mnt, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		data := strings.Repeat(name, 1000*(i+1))
		if _, err := f.WriteString(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		want[name] = data
	}
	// Written, never synced: may or may not survive.
	if err := os.WriteFile(filepath.Join(mnt, "unsynced"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
		t.Logf("detach: %v", err)
	}
	s, err := packfs.Open(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, data := range want {
		if got, err := s.ReadFile(name); err != nil || string(got) != data {
			t.Errorf("%s after SIGKILL: %d bytes, %v; want %d bytes", name, len(got), err, len(data))
		}
	}
}

// TestIssue17MountSignal: SIGTERM syncs the store and unmounts; the
// process exits 0 and what was written is in the store.
func TestIssue17MountSignal(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		store := newStoreDir(t)
		mnt := filepath.Join(t.TempDir(), "mnt")
		cmd, log := startMount(t, mnt, store, mnt, "-checkpoint")
		if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("kept"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: %v\n%s", sig, err, log.String())
		}
		if isMountpoint(t, mnt) {
			t.Errorf("%v: %s still mounted", sig, mnt)
		}
		s, err := packfs.Open(store, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadFile("f"); err != nil || string(got) != "kept" {
			t.Errorf("%v: f = %q, %v", sig, got, err)
		}
		s.Close()
	}
}

// TestIssue17MountPackUpper: a stack of packs mounts read-only; with
// --upper the writes go to the store and the packs show beneath.
func TestIssue17MountPackUpper(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "low"), []byte("lower"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pack := filepath.Join(dir, "a.pack")
	runChildWant(t, 0, "pack", src, pack)
	src2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(src2, "top"), []byte("top"), 0o644); err != nil {
		t.Fatal(err)
	}
	pack2 := filepath.Join(dir, "b.pack")
	runChildWant(t, 0, "pack", src2, pack2)

	mnt := filepath.Join(t.TempDir(), "mnt")
	cmd, log := startMount(t, mnt, pack2+":"+pack, mnt)
	for name, want := range map[string]string{"low": "lower", "top": "top"} {
		if got, err := os.ReadFile(filepath.Join(mnt, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if err := os.WriteFile(filepath.Join(mnt, "new"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write to a stack of packs: %v, want EROFS", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}

	upper := filepath.Join(t.TempDir(), "upper")
	cmd, log = startMount(t, mnt, pack, mnt, "--upper", upper)
	if err := os.WriteFile(filepath.Join(mnt, "new"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "low"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	lower, err := packreader.Open(pack)
	if err != nil {
		t.Fatal(err)
	}
	defer lower.Close()
	s, err := packfs.Open(upper, &packfs.Options{Lowers: []fs.FS{lower}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]string{"new": "new", "low": "changed"} {
		if got, err := s.ReadFile(name); err != nil || string(got) != want {
			t.Errorf("upper %s: %q, %v", name, got, err)
		}
	}
}

// TestIssue17MountHostDir: a host directory mounts read-only.
func TestIssue17MountHostDir(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	cmd, log := startMount(t, mnt, src, mnt)
	if got, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(got) != "host" {
		t.Errorf("f: %q, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "f"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write: %v, want EROFS", err)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if got, err := os.ReadFile(filepath.Join(src, "f")); err != nil || string(got) != "host" {
		t.Errorf("the host file: %q, %v", got, err)
	}
}
