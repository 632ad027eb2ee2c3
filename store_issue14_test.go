package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// reopenMem closes s and opens the store m holds again.
func reopenMem(t *testing.T, s *packfs.Store, m *vfstest.MemFS) *packfs.Store {
	t.Helper()
	mustDo(t, s.Close())
	s, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestIssue14SelfRename: a rename whose source and destination are the
// same entry, by the same name or through a symlink, changes nothing: the
// files open on it keep logging their writes, which survive a reopen.
func TestIssue14SelfRename(t *testing.T) {
	for _, c := range []struct {
		open, from, to string
		err            error
	}{
		{"a", "a", "a", nil},
		{"a", "a", "self/a", nil},
		{"a", "self/a", "a", nil},
		// os.Rename refuses a directory onto the same string itself.
		{"d/f", "d", "d", syscall.EEXIST},
		{"d/f", "d", "self/d", nil},
		{"d/f", "d/f", "ld/f", nil},
		{"d/f", "ld/f", "self/ld/f", nil},
	} {
		t.Run(c.from+"->"+c.to, func(t *testing.T) {
			m := vfstest.NewMemFS()
			s, err := packfs.Open("", &packfs.Options{FS: m})
			mustDo(t, err)
			mustDo(t, s.Mkdir("d", 0o755))
			mustDo(t, s.Symlink(".", "self"))
			mustDo(t, s.Symlink("d", "ld"))
			f, err := s.OpenFile(c.open, os.O_RDWR|os.O_CREATE, 0o644)
			mustDo(t, err)
			if _, err := f.Write([]byte("one.")); err != nil {
				t.Fatal(err)
			}
			if err := s.Rename(c.from, c.to); !errors.Is(err, c.err) || (err == nil) != (c.err == nil) {
				t.Fatalf("rename: %v, want %v", err, c.err)
			}
			if _, err := f.Write([]byte("two.")); err != nil {
				t.Fatal(err)
			}
			mustDo(t, f.Sync())
			mustDo(t, f.Close())
			s = reopenMem(t, s, m)
			if data, err := s.ReadFile(c.open); err != nil || string(data) != "one.two." {
				t.Fatalf("after reopen %s = %q, %v; want %q", c.open, data, err, "one.two.")
			}
		})
	}
}

// TestIssue14SelfRenameTransaction: the same through a transaction.
func TestIssue14SelfRenameTransaction(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	mustDo(t, s.Symlink(".", "self"))
	f, err := s.Create("a")
	mustDo(t, err)
	mustDo(t, s.Update(func(tx *packfs.Tx) error {
		if err := tx.Rename("a", "self/a"); err != nil {
			return err
		}
		return tx.Rename("a", "a")
	}))
	if _, err := f.Write([]byte("kept")); err != nil {
		t.Fatal(err)
	}
	mustDo(t, f.Sync())
	f.Close()
	s = reopenMem(t, s, m)
	if data, err := s.ReadFile("a"); err != nil || string(data) != "kept" {
		t.Fatalf("a = %q, %v", data, err)
	}
}

// TestIssue14RenameMovesHandles: a rename over another file leaves that
// file's handles nameless and moves the renamed one's, in one step: a
// handle's new name is never taken for a name the rename replaces.
func TestIssue14RenameMovesHandles(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	fa, err := s.Create("a")
	mustDo(t, err)
	fb, err := s.Create("b")
	mustDo(t, err)
	mustDo(t, s.Rename("a", "b")) // fb's file is gone; fa's is now b
	fa.Write([]byte("from a"))
	fb.Write([]byte("lost"))
	mustDo(t, s.Sync())
	fa.Close()
	fb.Close()
	s = reopenMem(t, s, m)
	if data, err := s.ReadFile("b"); err != nil || string(data) != "from a" {
		t.Fatalf("b = %q, %v", data, err)
	}
}

// TestIssue14FlattenUnderWriter: readers beside a flatten, of a file open
// for writing, always see the whole file: the new union is published
// only once every open file has moved to it.
func TestIssue14FlattenUnderWriter(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 4<<10) // 64 KiB
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprintf("auto=%v", auto), func(t *testing.T) {
			opts := &packfs.Options{FS: vfstest.NewMemFS(), CheckpointBytes: -1}
			if auto {
				opts.CheckpointBytes, opts.MaxPacks = 4<<10, 3
			}
			s, err := packfs.Open("", opts)
			mustDo(t, err)
			defer s.Close()
			mustDo(t, s.WriteFile("f", content, 0o644))
			w, err := s.OpenFile("f", os.O_RDWR, 0)
			mustDo(t, err)
			defer w.Close()
			var stop atomic.Bool
			var bad atomic.Int64
			var wg sync.WaitGroup
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !stop.Load() {
						data, err := s.ReadFile("f")
						if err != nil || len(data) != len(content) {
							bad.Add(1)
						}
						if snap, err := s.Snapshot(); err == nil {
							if fi, err := snap.Stat("f"); err != nil || fi.Size() != int64(len(content)) {
								bad.Add(1)
							}
						}
					}
				}()
			}
			rounds := 60
			if testsize.Short() {
				rounds = 20
			}
			for i := range rounds {
				if auto {
					// Changes elsewhere drive checkpoints, and every third
					// a flatten.
					mustDo(t, s.WriteFile(fmt.Sprintf("g%d", i%4), bytes.Repeat([]byte{'g'}, 5<<10), 0o644))
				} else {
					mustDo(t, s.Flatten())
				}
				if _, err := w.WriteAt([]byte("X"), int64(i)); err != nil {
					t.Fatal(err)
				}
			}
			stop.Store(true)
			wg.Wait()
			if n := bad.Load(); n > 0 {
				t.Fatalf("%d reads saw f short while a flatten moved its writer", n)
			}
		})
	}
}

