package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/testsize"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
	"github.com/packfs/packfs/wal"
)

// reopening is a store that, at each Settle, checkpoints, flattens, or
// closes and reopens: the differential test then compares with os what
// replay, packs and the layers stacked after a checkpoint give.
type reopening struct {
	*packfs.Store
	dir  string
	opts *packfs.Options
	n    int
}

var storeSettles atomic.Int64

func (r *reopening) Settle() error {
	storeSettles.Add(1)
	r.n++
	switch r.n % 3 {
	case 1:
		return r.Store.Checkpoint()
	case 2:
		if err := r.Store.Close(); err != nil {
			return err
		}
		s, err := packfs.Open(r.dir, r.opts)
		if err != nil {
			return err
		}
		r.Store = s
		return nil
	}
	return r.Store.Flatten()
}

func openStore(t testing.TB, dir string, opts *packfs.Options) *packfs.Store {
	t.Helper()
	s, err := packfs.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformanceStore runs the suite over durable stores in host
// directories, settling by checkpoint, flatten and reopen.
func TestConformanceStore(t *testing.T) {
	opts := []conformance.Option{conformance.WithOwners()}
	switch {
	case raceEnabled:
		opts = append(opts, conformance.WithSeeds(60), conformance.WithQuickTrees())
	case testsize.Short():
		opts = append(opts, conformance.WithSeeds(50))
	default:
		opts = append(opts, conformance.WithSeeds(600))
	}
	before := storeSettles.Load()
	conformance.Run(t, func(t *testing.T) layer.FS {
		dir := t.TempDir()
		o := &packfs.Options{Sync: packfs.SyncNone}
		r := &reopening{Store: openStore(t, dir, o), dir: dir, opts: o}
		t.Cleanup(func() { r.Store.Close() })
		return r
	}, opts...)
	if storeSettles.Load() == before && !testsize.Short() {
		t.Error("the differential test never settled")
	}
}

// dump describes a tree, mtimes included, for comparisons.
func dump(t testing.TB, fsys fs.FS, mtimes bool) string {
	t.Helper()
	var b strings.Builder
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String())
		if mtimes {
			b.WriteString(" " + fi.ModTime().UTC().Format(time.RFC3339Nano))
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			b.WriteString(" -> " + target)
		case fi.Mode().IsRegular():
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestStoreReopenExact: what a store holds comes back from its directory
// to the nanosecond, after replay, a checkpoint and a flatten.
func TestStoreReopenExact(t *testing.T) {
	for _, settle := range []string{"replay", "checkpoint", "flatten"} {
		t.Run(settle, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			mustDo(t, s.MkdirAll("a/b", 0o750))
			mustDo(t, s.WriteFile("a/b/f", []byte("hello"), 0o640))
			mustDo(t, s.Symlink("b/f", "a/link"))
			f, err := s.OpenFile("a/g", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
			mustDo(t, err)
			f.Write([]byte("one "))
			mustDo(t, s.Rename("a/g", "a/h")) // the open file follows its name
			f.Write([]byte("two"))
			if _, err := f.WriteAt([]byte("ONE"), 0); err == nil {
				t.Error("WriteAt on a file opened with O_APPEND succeeded")
			}
			f.Close()
			g, err := s.OpenFile("a/h", os.O_RDWR, 0)
			mustDo(t, err)
			g.WriteAt([]byte("ONE"), 0)
			g.Close()
			mustDo(t, s.Chtimes("a/b", time.Time{}, time.Unix(1e9, 5)))
			mustDo(t, s.Chmod(".", fs.ModeDir|0o711))
			if settle != "replay" {
				mustDo(t, s.WriteFile("gone", []byte("x"), 0o644))
				if settle == "checkpoint" {
					mustDo(t, s.Checkpoint())
				} else {
					mustDo(t, s.Flatten())
				}
				mustDo(t, s.Remove("gone")) // a whiteout over the pack
				mustDo(t, s.WriteFile("a/b/f", []byte("after"), 0o640))
			}
			want := dump(t, s, true)
			mustDo(t, s.Close())
			s2 := openStore(t, dir, nil)
			if got := dump(t, s2, true); got != want {
				t.Fatalf("reopened store differs:\n%s", cmp.Diff(want, got))
			}
			if data, _ := s2.ReadFile("a/h"); string(data) != "ONE two" {
				t.Fatalf("a/h = %q", data)
			}
		})
	}
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStoreTransactions: a transaction sees its writes, applies whole on
// success and not at all on error or panic.
func TestStoreTransactions(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	mustDo(t, s.WriteFile("keep", []byte("1"), 0o644))
	errStop := errors.New("stop")
	err := s.Update(func(tx *packfs.Tx) error {
		mustDo(t, tx.WriteFile("a", []byte("a"), 0o644))
		if data, err := tx.ReadFile("a"); err != nil || string(data) != "a" {
			t.Errorf("a transaction does not see its own write: %q, %v", data, err)
		}
		mustDo(t, tx.Remove("keep"))
		return errStop
	})
	if err != errStop {
		t.Fatalf("Update = %v, want the function's error", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not come out of Update")
			}
		}()
		s.Update(func(tx *packfs.Tx) error {
			tx.WriteFile("b", nil, 0o644)
			panic("boom")
		})
	}()
	if _, err := s.Stat("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a failed transaction's write applied")
	}
	if _, err := s.Stat("b"); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a panicking transaction's write applied")
	}
	if _, err := s.Stat("keep"); err != nil {
		t.Error("a failed transaction's remove applied")
	}
	mustDo(t, s.Update(func(tx *packfs.Tx) error {
		if err := tx.Mkdir("d", 0o755); err != nil {
			return err
		}
		if err := tx.WriteFile("d/x", []byte("x"), 0o644); err != nil {
			return err
		}
		return tx.Rename("keep", "d/keep")
	}))
	want := dump(t, s, true)
	mustDo(t, s.Close())
	if got := dump(t, openStore(t, dir, nil), true); got != want {
		t.Fatalf("after reopen:\n%s", cmp.Diff(want, got))
	}
}

