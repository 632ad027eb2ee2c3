//go:build unix

package packreader_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/packfs/packfs/packreader"
	"golang.org/x/sys/unix"
)

// TestIssue14FaultSettingRestored checks that reads leave the goroutine's
// panic-on-fault setting as they found it, after a fault too.
func TestIssue14FaultSettingRestored(t *testing.T) {
	name, _ := writeFaultPack(t)
	r, err := packreader.Open(name)
	must(t, err)
	defer r.Close()
	for _, set := range []bool{false, true} {
		debug.SetPanicOnFault(set)
		if _, err := r.ReadFile("big.bin"); err != nil {
			t.Fatal(err)
		}
		if got := debug.SetPanicOnFault(set); got != set {
			t.Errorf("after a read with panic on fault %v: %v", set, got)
		}
	}
	debug.SetPanicOnFault(false)
	must(t, os.Truncate(name, 0))
	if _, err := r.ReadFile("big.bin"); !errors.Is(err, packreader.ErrChanged) {
		t.Fatalf("ReadFile after truncation: %v, want ErrChanged", err)
	}
	if debug.SetPanicOnFault(false) {
		t.Error("a fault left panic on fault set")
	}
}

// TestIssue14ForeignFault reads into a buffer that is itself a mapping of
// a truncated file: the fault is the caller's, not the pack's, so it is
// not reported as ErrChanged but goes on as the runtime error it is, and
// the Reader is left unlocked and working.
func TestIssue14ForeignFault(t *testing.T) {
	name, _ := writeFaultPack(t)
	r, err := packreader.Open(name)
	must(t, err)
	defer r.Close()
	f, err := r.Open("big.bin")
	must(t, err)
	defer f.Close()

	bufName := filepath.Join(t.TempDir(), "buf")
	must(t, os.WriteFile(bufName, make([]byte, 1<<16), 0o644))
	bf, err := os.OpenFile(bufName, os.O_RDWR, 0)
	must(t, err)
	defer bf.Close()
	buf, err := unix.Mmap(int(bf.Fd()), 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	must(t, err)
	defer unix.Munmap(buf)
	must(t, bf.Truncate(0))

	func() {
		defer func() {
			e := recover()
			re, ok := e.(runtime.Error)
			if !ok {
				t.Fatalf("ReadAt into a lost page of the caller's: recovered %v, want a runtime.Error", e)
			}
			if _, ok := e.(interface{ Addr() uintptr }); !ok {
				t.Errorf("recovered %v, want a fault with its address", re)
			}
		}()
		debug.SetPanicOnFault(true) // so that the test survives the caller's fault
		defer debug.SetPanicOnFault(false)
		n, err := f.(io.ReaderAt).ReadAt(buf, 0)
		t.Fatalf("ReadAt into a lost page returned %d, %v", n, err)
	}()
	// The lock was released: reads and Close still work.
	got, err := r.ReadFile("big.bin")
	must(t, err)
	if string(got) != string(faultTree()["big.bin"].Data) {
		t.Error("ReadFile after a foreign fault: wrong bytes")
	}
}