// fullDisk is a directory whose disk can fill up: while full, writes and
// new files fail with ENOSPC, as a real full disk does, and nothing is
// written.
type fullDisk struct {
	vfs.FS
	full atomic.Bool
	// spare, if set, says which new files can still be made while full
	// (whose blocks the disk keeps in reserve); what is open still cannot
	// grow.
	spare func(name string) bool
	// creating, if set, fills the disk for new files only.
	creating bool
	hits     atomic.Int64 // writes refused
}

func (d *fullDisk) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if flag&os.O_CREATE != 0 && d.full.Load() && (d.spare == nil || !d.spare(name)) {
		d.hits.Add(1)
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &fullFile{File: f, d: d, name: name}, nil
}

type fullFile struct {
	vfs.File
	d    *fullDisk
	name string
}

func (f *fullFile) refuse(op string) error {
	if f.d.full.Load() && !f.d.creating {
		f.d.hits.Add(1)
		return &fs.PathError{Op: op, Path: f.name, Err: syscall.ENOSPC}
	}
	return nil
}

func (f *fullFile) Write(p []byte) (int, error) {
	if err := f.refuse("write"); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *fullFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.refuse("write"); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

// TestIssue14FailedWriteInvisible: a change whose log write fails leaves
// the tree as it was, for readers, snapshots and open files alike.
func TestIssue14FailedWriteInvisible(t *testing.T) {
	for _, policy := range []packfs.SyncPolicy{packfs.SyncOnCommit, packfs.SyncAlways} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			d := &fullDisk{FS: vfstest.NewMemFS()}
			s, err := packfs.Open("", &packfs.Options{FS: d, Sync: policy, CheckpointBytes: -1})
			mustDo(t, err)
			defer s.Close()
			mustDo(t, s.WriteFile("old", []byte("old"), 0o644))
			mustDo(t, s.Sync())
			r, err := s.Open("old")
			mustDo(t, err)
			defer r.Close()
			d.full.Store(true)
			// Under SyncOnCommit a change reaches the disk when the log's
			// buffer fills: a big one fills it at once.
			big := bytes.Repeat([]byte("x"), 2<<20)
			if err := s.WriteFile("new", big, 0o644); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write on a full disk: %v, want ENOSPC", err)
			}
			if _, err := s.Stat("new"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stat of a file whose write failed: %v", err)
			}
			if data, err := s.ReadFile("old"); err != nil || string(data) != "old" {
				t.Errorf("old = %d bytes, %v after a failed overwrite", len(data), err)
			}
			snap, err := s.Snapshot()
			mustDo(t, err)
			if data, err := fs.ReadFile(snap, "old"); err != nil || string(data) != "old" {
				t.Errorf("snapshot: old = %d bytes, %v", len(data), err)
			}
			if data, err := io.ReadAll(r); err != nil || string(data) != "old" {
				t.Errorf("open file: old = %d bytes, %v", len(data), err)
			}
			// The log failed: later changes are refused before they apply.
			if err := s.WriteFile("later", []byte("x"), 0o644); err == nil {
				t.Error("a change after the log failed succeeded")
			}
			if _, err := s.Stat("later"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stat later: %v", err)
			}
		})
	}
}

// TestIssue14FailedWriteThroughFile: a write through an open file whose
// log write fails is not seen either.
func TestIssue14FailedWriteThroughFile(t *testing.T) {
	d := &fullDisk{FS: vfstest.NewMemFS()}
	s, err := packfs.Open("", &packfs.Options{FS: d, Sync: packfs.SyncAlways, CheckpointBytes: -1})
	mustDo(t, err)
	defer s.Close()
	f, err := s.Create("f")
	mustDo(t, err)
	defer f.Close()
	if _, err := f.Write([]byte("kept")); err != nil {
		t.Fatal(err)
	}
	d.full.Store(true)
	if _, err := f.Write([]byte("lost")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write: %v", err)
	}
	if data, err := s.ReadFile("f"); err != nil || string(data) != "kept" {
		t.Fatalf("f = %q, %v", data, err)
	}
}