// TestStoreLock: one writer at a time; readers beside it.
func TestStoreLock(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	mustDo(t, s.WriteFile("f", []byte("x"), 0o644))
	mustDo(t, s.Sync())
	if _, err := packfs.Open(dir, nil); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	r := openStore(t, dir, &packfs.Options{ReadOnly: true})
	if data, err := r.ReadFile("f"); err != nil || string(data) != "x" {
		t.Fatalf("read-only open: %q, %v", data, err)
	}
	if err := r.WriteFile("g", nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write to a read-only store: %v, want EROFS", err)
	}
	mustDo(t, s.Close())
	s2 := openStore(t, dir, nil) // the lock is free again
	mustDo(t, s2.Close())
}

// TestStoreCorruptManifest: a damaged manifest is a clear error.
func TestStoreCorruptManifest(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	mustDo(t, s.WriteFile("f", []byte("x"), 0o644))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.Close())
	p := filepath.Join(dir, "MANIFEST")
	data, err := os.ReadFile(p)
	mustDo(t, err)
	data[20] ^= 1
	mustDo(t, os.WriteFile(p, data, 0o644))
	if _, err := packfs.Open(dir, nil); !errors.Is(err, packfs.ErrCorrupt) {
		t.Fatalf("open: %v, want ErrCorrupt", err)
	}
}

// TestStoreClosed: a closed store and its files refuse changes.
func TestStoreClosed(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	f, err := s.Create("f")
	mustDo(t, err)
	mustDo(t, s.Close())
	if _, err := f.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
	if err := s.Mkdir("d", 0o755); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("mkdir after Close: %v", err)
	}
	var _ io.Closer = s
}

// FuzzStoreReplay gives the store's replay arbitrary changes, each in a
// valid log record: Open must fail cleanly or succeed, never panic.
func FuzzStoreReplay(f *testing.F) {
	// Seeds: the records of a real run of changes.
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	if err != nil {
		f.Fatal(err)
	}
	s.MkdirAll("a/b", 0o755)
	s.WriteFile("a/b/f", []byte("data"), 0o644)
	s.Symlink("b", "a/l")
	s.Rename("a/b/f", "a/g")
	s.Chtimes("a", time.Time{}, time.Unix(5, 0))
	s.Remove("a/g")
	s.Close()
	var entries [][]byte
	wal.Open(m, wal.Options{ReadOnly: true}, func(es [][]byte) error {
		for _, e := range es {
			entries = append(entries, append([]byte(nil), e...))
		}
		return nil
	})
	for _, e := range entries {
		f.Add(e)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, entry []byte) {
		m := vfstest.NewMemFS()
		s, err := packfs.Open("", &packfs.Options{FS: m})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		l, err := wal.Open(m, wal.Options{}, func([][]byte) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries[:min(len(entries), 3)] {
			l.Append(e)
		}
		l.Append(entry)
		l.Append(bytes.Clone(entry), entry)
		l.Close()
		if s, err := packfs.Open("", &packfs.Options{FS: m}); err == nil {
			s.Close()
		} else if !errors.Is(err, packfs.ErrCorrupt) {
			t.Fatalf("replay failed with %v, which does not wrap ErrCorrupt", err)
		}
	})
}

