package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs/vfstest"
	"github.com/spf13/afero"
)

// TestIssue19HandleNames: a handle's name, which its writes are logged
// under, is taken from the handle at open (not from a walk of the name
// before it) and changes only for a rename or removal that can reach it,
// found without a walk when no handle's name holds the last element
// changed. Through symlinked parents, a rename of an alias of a handle's
// directory moves it, one of another name with the same last element
// does not, and the writes land where a reopen finds them.
func TestIssue19HandleNames(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	mustDo(t, s.MkdirAll("d/sub", 0o755))
	mustDo(t, s.MkdirAll("x/sub", 0o755))
	mustDo(t, s.Symlink("d", "al"))
	// Created through the alias: its name is d/sub/f.
	f, err := s.OpenFile("al/sub/f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	mustDo(t, err)
	if _, err := f.Write([]byte("one ")); err != nil {
		t.Fatal(err)
	}
	// Same last element, another directory: the handle stays.
	mustDo(t, s.Rename("x/sub", "x/sub2"))
	mustDo(t, s.Remove("x/sub2"))
	// Unrelated names: nothing to resolve.
	mustDo(t, s.WriteFile("g", nil, 0o644))
	mustDo(t, s.Remove("g"))
	if _, err := f.Write([]byte("two ")); err != nil {
		t.Fatal(err)
	}
	// The handle's directory renamed through the alias: it follows.
	mustDo(t, s.Rename("al/sub", "moved"))
	if _, err := f.Write([]byte("three")); err != nil {
		t.Fatal(err)
	}
	// A write through a symlink to the file, opened for writing.
	mustDo(t, s.Symlink("moved/f", "lf"))
	w, err := s.OpenFile("lf", os.O_WRONLY|os.O_APPEND, 0)
	mustDo(t, err)
	if _, err := w.Write([]byte("!")); err != nil {
		t.Fatal(err)
	}
	mustDo(t, s.Rename("moved", "final"))
	if _, err := w.Write([]byte("?")); err != nil {
		t.Fatal(err)
	}
	mustDo(t, s.Sync())
	f.Close()
	w.Close()
	s = reopenMem(t, s, m)
	defer s.Close()
	if data, err := s.ReadFile("final/f"); err != nil || string(data) != "one two three!?" {
		t.Fatalf("final/f = %q, %v", data, err)
	}
	if _, err := s.Stat("d/sub"); !os.IsNotExist(err) {
		t.Fatalf("d/sub after its rename: %v", err)
	}
}

// TestIssue19LargeWrite: writes of 32 KiB and more are logged straight
// to the log's segment, behind the small changes buffered before them;
// replay finds every one in order, after a crash of the synced state too.
func TestIssue19LargeWrite(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
	mustDo(t, err)
	f, err := s.Create("big")
	mustDo(t, err)
	var want []byte
	for i := range 40 {
		chunk := bytes.Repeat([]byte{byte(i)}, 1+i*3000) // 1 B to 117 KiB
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
		want = append(want, chunk...)
		mustDo(t, s.WriteFile("small", []byte{byte(i)}, 0o644))
		if i == 25 {
			mustDo(t, f.Sync())
		}
	}
	mustDo(t, f.Sync())
	f.Close()
	rec := m.Recover(vfstest.Torn{})
	s2, err := packfs.Open("", &packfs.Options{FS: rec})
	mustDo(t, err)
	if data, err := s2.ReadFile("big"); err != nil || !bytes.Equal(data, want) {
		t.Fatalf("big after a crash: %d bytes, %v; want %d", len(data), err, len(want))
	}
	if data, err := s2.ReadFile("small"); err != nil || !bytes.Equal(data, []byte{39}) {
		t.Fatalf("small after a crash = %v, %v", data, err)
	}
	s2.Close()
	s = reopenMem(t, s, m)
	defer s.Close()
	if data, err := s.ReadFile("big"); err != nil || !bytes.Equal(data, want) {
		t.Fatalf("big: %d bytes, %v; want %d", len(data), err, len(want))
	}
}

// TestIssue19LookupAt: the store looks names up one element at a time for
// the afero adapter, and a directory handle found before a checkpoint or
// a transaction replaced the tree readers see is refused with
// ErrUnsupported, so that the adapter asks by paths instead of reading a
// tree that no longer takes the store's changes.
func TestIssue19LookupAt(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.MkdirAll("d/sub", 0o755))
	mustDo(t, s.WriteFile("d/sub/f", []byte("x"), 0o644))
	mustDo(t, s.Symlink("d", "al"))
	d, err := s.LookupAt(nil, "d")
	if err != nil || d.Dir == nil || !d.Info.IsDir() {
		t.Fatalf("LookupAt d: %+v, %v", d, err)
	}
	if e, err := s.LookupAt(d.Dir, "sub"); err != nil || !e.Info.IsDir() {
		t.Fatalf("LookupAt d/sub: %+v, %v", e, err)
	}
	if target, err := s.ReadLinkAt(nil, "al"); err != nil || target != "d" {
		t.Fatalf("ReadLinkAt al = %q, %v", target, err)
	}
	if _, err := s.LookupAt(d.Dir, "missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LookupAt d/missing: %v", err)
	}
	a := aferoadapter.New(s)
	check := func(when string) {
		t.Helper()
		if fi, err := a.Stat("al/sub/f"); err != nil || fi.Size() != 1 {
			t.Fatalf("%s: afero Stat al/sub/f: %v, %v", when, fi, err)
		}
		if data, err := afero.ReadFile(a, "/al/sub/../sub/f"); err != nil || string(data) != "x" {
			t.Fatalf("%s: afero ReadFile: %q, %v", when, data, err)
		}
	}
	check("before")
	mustDo(t, s.Checkpoint())
	if _, err := s.LookupAt(d.Dir, "sub"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("LookupAt of a handle from before a checkpoint: %v, want ErrUnsupported", err)
	}
	check("after a checkpoint")
	mustDo(t, s.Update(func(tx *packfs.Tx) error {
		// Readers see the tree before the transaction: the adapter's
		// walk through the store sees no half of it.
		if fi, err := a.Stat("al/sub/f"); err != nil || fi.Size() != 1 {
			t.Fatalf("afero Stat inside a transaction: %v, %v", fi, err)
		}
		return tx.WriteFile("d/sub/f", []byte("yy"), 0o644)
	}))
	if fi, err := a.Stat("al/sub/f"); err != nil || fi.Size() != 2 {
		t.Fatalf("afero Stat after a transaction: %v, %v", fi, err)
	}
	mustDo(t, s.Close())
	if _, err := s.LookupAt(nil, "d"); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("LookupAt on a closed store: %v", err)
	}
}

