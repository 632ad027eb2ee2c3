package vfstest

import (
	"errors"
	"os"
	"testing"

	"github.com/packfs/packfs/vfs"
)

func write(t *testing.T, m vfs.FS, name, data string, sync bool) {
	t.Helper()
	f, err := m.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

// TestRecover: a power cut keeps what was synced, data and names, and
// with Torn as much of the rest as asked.
func TestRecover(t *testing.T) {
	m := NewMemFS()
	write(t, m, "a", "durable", true)
	if err := m.SyncDir(); err != nil {
		t.Fatal(err)
	}
	write(t, m, "a", "+lost", false)
	write(t, m, "b", "unnamed", true) // synced data, name not synced

	r := m.Recover(Torn{})
	if got, _ := r.Contents("a"); string(got) != "durable" {
		t.Errorf("a after the cut = %q", got)
	}
	if _, ok := r.Contents("b"); ok {
		t.Error("a name never made durable survived")
	}
	all := m.Recover(Torn{Keep: 1, Names: true})
	if got, _ := all.Contents("a"); string(got) != "durable+lost" {
		t.Errorf("a with everything kept = %q", got)
	}

	if err := m.Rename("a", "c"); err != nil {
		t.Fatal(err)
	}
	if r := m.Recover(Torn{}); r.Files()[0] != "a" {
		t.Errorf("an unsynced rename survived: %v", r.Files())
	}
}

// TestCrashAt: the crash stops every operation from the chosen one.
func TestCrashAt(t *testing.T) {
	m := NewMemFS()
	m.CrashAt(2)
	write(t, m, "a", "x", false) // open, write
	if _, err := m.OpenFile("b", os.O_CREATE|os.O_WRONLY, 0o644); !errors.Is(err, ErrCrashed) {
		t.Fatalf("after the crash point: %v", err)
	}
	if !m.Crashed() {
		t.Fatal("not crashed")
	}
}

// TestFaulty: exactly the chosen operation fails, without effect.
func TestFaulty(t *testing.T) {
	m := NewMemFS()
	f := NewFaulty(m, 1)
	file, err := f.OpenFile("a", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.Write([]byte("x")); !errors.Is(err, ErrInjected) {
		t.Fatalf("operation 1: %v", err)
	}
	if _, err := file.Write([]byte("y")); err != nil {
		t.Fatalf("operation 2: %v", err)
	}
	if got, _ := m.Contents("a"); string(got) != "y" {
		t.Fatalf("contents %q: the failed write had an effect", got)
	}
}

// TestLock: one holder at a time, in a MemFS and in a host directory.
func TestLock(t *testing.T) {
	d, err := vfs.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, fsys := range []vfs.FS{NewMemFS(), d} {
		l, err := fsys.Lock("LOCK")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Lock("LOCK"); !errors.Is(err, vfs.ErrLocked) {
			t.Fatalf("%T: second lock: %v", fsys, err)
		}
		l.Close()
		l2, err := fsys.Lock("LOCK")
		if err != nil {
			t.Fatalf("%T: lock after release: %v", fsys, err)
		}
		l2.Close()
	}
}