// TestStoreCheckpointUnderLoad: writers, transactions and readers go on
// while checkpoints (automatic ones, and flattens) run; the reopened
// store equals what the writers left.
func TestStoreCheckpointUnderLoad(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, &packfs.Options{CheckpointBytes: 4 << 10, MaxPacks: 3})
	mustDo(t, s.Mkdir("w", 0o755))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeUnderLoad(t, s, w)
		}()
	}
	wg.Add(1)
	go func() { // a reader: every listed file must read
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			entries, err := s.ReadDir("w")
			if err != nil {
				t.Error(err)
				return
			}
			for _, e := range entries {
				if _, err := s.ReadFile("w/" + e.Name()); err != nil {
					t.Errorf("listed %s does not read: %v", e.Name(), err)
					return
				}
			}
		}
	}()
	for range 3 {
		time.Sleep(5 * time.Millisecond)
		if err := s.Flatten(); err != nil {
			t.Error(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	want := dump(t, s, true)
	mustDo(t, s.Close())
	names, _ := os.ReadDir(dir)
	packs := 0
	for _, n := range names {
		if strings.HasSuffix(n.Name(), ".pack") {
			packs++
		}
	}
	if packs == 0 || packs > 3 {
		t.Errorf("%d packs after the run, want 1 to MaxPacks", packs)
	}
	if got := dump(t, openStore(t, dir, nil), true); got != want {
		t.Fatalf("reopened store differs:\n%s", cmp.Diff(want, got))
	}
}

// TestStoreTransactionVisibility: a reader sees a transaction whole or
// not at all.
func TestStoreTransactionVisibility(t *testing.T) {
	s := openStore(t, t.TempDir(), &packfs.Options{Sync: packfs.SyncNone})
	mustDo(t, s.WriteFile("a", []byte("0"), 0o644))
	mustDo(t, s.WriteFile("b", []byte("0"), 0o644))
	done := make(chan struct{})
	stopWriter := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 300; i++ {
			select {
			case <-stopWriter:
				return
			default:
			}
			v := []byte(fmt.Sprint(i))
			mustDo(t, s.Update(func(tx *packfs.Tx) error {
				if err := tx.WriteFile("a", v, 0o644); err != nil {
					return err
				}
				return tx.WriteFile("b", v, 0o644)
			}))
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		snap, err := s.Snapshot()
		mustDo(t, err)
		a, aerr := snap.ReadFile("a")
		b, berr := snap.ReadFile("b")
		if string(a) != string(b) || aerr != nil || berr != nil {
			close(stopWriter)
			<-done
			t.Fatalf("a reader saw half a transaction: a=%s (%v) b=%s (%v)", a, aerr, b, berr)
		}
	}
}

// TestStoreHandlesAcrossCheckpoint: files open for reading or writing go
// on working on the file after a checkpoint, under its new name too.
func TestStoreHandlesAcrossCheckpoint(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	mustDo(t, s.WriteFile("f", []byte("one"), 0o644))
	rf, err := s.Open("f")
	mustDo(t, err)
	r := rf.(io.ReaderAt)
	w, err := s.OpenFile("f", os.O_WRONLY, 0)
	mustDo(t, err)
	mustDo(t, s.Rename("f", "g"))
	mustDo(t, s.Checkpoint())
	if _, err := w.WriteAt([]byte("TWO"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := r.ReadAt(buf, 0); err != nil || string(buf) != "TWO" {
		t.Fatalf("reader after checkpoint: %q, %v", buf, err)
	}
	if data, _ := s.ReadFile("g"); string(data) != "TWO" {
		t.Fatalf("g = %q after a write through a handle moved by a checkpoint", data)
	}
	if _, err := rf.(io.Writer).Write([]byte("x")); err == nil {
		t.Fatal("a file opened read-only took a write")
	}
	rf.Close()
	w.Close()
}

// writeUnderLoad is writer w of the checkpoint-under-load tests: 150
// changes to 20 names of its own, every third a transaction of two files.
func writeUnderLoad(t *testing.T, s *packfs.Store, w int) {
	for i := range 150 {
		name := fmt.Sprintf("w/%d-%d", w, i%20)
		var err error
		if i%3 == 0 {
			err = s.Update(func(tx *packfs.Tx) error {
				if err := tx.WriteFile(name, []byte(strings.Repeat("x", i)), 0o644); err != nil {
					return err
				}
				return tx.WriteFile(name+".tx", []byte("t"), 0o644)
			})
		} else {
			err = s.WriteFile(name, []byte(fmt.Sprint(i)), 0o644)
		}
		if err != nil {
			t.Error(err)
			return
		}
	}
}