// TestIssue19UndoneTransaction: a transaction's changes apply once, to
// the store's own tree; one that fails or panics is undone by going back
// to the state before it, mtimes included, with the open files back
// under the names they had, and the state after a reopen, a checkpoint
// and more undone transactions than maxStacked (which start one by
// themselves) is the state in memory.
func TestIssue19UndoneTransaction(t *testing.T) {
	for _, auto := range []bool{false, true} {
		m := vfstest.NewMemFS()
		opts := &packfs.Options{FS: m, CheckpointBytes: -1}
		if auto {
			opts.CheckpointBytes = 1 << 30 // on, but never by size
		}
		s, err := packfs.Open("", opts)
		mustDo(t, err)
		mustDo(t, s.MkdirAll("d/sub", 0o755))
		mustDo(t, s.WriteFile("d/sub/f", []byte("f0"), 0o644))
		mustDo(t, s.WriteFile("keep", []byte("k"), 0o644))
		h, err := s.OpenFile("d/sub/f", os.O_RDWR, 0)
		mustDo(t, err)
		errNo := errors.New("no")
		for round := range 7 {
			before := dump(t, s, true)
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = r.(error)
					}
				}()
				return s.Update(func(tx *packfs.Tx) error {
					mustDo(t, tx.WriteFile("keep", []byte("changed"), 0o600))
					mustDo(t, tx.Rename("d/sub", "moved"))
					mustDo(t, tx.Mkdir("new", 0o700))
					mustDo(t, tx.Symlink("moved", "link"))
					mustDo(t, tx.Remove("keep"))
					if data, err := tx.ReadFile("link/f"); err != nil || string(data) != fmt.Sprintf("f%d", round) {
						t.Fatalf("round %d: the transaction reads link/f = %q, %v", round, data, err)
					}
					if round%2 == 1 {
						panic(errNo)
					}
					return errNo
				})
			}()
			if !errors.Is(err, errNo) {
				t.Fatalf("round %d: Update gave %v", round, err)
			}
			if after := dump(t, s, true); after != before {
				t.Fatalf("auto %v, round %d: undone transaction left\n%s\nwant\n%s", auto, round, after, before)
			}
			// The handle is back under its name: its writes log there.
			if _, err := h.WriteAt([]byte(fmt.Sprintf("f%d", round+1)), 0); err != nil {
				t.Fatal(err)
			}
			mustDo(t, s.WriteFile(fmt.Sprintf("d/r%d", round), []byte{byte(round)}, 0o644))
		}
		want := dump(t, s, true)
		mustDo(t, h.Sync())
		h.Close()
		// A crash keeps what was synced: the state in memory.
		rec := m.Recover(vfstest.Torn{})
		s2, err := packfs.Open("", &packfs.Options{FS: rec})
		mustDo(t, err)
		if got := dump(t, s2, true); got != want {
			t.Fatalf("auto %v: after a crash\n%s\nwant\n%s", auto, got, want)
		}
		s2.Close()
		mustDo(t, s.Checkpoint())
		if got := dump(t, s, true); got != want {
			t.Fatalf("auto %v: after a checkpoint\n%s\nwant\n%s", auto, got, want)
		}
		s = reopenMem(t, s, m)
		if got := dump(t, s, true); got != want {
			t.Fatalf("auto %v: after a reopen\n%s\nwant\n%s", auto, got, want)
		}
		mustDo(t, s.Close())
	}
}