// TestIssue14FailedWriteTmpfs: the same on a real full disk, a small
// tmpfs mounted for the test (as root; skipped where mount fails).
func TestIssue14FailedWriteTmpfs(t *testing.T) {
	dir := t.TempDir()
	if out, err := runMount(dir, "3m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { unmount(dir) })
	s, err := packfs.Open(dir+"/store", &packfs.Options{Sync: packfs.SyncAlways, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunk := bytes.Repeat([]byte("z"), 16<<10)
	var failed string
	for i := range 1000 {
		name := fmt.Sprintf("f%03d", i)
		if err := s.WriteFile(name, chunk, 0o644); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write %s: %v, want ENOSPC", name, err)
			}
			failed = name
			break
		}
	}
	if failed == "" {
		t.Fatal("the disk never filled")
	}
	if _, err := s.Stat(failed); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat %s, whose write failed: %v", failed, err)
	}
	if data, err := s.ReadFile("f000"); err != nil || len(data) != len(chunk) {
		t.Fatalf("f000: %d bytes, %v", len(data), err)
	}
}

func runMount(dir, size string) (string, error) {
	return "", syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size)
}

func unmount(dir string) { syscall.Unmount(dir, syscall.MNT_DETACH) }

// TestIssue14ClosedStore: every method of a closed store says
// fs.ErrClosed.
func TestIssue14ClosedStore(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	mustDo(t, s.WriteFile("f", []byte("x"), 0o644))
	mustDo(t, s.Symlink("f", "l"))
	mustDo(t, s.Close())
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s after Close: %v, want fs.ErrClosed", what, err)
		}
		var pe *fs.PathError
		if err != nil && what != "Snapshot" && what != "Sync" && what != "Close" && what != "Checkpoint" && what != "Update" && !errors.As(err, &pe) {
			t.Errorf("%s after Close: %T is no *fs.PathError", what, err)
		}
	}
	_, err = s.ReadFile("f")
	check("ReadFile", err)
	_, err = s.Stat("f")
	check("Stat", err)
	_, err = s.Lstat("f")
	check("Lstat", err)
	_, err = s.ReadDir(".")
	check("ReadDir", err)
	_, err = s.ReadLink("l")
	check("ReadLink", err)
	_, err = s.Open("f")
	check("Open", err)
	_, err = s.OpenFile("f", os.O_RDWR, 0)
	check("OpenFile", err)
	_, err = s.Sub(".")
	check("Sub", err)
	_, err = s.Glob("*")
	check("Glob", err)
	_, err = s.Snapshot()
	check("Snapshot", err)
	check("Sync", s.Sync())
	check("Checkpoint", s.Checkpoint())
	check("Update", s.Update(func(*packfs.Tx) error { return nil }))
	check("Close", s.Close())
	check("WriteFile", s.WriteFile("g", nil, 0o644))
}

// TestIssue14CheckpointRetried: a background checkpoint that fails on a
// full disk does not fail later calls whose data the log holds safe, and
// runs again once there is room.
func TestIssue14CheckpointRetried(t *testing.T) {
	// The log's own writes go on: only new files cannot be made, log
	// segments too or only packs and manifests.
	t.Run("segments", func(t *testing.T) { checkpointRetried(t, nil) })
	t.Run("packs", func(t *testing.T) {
		checkpointRetried(t, func(name string) bool { return strings.HasPrefix(name, "wal-") })
	})
}

func checkpointRetried(t *testing.T, spare func(string) bool) {
	m := vfstest.NewMemFS()
	d := &fullDisk{FS: m, spare: spare, creating: true}
	s, err := packfs.Open("", &packfs.Options{FS: d, CheckpointBytes: 32 << 10})
	mustDo(t, err)
	d.full.Store(true)
	block := bytes.Repeat([]byte("b"), 8<<10)
	for i := range 8 {
		mustDo(t, s.WriteFile(fmt.Sprintf("f%d", i), block, 0o644))
	}
	// Wait for the background checkpoint to meet the full disk, then
	// for it to end: a checkpoint waits for the one running.
	for deadline := time.Now().Add(time.Minute); d.hits.Load() == 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("no background checkpoint started")
		}
	}
	if err := s.Checkpoint(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("checkpoint on a full disk: %v", err)
	}
	if d.hits.Load() < 2 {
		t.Fatalf("the background checkpoint did not run: %d refusals", d.hits.Load())

	}
	d.full.Store(false)
	if err := s.Sync(); err != nil {
		t.Fatalf("sync once there is room: %v", err)
	}
	// The failed background checkpoint may still be winding down while
	// the first writes pass its retry size (it claims the next one only
	// once it has ended), so write until a checkpoint has run.
	hasPack := func() bool {
		for _, n := range m.Files() {
			if strings.HasSuffix(n, ".pack") {
				return true
			}
		}
		return false
	}
	g := 0
	for deadline := time.Now().Add(time.Minute); g < 8 || !hasPack(); g++ {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint ran once there was room, after %d writes", g)
		}
		mustDo(t, s.WriteFile(fmt.Sprintf("g%d", g), block, 0o644))
		if g >= 8 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s2, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	defer s2.Close()
	for i := range g {
		for _, p := range []string{"f", "g"} {
			if p == "f" && i >= 8 {
				continue
			}
			if data, err := s2.ReadFile(fmt.Sprintf("%s%d", p, i)); err != nil || !bytes.Equal(data, block) {
				t.Fatalf("%s%d after reopen: %d bytes, %v", p, i, len(data), err)
			}
		}
	}
}

