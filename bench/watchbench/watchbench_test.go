package watchbench

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/fusefs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// tree is a file system under test and how to change it.
type tree interface {
	layer.FS
	layer.WatchFS
}

var trees = []struct {
	name string
	new  func(b *testing.B) tree
}{
	{"mem", func(b *testing.B) tree { return mem.New() }},
	{"union", func(b *testing.B) tree {
		lower := mem.New()
		must(b, lower.WriteFile("lower", []byte("x"), 0o644))
		return packfs.New(mem.New(), lower.Snapshot())
	}},
	{"store", func(b *testing.B) tree {
		s, err := packfs.Open(b.TempDir(), &packfs.Options{Sync: packfs.SyncNone})
		must(b, err)
		b.Cleanup(func() { s.Close() })
		return s
	}},
}

// watching is who watches the tree. start returns what the writer does
// after each change, or nil.
var watching = []struct {
	name  string
	start func(b *testing.B, t tree) func()
}{
	{"none", func(b *testing.B, t tree) func() { return nil }},
	// taken: the writer takes the change itself after making it, so
	// that one goroutine does all the work a watcher makes (instruction
	// counts under callgrind need one).
	{"taken", func(b *testing.B, t tree) func() {
		w, err := t.Watch(nil)
		must(b, err)
		b.Cleanup(func() { w.Close() })
		return func() { w.Changes() }
	}},
	{"drained", func(b *testing.B, t tree) func() { drain(b, t, nil); return nil }},
	{"filtered", func(b *testing.B, t tree) func() {
		drain(b, t, func(layer.Change) bool { return false })
		return nil
	}},
	{"mount", func(b *testing.B, t tree) func() {
		f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
		if err != nil {
			b.Skipf("FUSE unavailable: %v", err)
		}
		f.Close()
		dir := filepath.Join(b.TempDir(), "mnt")
		must(b, os.Mkdir(dir, 0o755))
		srv, err := fusefs.Mount(dir, t, nil)
		must(b, err)
		b.Cleanup(func() {
			if err := srv.Unmount(); err != nil {
				syscall.Unmount(dir, syscall.MNT_DETACH)
			}
			srv.Wait()
		})
		// The kernel holds what is changed: each change is sent on.
		_, err = os.ReadDir(dir)
		must(b, err)
		_, err = os.Stat(filepath.Join(dir, "f"))
		must(b, err)
		return nil
	}},
}

// drain watches t from a goroutine that takes every change, until the
// benchmark ends.
func drain(b *testing.B, t tree, filter func(layer.Change) bool) {
	w, err := t.Watch(filter)
	must(b, err)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-w.Ready():
				w.Changes()
			}
		}
	}()
	b.Cleanup(func() {
		close(done)
		w.Close()
	})
}

// changes are the changes measured, each over a tree holding f.
var changes = []struct {
	name string
	run  func(b *testing.B, t tree, after func())
}{
	{"create", func(b *testing.B, t tree, after func()) {
		data := make([]byte, 128)
		i := 0
		for b.Loop() {
			if i%100000 == 0 {
				b.StopTimer()
				must(b, t.RemoveAll("d"))
				must(b, t.Mkdir("d", 0o755))
				b.StartTimer()
			}
			must(b, t.WriteFile(fmt.Sprint("d/", i%100000), data, 0o644))
			after()
			i++
		}
	}},
	{"write", func(b *testing.B, t tree, after func()) {
		h, err := t.OpenFile("f", os.O_RDWR, 0)
		must(b, err)
		defer h.Close()
		data := make([]byte, 128)
		for b.Loop() {
			_, err := h.WriteAt(data, 0)
			must(b, err)
			after()
		}
	}},
	{"chmod", func(b *testing.B, t tree, after func()) {
		modes := [2]fs.FileMode{0o644, 0o600}
		i := 0
		for b.Loop() {
			must(b, t.Chmod("f", modes[i%2]))
			after()
			i++
		}
	}},
	{"rename", func(b *testing.B, t tree, after func()) {
		for b.Loop() {
			must(b, t.Rename("f", "g"))
			after()
			must(b, t.Rename("g", "f"))
			after()
		}
	}},
}

// BenchmarkChange is the cost of one change for each tree, as each
// watcher watches it.
func BenchmarkChange(b *testing.B) {
	for _, c := range changes {
		b.Run(c.name, func(b *testing.B) {
			for _, tr := range trees {
				b.Run("tree="+tr.name, func(b *testing.B) {
					for _, w := range watching {
						b.Run("watch="+w.name, func(b *testing.B) {
							t := tr.new(b)
							must(b, t.WriteFile("f", make([]byte, 128), 0o644))
							after := w.start(b, t)
							if after == nil {
								after = func() {}
							}
							c.run(b, t, after)
						})
					}
				})
			}
		})
	}
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