// TestIssue19UndoBesideReaders: readers beside transactions that commit
// and transactions undone (by an error or a panic) see each whole or not
// at all: a and b always agree, and no undone value ever shows, in the
// store, its snapshots and a file opened before.
func TestIssue19UndoBesideReaders(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS(), Sync: packfs.SyncNone, CheckpointBytes: 4 << 10})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.WriteFile("a", []byte("0"), 0o644))
	mustDo(t, s.WriteFile("b", []byte("0"), 0o644))
	rounds := 300
	if testsize.Short() {
		rounds = 100
	}
	done := make(chan struct{})
	var failed atomic.Bool
	go func() {
		defer close(done)
		errNo := errors.New("no")
		for i := 1; i <= rounds && !failed.Load(); i++ {
			undo := i%3 != 0
			v := []byte(fmt.Sprint(i))
			if undo {
				v = []byte("undone")
			}
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = errNo
					}
				}()
				return s.Update(func(tx *packfs.Tx) error {
					mustDo(t, tx.WriteFile("a", v, 0o644))
					mustDo(t, tx.Rename("b", "b.tmp"))
					mustDo(t, tx.WriteFile("b.tmp", v, 0o644))
					mustDo(t, tx.Rename("b.tmp", "b"))
					switch {
					case !undo:
						return nil
					case i%2 == 0:
						panic(errNo)
					}
					return errNo
				})
			}()
			if undo != (err != nil) {
				t.Errorf("round %d: Update gave %v", i, err)
				failed.Store(true)
			}
		}
	}()
	f, err := s.Open("a")
	mustDo(t, err)
	defer f.Close()
	for {
		select {
		case <-done:
			a, _ := s.ReadFile("a")
			b, _ := s.ReadFile("b")
			if string(a) != string(b) || string(a) == "undone" {
				t.Fatalf("at the end: a=%s b=%s", a, b)
			}
			return
		default:
		}
		snap, err := s.Snapshot()
		mustDo(t, err)
		a, aerr := snap.ReadFile("a")
		b, berr := snap.ReadFile("b")
		if string(a) != string(b) || aerr != nil || berr != nil || string(a) == "undone" {
			failed.Store(true)
			<-done
			t.Fatalf("a snapshot saw a=%s (%v) b=%s (%v)", a, aerr, b, berr)
		}
		if a, err := s.ReadFile("a"); err != nil || string(a) == "undone" {
			failed.Store(true)
			<-done
			t.Fatalf("read a: %q, %v", a, err)
		}
		// A file opened before sees each change as it is made (a
		// WriteFile truncates, then writes): it reads, that is all.
		buf := make([]byte, 16)
		if n, err := f.(io.ReaderAt).ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
			failed.Store(true)
			<-done
			t.Fatalf("a file opened before: %q, %v", buf[:n], err)
		}
	}
}