// TestIssue14UpdateReentry: a change of the store made inside Update's
// callback fails with ErrInTransaction instead of waiting for the
// transaction, which waits for it.
func TestIssue14UpdateReentry(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.WriteFile("f", []byte("x"), 0o644))
	w, err := s.OpenFile("f", os.O_RDWR, 0)
	mustDo(t, err)
	defer w.Close()
	calls := map[string]func() error{
		"WriteFile":  func() error { return s.WriteFile("g", []byte("y"), 0o644) },
		"Mkdir":      func() error { return s.Mkdir("d", 0o755) },
		"Rename":     func() error { return s.Rename("f", "h") },
		"OpenFile":   func() error { _, err := s.OpenFile("n", os.O_RDWR|os.O_CREATE, 0o644); return err },
		"file Write": func() error { _, err := w.Write([]byte("z")); return err },
		"Truncate":   func() error { return w.Truncate(0) },
		"Update":     func() error { return s.Update(func(*packfs.Tx) error { return nil }) },
		"Checkpoint": s.Checkpoint,
		"Flatten":    s.Flatten,
		"Close":      s.Close,
	}
	for name, call := range calls {
		done := make(chan error, 1)
		go func() {
			done <- s.Update(func(tx *packfs.Tx) error {
				if err := tx.WriteFile("t", []byte(name), 0o644); err != nil {
					return err
				}
				return call()
			})
		}()
		select {
		case err := <-done:
			if !errors.Is(err, packfs.ErrInTransaction) {
				t.Errorf("%s inside Update: %v, want ErrInTransaction", name, err)
			}
		case <-time.After(time.Minute): // a deadlock guard, not a timing check
			t.Fatalf("%s inside Update never returned", name)
		}
	}
	// The store goes on, none of the refused changes made.
	mustDo(t, s.WriteFile("after", nil, 0o644))
	for _, n := range []string{"g", "d", "h", "n", "t"} {
		if _, err := s.Lstat(n); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v", n, err)
		}
	}
	if data, _ := s.ReadFile("f"); string(data) != "x" {
		t.Errorf("f = %q", data)
	}
}

// TestIssue14UpdateBesideWriters: changes from other goroutines while a
// transaction runs wait for it, as before: only the callback's own are
// refused.
func TestIssue14UpdateBesideWriters(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	defer s.Close()
	inside := make(chan struct{})
	release := make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- s.Update(func(tx *packfs.Tx) error {
			close(inside)
			<-release
			return tx.WriteFile("tx", nil, 0o644)
		})
	}()
	<-inside
	wrote := make(chan error, 1)
	go func() { wrote <- s.WriteFile("beside", nil, 0o644) }()
	close(release)
	mustDo(t, <-txDone)
	mustDo(t, <-wrote)
	for _, n := range []string{"tx", "beside"} {
		if _, err := s.Stat(n); err != nil {
			t.Error(err)
		}
	}
}

