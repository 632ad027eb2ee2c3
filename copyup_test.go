package packfs_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// copyUpSize is the size of the lower file the copy-up tests copy.
const copyUpSize = 4 << 20

// copyUpFS is what the copy-up readers read: a union or a store.
type copyUpFS interface {
	fs.StatFS
	fs.ReadFileFS
}

// watchCopyUp runs readers of name (Stat, Open+ReadAll, and Snapshot
// followed by ReadFile) beside copyUp, and reports every state they see
// that is not the lower file whole: a short size or read, or a mode or
// mtime other than the lower's, of the file or of its directory.
func watchCopyUp(t *testing.T, fsys copyUpFS, snapshot func() (fs.FS, error), name string, want, wantDir fs.FileInfo, copyUp func() error) {
	t.Helper()
	var stop atomic.Bool
	var bad atomic.Int64
	var first sync.Once
	report := func(format string, args ...any) {
		bad.Add(1)
		first.Do(func() { t.Errorf(format, args...) })
	}
	check := func(how string, fi fs.FileInfo, err error) {
		switch {
		case err != nil:
			report("%s: %v", how, err)
		case fi.Size() != want.Size() || fi.Mode() != want.Mode() || !fi.ModTime().Equal(want.ModTime()):
			report("%s: size %d mode %v mtime %v; want %d %v %v", how, fi.Size(), fi.Mode(), fi.ModTime(), want.Size(), want.Mode(), want.ModTime())
		}
	}
	readers := []func(){
		func() {
			fi, err := fsys.Stat(name)
			check("Stat", fi, err)
			di, err := fsys.Stat(wantDir.Name())
			if err == nil && (di.Mode() != wantDir.Mode() || !di.ModTime().Equal(wantDir.ModTime())) {
				report("Stat of the directory: mode %v mtime %v; want %v %v", di.Mode(), di.ModTime(), wantDir.Mode(), wantDir.ModTime())
			}
		},
		func() {
			f, err := fsys.Open(name)
			if err != nil {
				report("Open: %v", err)
				return
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil || len(b) != int(want.Size()) {
				report("Open+ReadAll: %d bytes, %v; want %d", len(b), err, want.Size())
			}
		},
		func() {
			snap, err := snapshot()
			if err != nil {
				report("Snapshot: %v", err)
				return
			}
			fi, err := fs.Stat(snap, name)
			check("Snapshot+Stat", fi, err)
			b, err := fs.ReadFile(snap, name)
			if err != nil || len(b) != int(want.Size()) {
				report("Snapshot+ReadFile: %d bytes, %v; want %d", len(b), err, want.Size())
			}
		},
	}
	var wg sync.WaitGroup
	var started sync.WaitGroup
	for _, read := range readers {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			read()
			started.Done()
			for !stop.Load() {
				read()
			}
		}()
	}
	started.Wait()
	err := copyUp()
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if n := bad.Load(); n > 0 {
		t.Errorf("%d reads saw the copy-up half done", n)
	}
}

// openRDWR opens name read-write, which copies a lower file up, and
// closes it again.
func openRDWR(fsys interface {
	OpenFile(string, int, fs.FileMode) (layer.File, error)
}, name string) error {
	f, err := fsys.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// copyUpLower returns a pack holding d/big, copyUpSize bytes, with a mode
// and mtimes of its own.
func copyUpLower(t *testing.T) *packreader.Reader {
	t.Helper()
	m := mem.New()
	must(t, m.Mkdir("d", 0o750))
	must(t, m.WriteFile("d/big", bytes.Repeat([]byte("0123456789abcdef"), copyUpSize/16), 0o640))
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	must(t, m.Chtimes("d/big", old, old))
	must(t, m.Chtimes("d", old, old.Add(time.Hour)))
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, m.Snapshot()))
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIssue14CopyUpWhole: readers beside a writer that opens a 4 MiB
// lower file O_RDWR see the lower file or its whole copy, never a short
// one, in the union and in its snapshots; its mode and mtime and its
// directory's stay the lower's throughout.
func TestIssue14CopyUpWhole(t *testing.T) {
	lower := copyUpLower(t)
	want, err := lower.Stat("d/big")
	must(t, err)
	wantDir, err := lower.Stat("d")
	must(t, err)
	for round := range 8 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			u := packfs.New(mem.New(), lower)
			snapshot := func() (fs.FS, error) { return u.Snapshot() }
			watchCopyUp(t, u, snapshot, "d/big", want, wantDir, func() error { return openRDWR(u, "d/big") })
			// The copy is in the upper layer now, whole.
			if b, err := u.ReadFile("d/big"); err != nil || len(b) != copyUpSize {
				t.Errorf("after copy-up: %d bytes, %v", len(b), err)
			}
		})
	}
}

// TestIssue14CopyUpWholeStore is TestIssue14CopyUpWhole through the
// durable store, whose lower layers are its packs: each checkpoint moves
// the copied file back into a pack, so that the next open copies it up
// again.
func TestIssue14CopyUpWholeStore(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	must(t, s.Mkdir("d", 0o750))
	must(t, s.WriteFile("d/big", bytes.Repeat([]byte("fedcba9876543210"), copyUpSize/16), 0o640))
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	must(t, s.Chtimes("d/big", old, old))
	must(t, s.Chtimes("d", old, old.Add(time.Hour)))
	want, err := s.Stat("d/big")
	must(t, err)
	wantDir, err := s.Stat("d")
	must(t, err)
	snapshot := func() (fs.FS, error) { return s.Snapshot() }
	for round := range 4 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			must(t, s.Checkpoint())
			watchCopyUp(t, s, snapshot, "d/big", want, wantDir, func() error { return openRDWR(s, "d/big") })
		})
	}
}