// TestIssue19UndoOverPacks: an undone transaction over a state whose upper
// layer hides what packs hold (a whiteout over a removed file, an opaque
// directory made again) keeps it hidden: below the live upper layer, in
// the packs a checkpoint writes, after a reopen, and beside a checkpoint
// running meanwhile.
func TestIssue19UndoOverPacks(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
	mustDo(t, err)
	mustDo(t, s.MkdirAll("dir/deep", 0o755))
	mustDo(t, s.WriteFile("dir/deep/old", []byte("old"), 0o644))
	mustDo(t, s.WriteFile("gone", []byte("gone"), 0o644))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.Remove("gone"))
	mustDo(t, s.RemoveAll("dir"))
	mustDo(t, s.MkdirAll("dir", 0o755)) // opaque over the pack's dir
	mustDo(t, s.WriteFile("dir/new", []byte("new"), 0o644))
	want := dump(t, s, true)
	errNo := errors.New("no")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 3 {
			if err := s.Checkpoint(); err != nil {
				t.Error(err)
			}
		}
	}()
	for i := range 8 {
		err := s.Update(func(tx *packfs.Tx) error {
			mustDo(t, tx.WriteFile("gone", []byte("back"), 0o644))
			mustDo(t, tx.RemoveAll("dir"))
			mustDo(t, tx.MkdirAll("dir/deep", 0o700))
			mustDo(t, tx.WriteFile(fmt.Sprintf("dir/deep/x%d", i), nil, 0o644))
			return errNo
		})
		if !errors.Is(err, errNo) {
			t.Fatal(err)
		}
		if got := dump(t, s, true); got != want {
			t.Fatalf("round %d: after an undone transaction\n%s\nwant\n%s", i, got, want)
		}
	}
	wg.Wait()
	mustDo(t, s.Checkpoint())
	if got := dump(t, s, true); got != want {
		t.Fatalf("after a checkpoint\n%s\nwant\n%s", got, want)
	}
	s = reopenMem(t, s, m)
	if got := dump(t, s, true); got != want {
		t.Fatalf("after a reopen\n%s\nwant\n%s", got, want)
	}
}

// TestIssue19ReadBesideMove: a read through a file of the store while a
// checkpoint moves it to the new union (closing the file it stood on)
// neither fails on the closed file nor loses its offset; found probing
// the undo of transactions, which moves files the same way.
func TestIssue19ReadBesideMove(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS(), CheckpointBytes: -1})
	mustDo(t, err)
	defer s.Close()
	content := []byte("0123456789")
	mustDo(t, s.WriteFile("a", content, 0o644))
	f, err := s.Open("a")
	mustDo(t, err)
	defer f.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			if err := s.WriteFile("b", []byte{byte(i)}, 0o644); err != nil {
				t.Error(err)
			}
			if err := s.Checkpoint(); err != nil {
				t.Error(err)
			}
		}
	}()
	var got []byte
	for {
		select {
		case <-done:
			return
		default:
		}
		buf := make([]byte, 4)
		if _, err := f.(io.ReaderAt).ReadAt(buf, 0); err != nil {
			t.Fatalf("ReadAt beside a checkpoint: %v", err)
		}
		if _, err := f.Stat(); err != nil {
			t.Fatalf("Stat beside a checkpoint: %v", err)
		}
		// Read to the end and from the start again: the offset goes
		// with the file, byte for byte.
		b := make([]byte, 1)
		n, err := f.Read(b)
		switch {
		case err == io.EOF:
			if !bytes.Equal(got, content) {
				t.Fatalf("read %q to the end beside checkpoints, want %q", got, content)
			}
			got = got[:0]
			if _, err := f.(io.Seeker).Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
		case err != nil:
			t.Fatalf("Read beside a checkpoint: %v", err)
		default:
			got = append(got, b[:n]...)
		}
	}
}