// TestIssue14BadNames: the store refuses, before logging, names Linux
// refuses: a NUL byte (EINVAL), an element past 255 bytes or a path past
// 4,095 (ENAMETOOLONG). Checkpoints go on working.
func TestIssue14BadNames(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	mustDo(t, s.Mkdir("d", 0o755))
	long := strings.Repeat("n", 256)
	deep := strings.Repeat("d/", 2047) + "xx" // 4,096 bytes
	for _, c := range []struct {
		name string
		want error
	}{
		{"a\x00b", syscall.EINVAL},
		{"d/\x00", syscall.EINVAL},
		{long, syscall.ENAMETOOLONG},
		{"d/" + long, syscall.ENAMETOOLONG},
		{strings.Repeat("x", 70000), syscall.ENAMETOOLONG},
		{deep, syscall.ENAMETOOLONG},
	} {
		short := c.name[:min(len(c.name), 12)]
		ops := map[string]func() error{
			"WriteFile": func() error { return s.WriteFile(c.name, []byte("x"), 0o644) },
			"Mkdir":     func() error { return s.Mkdir(c.name, 0o755) },
			"MkdirAll":  func() error { return s.MkdirAll(c.name, 0o755) },
			"Symlink":   func() error { return s.Symlink("d", c.name) },
			"OpenFile": func() error {
				f, err := s.OpenFile(c.name, os.O_RDWR|os.O_CREATE, 0o644)
				if err == nil {
					f.Close()
				}
				return err
			},
			"Rename": func() error { return s.Rename("d", c.name) },
			"Update": func() error {
				return s.Update(func(tx *packfs.Tx) error { return tx.WriteFile(c.name, nil, 0o644) })
			},
		}
		for op, call := range ops {
			err := call()
			if !errors.Is(err, c.want) {
				t.Errorf("%s(%q...): %v, want %v", op, short, err, c.want)
				continue
			}
			var pe *fs.PathError
			var le *os.LinkError
			if !errors.As(err, &pe) && !errors.As(err, &le) {
				t.Errorf("%s(%q...): %T is no *fs.PathError", op, short, err)
			}
		}
	}
	mustDo(t, s.Symlink(strings.Repeat("t", 4095), "longtarget"))
	if err := s.Symlink(strings.Repeat("t", 4096), "toolong"); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("symlink to a 4,096-byte target: %v", err)
	}
	mustDo(t, s.Checkpoint())
	mustDo(t, s.Flatten())
	mustDo(t, s.Sync())
	s = reopenMem(t, s, m)
	if entries, err := s.ReadDir("."); err != nil || len(entries) != 2 {
		t.Fatalf("after reopen: %v, %v", entries, err)
	}
}

// TestIssue13NegativeWriteAt: WriteAt at a negative offset fails as os's
// does, writes nothing and logs nothing, on O_APPEND files too.
func TestIssue13NegativeWriteAt(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	for _, flag := range []int{os.O_RDWR, os.O_WRONLY | os.O_APPEND} {
		f, err := s.OpenFile("f", flag|os.O_CREATE|os.O_TRUNC, 0o644)
		mustDo(t, err)
		if _, err := f.Write([]byte("ab")); err != nil {
			t.Fatal(err)
		}
		if n, err := f.WriteAt([]byte("XY"), -1); err == nil || n != 0 {
			t.Errorf("flag %#x: WriteAt(-1) = %d, %v", flag, n, err)
		}
		if n, err := f.WriteAt([]byte("XY"), -2); err == nil || n != 0 {
			t.Errorf("flag %#x: WriteAt(-2) = %d, %v", flag, n, err)
		}
		mustDo(t, f.Close())
		if data, _ := s.ReadFile("f"); string(data) != "ab" {
			t.Errorf("flag %#x: f = %q", flag, data)
		}
	}
	s = reopenMem(t, s, m)
	if data, _ := s.ReadFile("f"); string(data) != "ab" {
		t.Errorf("after reopen f = %q", data)
	}
	// The errors are os's.
	dir := t.TempDir()
	for _, flag := range []int{os.O_RDWR, os.O_WRONLY | os.O_APPEND} {
		o, err := os.OpenFile(dir+"/f", flag|os.O_CREATE, 0o644)
		mustDo(t, err)
		_, oerr := o.WriteAt([]byte("x"), -1)
		o.Close()
		f, err := s.OpenFile("f", flag, 0)
		mustDo(t, err)
		_, serr := f.WriteAt([]byte("x"), -1)
		f.Close()
		if oerr == nil || serr == nil || strings.ReplaceAll(oerr.Error(), dir+"/", "") != serr.Error() {
			t.Errorf("flag %#x: WriteAt(-1) gives %v, os %v", flag, serr, oerr)
		}
	}
}

// TestIssue14FailedWritesConcurrent: writers racing onto a disk that
// fills, under SyncAlways: every write acknowledged is there, every write
// that failed is not, for readers now and after a reopen.
func TestIssue14FailedWritesConcurrent(t *testing.T) {
	m := vfstest.NewMemFS()
	d := &fullDisk{FS: m}
	s, err := packfs.Open("", &packfs.Options{FS: d, Sync: packfs.SyncAlways, CheckpointBytes: -1})
	mustDo(t, err)
	var wg sync.WaitGroup
	var total atomic.Int64
	results := make([][]error, 4)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if total.Add(1) == 80 {
					d.full.Store(true)
				}
				err := s.WriteFile(fmt.Sprintf("g%d-%d", g, i), []byte(fmt.Sprint(g, i)), 0o644)
				results[g] = append(results[g], err)
			}
		}()
	}
	wg.Wait()
	check := func(what string, s *packfs.Store) {
		var acked, failed int
		for g, errs := range results {
			for i, werr := range errs {
				name := fmt.Sprintf("g%d-%d", g, i)
				data, err := s.ReadFile(name)
				switch {
				case werr == nil && (err != nil || string(data) != fmt.Sprint(g, i)):
					t.Errorf("%s: %s was acknowledged, but reads %q, %v", what, name, data, err)
				case werr != nil && !errors.Is(err, fs.ErrNotExist) && what == "now":
					t.Errorf("%s: %s failed (%v), but reads %q, %v", what, name, werr, data, err)
				}
				if werr == nil {
					acked++
				} else {
					failed++
				}
			}
		}
		if acked == 0 || failed == 0 {
			t.Fatalf("%d acknowledged, %d failed: the disk filled at the wrong time", acked, failed)
		}
	}
	check("now", s)
	s.Close()
	s2, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	defer s2.Close()
	check("after reopen", s2)
}

