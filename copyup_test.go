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

// steppedUpper is a mem upper layer that calls after once each change
// it makes is done, so that a test can look at every state the union
// passes through, in order.
type steppedUpper struct {
	*mem.FS
	after func(op string)
}

func (s *steppedUpper) step(op string, err error) error {
	if err == nil {
		s.after(op)
	}
	return err
}

func (s *steppedUpper) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	return f, s.step("open "+name, err)
}
func (s *steppedUpper) Mkdir(name string, perm fs.FileMode) error {
	return s.step("mkdir "+name, s.FS.Mkdir(name, perm))
}
func (s *steppedUpper) Chmod(name string, mode fs.FileMode) error {
	return s.step("chmod "+name, s.FS.Chmod(name, mode))
}
func (s *steppedUpper) Chtimes(name string, a, m time.Time) error {
	return s.step("chtimes "+name, s.FS.Chtimes(name, a, m))
}
func (s *steppedUpper) Remove(name string) error { return s.step("remove "+name, s.FS.Remove(name)) }
func (s *steppedUpper) Whiteout(name string) error {
	return s.step("whiteout "+name, s.FS.Whiteout(name))
}
func (s *steppedUpper) Rename(o, n string) error {
	return s.step("rename "+o+" "+n, s.FS.Rename(o, n))
}
func (s *steppedUpper) RenameUnion(o, n string, whiteout bool) error {
	return s.step("union rename "+o+" "+n, s.FS.RenameUnion(o, n, whiteout))
}
func (s *steppedUpper) CopyIn(dir string, chain []mem.Copy) error {
	return s.step("copyin "+dir, s.FS.CopyIn(dir, chain))
}

// TestIssue14RenameWhole: renaming a directory of a lower layer copies it
// up and moves it; every state the union passes through holds it at the
// old name or the new one, never both or neither, and always whole.
func TestIssue14RenameWhole(t *testing.T) {
	m := mem.New()
	must(t, m.Mkdir("d", 0o755))
	must(t, m.Mkdir("d/sub", 0o755))
	const size = 1024
	for _, name := range []string{"d/a", "d/b", "d/sub/c"} {
		must(t, m.WriteFile(name, bytes.Repeat([]byte{'x'}, size), 0o644))
	}
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, m.Snapshot()))
	lower, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	must(t, err)
	for _, dst := range []string{"e", "x"} { // x: where the lowers' x was removed
		t.Run(dst, func(t *testing.T) {
			var u *packfs.FS
			steps := 0
			check := func(op string) {
				steps++
				snap, err := u.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				var at []string
				for _, name := range []string{"d", dst} {
					n := 0
					err := fs.WalkDir(snap, name, func(p string, e fs.DirEntry, err error) error {
						if err != nil {
							return err
						}
						if e.Type().IsRegular() {
							if fi, err := e.Info(); err != nil || fi.Size() != size {
								t.Errorf("after %s: %s is %v, %v", op, p, fi, err)
							}
							n++
						}
						return nil
					})
					if err == nil && n > 0 {
						at = append(at, name)
						if n != 3 {
							t.Errorf("after %s: %s holds %d files, want 3", op, name, n)
						}
					}
				}
				if len(at) != 1 {
					t.Errorf("after %s: the directory is at %v", op, at)
				}
			}
			lm := mem.New()
			must(t, lm.Mkdir("x", 0o755))
			must(t, lm.WriteFile("x/old", nil, 0o644))
			checking := false
			up := &steppedUpper{FS: mem.New(), after: func(op string) {
				if checking {
					check(op)
				}
			}}
			u = packfs.New(up, lower, lm.Snapshot())
			must(t, u.RemoveAll("x"))
			checking = true
			must(t, u.Rename("d", dst))
			check("the rename")
			if steps < 2 {
				t.Errorf("%d steps", steps)
			}
		})
	}
}

// A copy-up through a symlink alias brings up the whole missing chain of
// parents with their modes and mtimes, and a symlink with its target and
// mtime; read-only handles opened before follow the copy.
func TestCopyUpChain(t *testing.T) {
	m := mem.New()
	old := time.Date(2003, 4, 5, 6, 7, 8, 0, time.UTC)
	must(t, m.MkdirAll("a/b/c", 0o700))
	must(t, m.WriteFile("a/b/c/f", []byte("lower"), 0o640))
	must(t, m.Symlink("a/b", "l"))
	must(t, m.Symlink("f", "a/b/c/sl"))
	for _, p := range []string{"a/b/c/f", "a/b/c", "a/b", "a"} {
		must(t, m.Chtimes(p, old, old))
	}
	must(t, m.Chmod("a/b", 0o750))
	lower := m.Snapshot()
	u := packfs.New(mem.New(), lower)
	h, err := u.Open("a/b/c/f")
	must(t, err)
	defer h.Close()
	f, err := u.OpenFile("l/c/f", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.Write([]byte("+upper"))
	must(t, err)
	must(t, f.Close())
	for _, p := range []string{"a", "a/b", "a/b/c"} {
		want, _ := lower.Stat(p)
		got, err := u.Stat(p)
		if err != nil || got.Mode() != want.Mode() || !got.ModTime().Equal(want.ModTime()) {
			t.Errorf("%s: %v, %v; want %v %v", p, got.Mode(), err, want.Mode(), want.ModTime())
		}
	}
	wantContent(t, u, "a/b/c/f", "lower+upper")
	if b, err := io.ReadAll(h); err != nil || string(b) != "lower+upper" {
		t.Errorf("handle opened before the copy-up reads %q, %v", b, err)
	}
	must(t, u.Lchown("a/b/c/sl", 0, 0)) // copies the symlink up
	if target, err := u.ReadLink("a/b/c/sl"); err != nil || target != "f" {
		t.Errorf("ReadLink = %q, %v", target, err)
	}
	want, _ := lower.Lstat("a/b/c/sl")
	if got, err := u.Lstat("a/b/c/sl"); err != nil || !got.ModTime().Equal(want.ModTime()) || got.Mode() != want.Mode() {
		t.Errorf("symlink copy: %v, %v; want %v", got, err, want)
	}
}
