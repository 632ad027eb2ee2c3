package mem_test

import (
	"os"
	"testing"

	"github.com/packfs/packfs/layer/mem"
)

// TestWriteDescribes: a write makes the file's description with its new
// state, so that the Stat after it allocates nothing; the description
// names the file as the Stat does, after a rename and after a snapshot
// froze the entry the handle wrote through too.
func TestWriteDescribes(t *testing.T) {
	fsys := mem.New()
	if err := fsys.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create("d/a")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	check := func(name string, size int64) {
		t.Helper()
		fi, err := fsys.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Name() != name[len("d/"):] || fi.Size() != size {
			t.Fatalf("Stat(%s) = %s, %d bytes; want %d bytes", name, fi.Name(), fi.Size(), size)
		}
		w := testing.AllocsPerRun(100, func() { f.WriteAt([]byte("x"), 0) })
		ws := testing.AllocsPerRun(100, func() {
			f.WriteAt([]byte("x"), 0)
			fsys.Stat(name)
		})
		if ws != w {
			t.Fatalf("Stat(%s) after a write: %.0f allocations", name, ws-w)
		}
	}
	write := func(p string) {
		t.Helper()
		if _, err := f.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	write("one")
	check("d/a", 3)
	if err := fsys.Rename("d/a", "d/b"); err != nil {
		t.Fatal(err)
	}
	write("two")
	check("d/b", 6)
	snap := fsys.Snapshot()
	write("three")
	check("d/b", 11)
	if fi, err := snap.Stat("d/b"); err != nil || fi.Size() != 6 {
		t.Fatalf("snapshot: %v, %v; want 6 bytes", fi, err)
	}
	if err := fsys.WriteFile("d/b", []byte("four"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("d/b", 4)
	if err := fsys.Remove("d/b"); err != nil {
		t.Fatal(err)
	}
	write("five") // at offset 11, past WriteFile's 4 bytes; the file is unlinked
	if fi, err := f.Stat(); err != nil || fi.Size() != 15 || fi.Name() != "a" {
		t.Fatalf("unlinked file's Stat: %v, %v", fi, err)
	}
	if _, err := fsys.Stat("d/b"); !os.IsNotExist(err) {
		t.Fatalf("Stat of the removed name: %v", err)
	}
}