// TestIssue14ClosedStoreFiles: files open when the store closes fail
// with fs.ErrClosed, reads too.
func TestIssue14ClosedStoreFiles(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	mustDo(t, s.WriteFile("f", []byte("data"), 0o644))
	mustDo(t, s.Checkpoint()) // f in a pack
	mustDo(t, s.WriteFile("g", []byte("data"), 0o644))
	var files []fs.File
	for _, n := range []string{"f", "g"} {
		r, err := s.Open(n)
		mustDo(t, err)
		files = append(files, r)
	}
	mustDo(t, s.Close())
	for _, f := range files {
		if _, err := f.Read(make([]byte, 4)); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("read after Close: %v", err)
		}
		if _, err := f.Stat(); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("stat after Close: %v", err)
		}
		f.Close()
	}
}

// TestIssue14UpdateCallbackReads: inside Update's callback, what does not
// change the store goes on working: reads, snapshots, syncs.
func TestIssue14UpdateCallbackReads(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.WriteFile("f", []byte("x"), 0o644))
	f, err := s.Open("f")
	mustDo(t, err)
	defer f.Close()
	mustDo(t, s.Update(func(tx *packfs.Tx) error {
		if data, err := s.ReadFile("f"); err != nil || string(data) != "x" {
			return fmt.Errorf("read: %q, %v", data, err)
		}
		if _, err := s.Snapshot(); err != nil {
			return err
		}
		if err := s.Sync(); err != nil {
			return err
		}
		r, err := s.Open("f")
		if err != nil {
			return err
		}
		r.Close()
		return tx.WriteFile("t", nil, 0o644)
	}))
	if _, err := s.Stat("t"); err != nil {
		t.Fatal(err)
	}
}

// TestIssue14FailedUpdateAndCreate: a transaction, or an open that
// creates, whose log write fails leaves nothing behind either.
func TestIssue14FailedUpdateAndCreate(t *testing.T) {
	for _, policy := range []packfs.SyncPolicy{packfs.SyncOnCommit, packfs.SyncAlways} {
		d := &fullDisk{FS: vfstest.NewMemFS()}
		s, err := packfs.Open("", &packfs.Options{FS: d, Sync: policy, CheckpointBytes: -1})
		mustDo(t, err)
		mustDo(t, s.WriteFile("keep", []byte("k"), 0o644))
		d.full.Store(true)
		err = s.Update(func(tx *packfs.Tx) error {
			if err := tx.WriteFile("u", []byte("u"), 0o644); err != nil {
				return err
			}
			return tx.Rename("keep", "moved")
		})
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("policy %d: update on a full disk: %v", policy, err)
		}
		for _, n := range []string{"u", "moved"} {
			if _, err := s.Lstat(n); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("policy %d: %s after a failed update: %v", policy, n, err)
			}
		}
		if data, err := s.ReadFile("keep"); err != nil || string(data) != "k" {
			t.Errorf("policy %d: keep = %q, %v", policy, data, err)
		}
		if f, err := s.OpenFile("c", os.O_RDWR|os.O_CREATE, 0o644); err == nil {
			f.Close()
			t.Errorf("policy %d: create after the log failed succeeded", policy)
		}
		if _, err := s.Lstat("c"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("policy %d: c: %v", policy, err)
		}
		s.Close()
	}
	// An open that creates, meeting the failure itself.
	d := &fullDisk{FS: vfstest.NewMemFS()}
	s, err := packfs.Open("", &packfs.Options{FS: d, Sync: packfs.SyncAlways, CheckpointBytes: -1})
	mustDo(t, err)
	defer s.Close()
	d.full.Store(true)
	if f, err := s.OpenFile("c", os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create on a full disk: %v", err)
	} else if f != nil {
		t.Fatal("a failed create returned a file")
	}
	if _, err := s.Lstat("c"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("c after a failed create: %v", err)
	}
}