// TestIssue19SmallChangeFillsBuffer: under SyncOnCommit a change takes
// the state before it only when its record writes to the log at once;
// a small one that fills the log's buffer on a full disk is such a
// change: it fails and is not seen, and every change before it is.
func TestIssue19SmallChangeFillsBuffer(t *testing.T) {
	d := &fullDisk{FS: vfstest.NewMemFS()}
	s, err := packfs.Open("", &packfs.Options{FS: d, CheckpointBytes: -1})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.WriteFile("old", []byte("old"), 0o644))
	mustDo(t, s.Sync())
	d.full.Store(true)
	value := bytes.Repeat([]byte("v"), 1000)
	failed := -1
	for i := range 4000 { // 4 MB: past the 1 MiB buffer
		if err := s.WriteFile(fmt.Sprintf("f%04d", i), value, 0o644); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write %d: %v, want ENOSPC", i, err)
			}
			failed = i
			break
		}
	}
	if failed < 0 {
		t.Fatal("no write failed on a full disk")
	}
	if _, err := s.Stat(fmt.Sprintf("f%04d", failed)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the failed change shows: %v", err)
	}
	for i := range failed {
		if data, err := s.ReadFile(fmt.Sprintf("f%04d", i)); err != nil || !bytes.Equal(data, value) {
			t.Fatalf("f%04d, written before the failure: %d bytes, %v", i, len(data), err)
		}
	}
	if err := s.WriteFile("later", nil, 0o644); err == nil {
		t.Fatal("a change after the log failed succeeded")
	}
}

// TestIssue19LookupAtHostile: names no walk would pass, and handles that
// are not the store's, give errors, never a panic or an entry.
func TestIssue19LookupAtHostile(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.MkdirAll("a/b", 0o755))
	other, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	defer other.Close()
	mustDo(t, other.Mkdir("a", 0o755))
	foreign, err := other.LookupAt(nil, "a")
	mustDo(t, err)
	union := packfs.New(nil)
	for _, name := range []string{"", ".", "..", "a/b", "/a", "a\x00", string(bytes.Repeat([]byte("n"), 300))} {
		if e, err := s.LookupAt(nil, name); err == nil {
			t.Errorf("LookupAt(nil, %q) = %+v, want an error", name, e)
		}
		if _, err := s.ReadLinkAt(nil, name); err == nil {
			t.Errorf("ReadLinkAt(nil, %q) succeeded", name)
		}
	}
	for _, dir := range []any{foreign.Dir, 42, "a", union} {
		if _, err := s.LookupAt(dir, "b"); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("LookupAt(%T, b): %v, want ErrUnsupported", dir, err)
		}
		if _, err := s.ReadLinkAt(dir, "b"); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("ReadLinkAt(%T, b): %v, want ErrUnsupported", dir, err)
		}
	}
}

// TestIssue19UndoRemovedHandle: a file open for writing that an undone
// transaction removed, or replaced by a rename, keeps its name: its
// writes after the undo are logged under it and survive a reopen.
func TestIssue19UndoRemovedHandle(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
	mustDo(t, err)
	mustDo(t, s.WriteFile("gone", []byte("g"), 0o644))
	mustDo(t, s.WriteFile("over", []byte("o"), 0o644))
	mustDo(t, s.WriteFile("src", []byte("s"), 0o644))
	g, err := s.OpenFile("gone", os.O_WRONLY|os.O_APPEND, 0)
	mustDo(t, err)
	o, err := s.OpenFile("over", os.O_WRONLY|os.O_APPEND, 0)
	mustDo(t, err)
	errNo := errors.New("no")
	err = s.Update(func(tx *packfs.Tx) error {
		mustDo(t, tx.Remove("gone"))
		mustDo(t, tx.Rename("src", "over"))
		return errNo
	})
	if !errors.Is(err, errNo) {
		t.Fatal(err)
	}
	for _, w := range []struct {
		f    interface{ Write([]byte) (int, error) }
		name string
	}{{g, "gone"}, {o, "over"}} {
		if _, err := w.f.Write([]byte("+")); err != nil {
			t.Fatalf("write to %s after the undo: %v", w.name, err)
		}
	}
	mustDo(t, s.Sync())
	g.(io.Closer).Close()
	o.(io.Closer).Close()
	want := map[string]string{"gone": "g+", "over": "o+", "src": "s"}
	check := func(when string, s *packfs.Store) {
		for name, data := range want {
			if got, err := s.ReadFile(name); err != nil || string(got) != data {
				t.Fatalf("%s: %s = %q, %v; want %q", when, name, got, err, data)
			}
		}
	}
	check("now", s)
	s = reopenMem(t, s, m)
	check("after a reopen", s)
}