// TestIssue14FaultSweepWriteInvisible makes each file-system operation of
// a run of changes fail in turn (vfstest.Faulty): the change that meets
// the fault fails and is not seen, every change before it is, and every
// change after it is refused, under each policy.
func TestIssue14FaultSweepWriteInvisible(t *testing.T) {
	big := bytes.Repeat([]byte("B"), 1<<20) // fills the log's buffer
	for _, policy := range []packfs.SyncPolicy{packfs.SyncOnCommit, packfs.SyncAlways} {
		for k := 0; ; k++ {
			m := vfstest.NewMemFS()
			f := vfstest.NewFaulty(m, k)
			s, err := packfs.Open("", &packfs.Options{FS: f, Sync: policy, CheckpointBytes: -1})
			if err != nil {
				continue // the fault hit Open
			}
			h, err := s.OpenFile("h", os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				s.Close()
				continue
			}
			type change struct {
				name string
				want string
			}
			var acked []change
			var failed *change
			for i := range 12 {
				c := change{name: fmt.Sprintf("f%d", i), want: fmt.Sprint(i)}
				var err error
				switch {
				case i%4 == 3:
					c.name, c.want = "h", fmt.Sprintf("h%d", i)
					_, err = h.WriteAt([]byte(c.want), 0)
				case i%3 == 2:
					c.want = string(big)
					err = s.WriteFile(c.name, big, 0o644)
				default:
					err = s.WriteFile(c.name, []byte(c.want), 0o644)
				}
				if err != nil {
					failed = &c
					break
				}
				acked = append(acked, c)
			}
			if failed == nil {
				h.Close()
				s.Close() // may meet the fault itself
				if !f.Failed() {
					break // past the last operation: every k was tried
				}
				continue // the fault fell on what the store may absorb
			}
			what := fmt.Sprintf("policy %d, fault at %d", policy, k)
			if failed.name != "h" {
				if _, err := s.Stat(failed.name); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: %s, whose write failed: %v", what, failed.name, err)
				}
			}
			last := map[string]string{}
			for _, c := range acked {
				last[c.name] = c.want
			}
			for name, want := range last {
				if data, err := s.ReadFile(name); err != nil || string(data[:min(len(data), len(want))]) != want {
					t.Errorf("%s: %s acknowledged, reads %d bytes, %v", what, name, len(data), err)
				}
			}
			if failed.name == "h" {
				data, _ := s.ReadFile("h")
				if bytes.HasPrefix(data, []byte(failed.want)) && last["h"] != failed.want {
					t.Errorf("%s: h shows the write that failed", what)
				}
			}
			if err := s.WriteFile("after", nil, 0o644); err == nil {
				t.Errorf("%s: a change after the failure succeeded", what)
			}
			h.Close()
			s.Close()
		}
	}
}

// TestIssue14UpdatePanicReentry: a callback that panics leaves no trace
// of having run: changes from any goroutine work afterwards, and a
// change made inside before the panic is refused as usual.
func TestIssue14UpdatePanicReentry(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	defer s.Close()
	var inner error
	func() {
		defer func() { recover() }()
		s.Update(func(tx *packfs.Tx) error {
			inner = s.WriteFile("inside", nil, 0o644)
			panic("give up")
		})
	}()
	if !errors.Is(inner, packfs.ErrInTransaction) {
		t.Fatalf("change inside the callback: %v", inner)
	}
	mustDo(t, s.WriteFile("after", nil, 0o644))
	mustDo(t, s.Update(func(tx *packfs.Tx) error { return tx.WriteFile("tx", nil, 0o644) }))
	if _, err := s.Stat("inside"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("inside: %v", err)
	}
}

// TestIssue14SelfRenameBesideWriter: renames of a file onto itself, by
// aliases, racing with writes through a handle of it and with
// checkpoints: after a reopen the file holds every write.
func TestIssue14SelfRenameBesideWriter(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: 2 << 10, MaxPacks: 2})
	mustDo(t, err)
	mustDo(t, s.Mkdir("d", 0o755))
	mustDo(t, s.Symlink(".", "self"))
	mustDo(t, s.Symlink("d", "ld"))
	f, err := s.OpenFile("d/f", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	mustDo(t, err)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		aliases := [][2]string{{"d/f", "d/f"}, {"d/f", "ld/f"}, {"self/ld/f", "d/f"}, {"d", "self/d"}, {"ld/f", "self/self/d/f"}}
		for i := 0; !stop.Load(); i++ {
			a := aliases[i%len(aliases)]
			if err := s.Rename(a[0], a[1]); err != nil {
				t.Errorf("rename %s %s: %v", a[0], a[1], err)
				return
			}
		}
	}()
	var want bytes.Buffer
	for i := range 300 {
		line := fmt.Sprintf("<%d>", i)
		want.WriteString(line)
		if _, err := f.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	mustDo(t, f.Sync())
	f.Close()
	s = reopenMem(t, s, m)
	if data, err := s.ReadFile("d/f"); err != nil || string(data) != want.String() {
		t.Fatalf("d/f after reopen: %d bytes, %v; want %d", len(data), err, want.Len())
	}
}

// TestIssue14CheckpointRetriedTmpfs: a checkpoint that fails on a real
// full disk, a small tmpfs (as root; skipped where mount fails), costs
// nothing: the log's preallocated blocks hold the changes, Sync succeeds,
// and once there is room again a checkpoint does too. (A probe on a real
// disk: the code before the fix passed it, since an explicit checkpoint
// failing in its pack was not sticky; TestIssue14CheckpointRetried is the
// regression test.)
func TestIssue14CheckpointRetriedTmpfs(t *testing.T) {
	dir := t.TempDir()
	if out, err := runMount(dir, "4m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { unmount(dir) })
	s, err := packfs.Open(dir+"/store", &packfs.Options{CheckpointBytes: -1})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.WriteFile("first", []byte("x"), 0o644))
	mustDo(t, s.Sync()) // the log's first megabyte is allocated
	ballast, err := os.Create(dir + "/ballast")
	mustDo(t, err)
	defer ballast.Close()
	for {
		if _, err := ballast.Write(make([]byte, 4<<10)); err != nil {
			break
		}
	}
	// 56 blocks of 16 KiB: within the log's allocated megabyte, and more
	// than the checkpoint frees when it cuts the rest off.
	// Distinct blocks: a pack stores identical ones once.
	block := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8), 'b', 'l'}, 4<<10) }
	for i := range 56 {
		mustDo(t, s.WriteFile(fmt.Sprintf("f%d", i), block(i), 0o644))
		mustDo(t, s.Sync())
	}
	if err := s.Checkpoint(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("checkpoint on a full disk: %v", err)
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("sync after a failed checkpoint: %v", err)
	}
	ballast.Close()
	mustDo(t, os.Remove(dir+"/ballast"))
	mustDo(t, s.WriteFile("g", block(99), 0o644))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.Close())
	s2, err := packfs.Open(dir+"/store", nil)
	mustDo(t, err)
	defer s2.Close()
	for i := range 56 {
		if data, err := s2.ReadFile(fmt.Sprintf("f%d", i)); err != nil || !bytes.Equal(data, block(i)) {
			t.Fatalf("f%d after reopen: %d bytes, %v", i, len(data), err)
		}
	}
}

// TestIssue14ManifestFailureGoesOn: a checkpoint whose manifest cannot be
// written leaves the store working over its old packs; the next
// checkpoint takes a new pack name, and a reopen finds every change.
func TestIssue14ManifestFailureGoesOn(t *testing.T) {
	m := vfstest.NewMemFS()
	d := &fullDisk{FS: m, creating: true, spare: func(name string) bool { return !strings.HasPrefix(name, "MANIFEST") }}
	s, err := packfs.Open("", &packfs.Options{FS: d, CheckpointBytes: -1})
	mustDo(t, err)
	mustDo(t, s.WriteFile("a", []byte("a"), 0o644))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.WriteFile("b", []byte("b"), 0o644))
	d.full.Store(true)
	if err := s.Checkpoint(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("checkpoint without room for a manifest: %v", err)
	}
	mustDo(t, s.WriteFile("c", []byte("c"), 0o644))
	mustDo(t, s.Sync())
	d.full.Store(false)
	mustDo(t, s.WriteFile("d", []byte("d"), 0o644))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.WriteFile("e", []byte("e"), 0o644))
	mustDo(t, s.Close())
	s2, err := packfs.Open("", &packfs.Options{FS: m})
	mustDo(t, err)
	defer s2.Close()
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if data, err := s2.ReadFile(n); err != nil || string(data) != n {
			t.Errorf("%s after reopen: %q, %v", n, data, err)
		}
	}
	packs := 0
	for _, n := range m.Files() {
		if strings.HasSuffix(n, ".pack") {
			packs++
		}
	}
	if packs != 2 {
		t.Errorf("%d packs after reopen, want the 2 the manifest lists: %v", packs, m.Files())
	}
}

// TestIssue14ReadBesideTransaction: a reader that lists a directory and
// reads what it listed, while writers make transactions and single
// changes in it, always finds what it listed: a read that overlapped the
// start of a transaction's applying is read again from the state before
// it, never half from each (TestStoreCheckpointUnderLoad failed this in
// 15 of 100 runs).
func TestIssue14ReadBesideTransaction(t *testing.T) {
	rounds := 20
	if testsize.Short() || raceEnabled {
		rounds = 5
	}
	for range rounds {
		s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS(), Sync: packfs.SyncNone, CheckpointBytes: -1})
		mustDo(t, err)
		mustDo(t, s.Mkdir("w", 0o755))
		var wg sync.WaitGroup
		var writers sync.WaitGroup
		var stop atomic.Bool
		for w := range 3 {
			writers.Add(1)
			go func() {
				defer writers.Done()
				writeUnderLoad(t, s, w)
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
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
		writers.Wait()
		stop.Store(true)
		wg.Wait()
		s.Close()
		if t.Failed() {
			return
		}
	}
}
