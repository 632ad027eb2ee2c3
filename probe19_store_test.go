package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/vfs/vfstest"
)

// probeWriter is what a random change is made through: a store, a
// transaction, or the model.
type probeWriter interface {
	WriteFile(name string, data []byte, perm fs.FileMode) error
	Mkdir(name string, perm fs.FileMode) error
	MkdirAll(name string, perm fs.FileMode) error
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	Symlink(oldname, newname string) error
	Chmod(name string, mode fs.FileMode) error
}

// probeChange is one random change, applied the same way to any writer.
type probeChange struct {
	op   int
	a, b string
	data []byte
	mode fs.FileMode
}

func randomChange(r *rand.Rand, names *probeNames, big []byte) probeChange {
	c := probeChange{op: r.IntN(9), a: names.pick(r), b: names.pick(r)}
	switch c.op {
	case 0, 1:
		c.data = fmt.Appendf(nil, "v%d", r.Uint32())
		if r.IntN(8) == 0 {
			// a large entry, logged straight to the segment
			c.data = append(slices.Clone(big[:len(big)/2+r.IntN(len(big)/2)]), c.data...)
		}
	case 6:
		c.b = names.target(r, c.a)
	case 7:
		c.mode = fs.FileMode(0o700 | r.IntN(0o100))
	}
	return c
}

func (c probeChange) String() string {
	return fmt.Sprintf("op%d(%s, %s, %d bytes, %v)", c.op, c.a, c.b, len(c.data), c.mode)
}

func (c probeChange) apply(w probeWriter) error {
	switch c.op {
	case 0, 1:
		return w.WriteFile(c.a, c.data, 0o644)
	case 2:
		return w.Mkdir(c.a, 0o755)
	case 3:
		return w.Remove(c.a)
	case 4:
		return w.RemoveAll(c.a)
	case 5:
		return w.Rename(c.a, c.b)
	case 6:
		return w.Symlink(c.b, c.a)
	case 7:
		return w.Chmod(c.a, c.mode)
	default:
		return w.MkdirAll(c.a, 0o755)
	}
}

// copyTree makes dst hold what src holds.
func copyTree(t *testing.T, dst probeWriter, src fs.FS) {
	t.Helper()
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tgt, err := fs.ReadLink(src, p)
			if err != nil {
				return err
			}
			return dst.Symlink(tgt, p)
		case fi.IsDir():
			if err := dst.Mkdir(p, 0o700); err != nil {
				return err
			}
		default:
			data, err := fs.ReadFile(src, p)
			if err != nil {
				return err
			}
			if err := dst.WriteFile(p, data, 0o600); err != nil {
				return err
			}
		}
		return dst.Chmod(p, fi.Mode()&fs.ModePerm)
	})
	mustDo(t, err)
}

// probeTreeSum is probeTree without the root's line, with long contents
// summed.
func probeTreeSum(t *testing.T, fsys fs.FS) string {
	t.Helper()
	lines := probeTree(t, fsys)[1:]
	for i, l := range lines {
		if len(l) > 200 {
			lines[i] = fmt.Sprintf("%s... (%d bytes)", l[:100], len(l))
		}
	}
	return strings.Join(lines, "\n")
}

// TestIssue19ProbeStoreModel: random transactions of many changes over a
// store, committed, failed or panicking, some five and more undone in a
// row, with plain changes, checkpoints, crashes (the store's directory
// reopened as a power cut would leave it, without Close) and reopens,
// against a plain mem layer that takes only the committed changes. Beside
// them, readers take snapshots and must never see half a transaction
// (every transaction writes the same stamp to pa first and pb last) nor
// an undone one's stamp; a file opened at the start reads throughout.
func TestIssue19ProbeStoreModel(t *testing.T) {
	seeds, rounds := 2, 50 // PACKFS_LONG=1
	if os.Getenv("PACKFS_PROBE_SEEDS") != "" {
		seeds, rounds = 20, 120
	}
	if testsize.Short() || raceEnabled {
		seeds, rounds = 1, 40
	}
	for _, policy := range []packfs.SyncPolicy{packfs.SyncOnCommit, packfs.SyncAlways} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("sync%d/seed%d", policy, seed), func(t *testing.T) {
				probeStoreModel(t, policy, uint64(seed), rounds)
			})
		}
	}
}

func probeStoreModel(t *testing.T, policy packfs.SyncPolicy, seed uint64, rounds int) {
	r := rand.New(rand.NewPCG(seed, 1919))
	big := bytes.Repeat([]byte("0123456789abcdef"), 24<<10) // 384 KiB
	names := newProbeNames(6)
	m := vfstest.NewMemFS()
	opts := func() *packfs.Options {
		return &packfs.Options{FS: m, Sync: policy, CheckpointBytes: 256 << 10, MaxPacks: 3}
	}
	s, err := packfs.Open("", opts())
	mustDo(t, err)
	model := mem.New()
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		start := max(0, len(log)-4)
		t.Fatalf("seed %d: %s\nlast:\n%s", seed, fmt.Sprintf(format, args...), strings.Join(log[start:], "\n"))
	}
	for _, w := range []probeWriter{s, model} {
		mustDo(t, w.WriteFile("pa", []byte("0"), 0o644))
		mustDo(t, w.WriteFile("pb", []byte("0"), 0o644))
		mustDo(t, w.MkdirAll("a/x", 0o755))
		mustDo(t, w.WriteFile("a/x/p", []byte("p"), 0o644))
	}
	mustDo(t, s.Sync())

	// Readers beside the writer, restarted at each reopen.
	var wg sync.WaitGroup
	var readErr error
	var readMu sync.Mutex
	stop := make(chan struct{})
	startReaders := func(s *packfs.Store) {
		stop = make(chan struct{})
		for g := range 2 {
			wg.Add(1)
			go func(stop chan struct{}) {
				defer wg.Done()
				h, err := s.Open("a/x/p")
				if err == nil {
					defer h.Close()
					if fi, err := h.Stat(); err != nil || !fi.Mode().IsRegular() {
						h = nil // a directory reads EISDIR, as on Linux
					}
				}
				rr := rand.New(rand.NewPCG(seed, uint64(g)))
				buf := make([]byte, 64)
				for {
					select {
					case <-stop:
						return
					default:
					}
					snap, err := s.Snapshot()
					if errors.Is(err, fs.ErrClosed) {
						return
					}
					if err != nil {
						readMu.Lock()
						readErr = err
						readMu.Unlock()
						return
					}
					pa, aerr := snap.ReadFile("pa")
					pb, berr := snap.ReadFile("pb")
					if aerr != nil || berr != nil || !bytes.Equal(pa, pb) || bytes.HasPrefix(pa, []byte("undone")) {
						readMu.Lock()
						readErr = fmt.Errorf("a snapshot reads pa=%q (%v), pb=%q (%v)", pa, aerr, pb, berr)
						readMu.Unlock()
						return
					}
					n := names.pick(rr)
					s.Stat(n)
					s.ReadFile(n)
					s.ReadDir(n)
					if h != nil {
						if _, err := h.(io.ReaderAt).ReadAt(buf, 0); err != nil && err != io.EOF {
							readMu.Lock()
							readErr = fmt.Errorf("a file opened before: %v", err)
							readMu.Unlock()
							return
						}
					}
				}
			}(stop)
		}
	}
	stopReaders := func() {
		close(stop)
		wg.Wait()
		readMu.Lock()
		defer readMu.Unlock()
		if readErr != nil {
			fail("reader: %v", readErr)
		}
	}
	startReaders(s)
	compare := func(what string) {
		t.Helper()
		if got, want := probeTreeSum(t, s), probeTreeSum(t, model); got != want {
			fail("%s: store\n%s\nwant\n%s", what, got, want)
		}
	}
	errNo := errors.New("no")
	undoneRun := 0
	for round := range rounds {
		// Five and more undone in a row at some point of every seed.
		undo := r.IntN(2) == 0 || (round >= 10 && round < 16)
		if undo {
			undoneRun++
		} else {
			undoneRun = 0
		}
		changes := make([]probeChange, 5+r.IntN(40))
		for i := range changes {
			changes[i] = randomChange(r, names, big)
		}
		stamp := fmt.Appendf(nil, "%d", round+1)
		if undo {
			stamp = fmt.Appendf(nil, "undone%d", round)
		}
		panics := r.IntN(2) == 0
		before := model.Snapshot()
		var modelErrs, txErrs []string
		for _, c := range changes {
			modelErrs = append(modelErrs, probeErr(c.apply(model)))
		}
		mustDo(t, model.WriteFile("pa", stamp, 0o644))
		mustDo(t, model.WriteFile("pb", stamp, 0o644))
		err := func() (err error) {
			defer func() {
				if v := recover(); v != nil {
					err = v.(error)
				}
			}()
			return s.Update(func(tx *packfs.Tx) error {
				if err := tx.WriteFile("pa", stamp, 0o644); err != nil {
					return err
				}
				for _, c := range changes {
					txErrs = append(txErrs, probeErr(c.apply(tx)))
				}
				if data, err := tx.ReadFile("pa"); err != nil || !bytes.Equal(data, stamp) {
					return fmt.Errorf("the transaction reads pa = %q, %v", data, err)
				}
				if err := tx.WriteFile("pb", stamp, 0o644); err != nil {
					return err
				}
				if !undo {
					return nil
				}
				if panics {
					panic(errNo)
				}
				return errNo
			})
		}()
		log = append(log, fmt.Sprintf("round %d undo %v panic %v: %v", round, undo, panics, changes))
		if undo {
			if !errors.Is(err, errNo) {
				fail("round %d: Update = %v, want the function's error", round, err)
			}
			model = mem.New()
			copyTree(t, model, before)
		} else if err != nil {
			fail("round %d: Update = %v", round, err)
		}
		if !slices.Equal(modelErrs, txErrs) {
			fail("round %d: the transaction's changes gave %v, the model's %v", round, txErrs, modelErrs)
		}
		compare(fmt.Sprintf("round %d", round))
		switch x := r.IntN(10); {
		case x == 0 || undoneRun == 6:
			log = append(log, "checkpoint")
			mustDo(t, s.Checkpoint())
			compare("after a checkpoint")
		case x == 1 || undoneRun == 7:
			// A crash: the directory as a power cut leaves it, opened
			// while the old store still runs.
			log = append(log, "crash")
			stopReaders()
			old := s
			m = m.Recover(vfstest.Torn{Rand: rand.New(rand.NewPCG(seed, uint64(round)))})
			if s, err = packfs.Open("", opts()); err != nil {
				fail("reopen after a crash: %v", err)
			}
			old.Close()
			compare("after a crash")
			if r.IntN(2) == 0 {
				mustDo(t, s.Checkpoint())
				compare("after a crash and a checkpoint")
			}
			startReaders(s)
		case x == 2:
			log = append(log, "reopen")
			stopReaders()
			mustDo(t, s.Close())
			if s, err = packfs.Open("", opts()); err != nil {
				fail("reopen: %v", err)
			}
			compare("after a reopen")
			startReaders(s)
		}
	}
	stopReaders()
	mustDo(t, s.Checkpoint())
	compare("at the end, after a checkpoint")
	old := s
	m = m.Recover(vfstest.Torn{})
	s, err = packfs.Open("", opts())
	mustDo(t, err)
	old.Close()
	compare("at the end, after a crash")
	mustDo(t, s.Close())
}

// TestIssue19ProbeReadOnlyBesideUndo: a read-only open of the store's
// directory beside a writer whose transactions commit, fail and panic
// (many changes each, some large), with checkpoints between, reads a
// whole state: pa and pb, written first and last by every transaction,
// agree, and no undone transaction's stamp shows.
func TestIssue19ProbeReadOnlyBesideUndo(t *testing.T) {
	rounds := 150
	if testsize.Short() || raceEnabled {
		rounds = 50
	}
	dir := t.TempDir()
	s, err := packfs.Open(dir, &packfs.Options{CheckpointBytes: 512 << 10, MaxPacks: 3})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.WriteFile("pa", []byte("0"), 0o644))
	mustDo(t, s.WriteFile("pb", []byte("0"), 0o644))
	mustDo(t, s.Sync())
	big := bytes.Repeat([]byte("x"), 200<<10)
	done := make(chan error, 1)
	go func() {
		defer close(done)
		errNo := errors.New("no")
		r := rand.New(rand.NewPCG(3, 4))
		for i := 1; i <= rounds; i++ {
			undo := r.IntN(3) > 0
			stamp := fmt.Appendf(nil, "%d", i)
			if undo {
				stamp = fmt.Appendf(nil, "undone%d", i)
			}
			err := func() (err error) {
				defer func() {
					if v := recover(); v != nil {
						err = v.(error)
					}
				}()
				return s.Update(func(tx *packfs.Tx) error {
					if err := tx.WriteFile("pa", stamp, 0o644); err != nil {
						return err
					}
					for k := range 20 {
						name := fmt.Sprintf("d%d/f%d", k%4, k)
						tx.MkdirAll(path.Dir(name), 0o755)
						data := stamp
						if k == 7 {
							data = append(slices.Clone(big), stamp...)
						}
						if err := tx.WriteFile(name, data, 0o644); err != nil {
							return err
						}
					}
					tx.RemoveAll(fmt.Sprintf("d%d", r.IntN(4)))
					if err := tx.WriteFile("pb", stamp, 0o644); err != nil {
						return err
					}
					if !undo {
						return nil
					}
					if i%2 == 0 {
						panic(errNo)
					}
					return errNo
				})
			}()
			if undo != errors.Is(err, errNo) || (!undo && err != nil) {
				done <- fmt.Errorf("round %d: Update = %v", i, err)
				return
			}
			if i%25 == 0 {
				if err := s.Checkpoint(); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	opens := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if opens == 0 {
				t.Fatal("no read-only open ran beside the writer")
			}
			return
		default:
		}
		ro, err := packfs.Open(dir, &packfs.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open: %v", err)
		}
		opens++
		pa, aerr := ro.ReadFile("pa")
		pb, berr := ro.ReadFile("pb")
		ro.Close()
		if aerr != nil || berr != nil || !bytes.Equal(pa, pb) || bytes.HasPrefix(pa, []byte("undone")) {
			<-done
			t.Fatalf("a read-only open reads pa=%q (%v), pb=%q (%v)", pa, aerr, pb, berr)
		}
	}
}

// TestIssue19ProbeAdapterBesideUndo: the afero adapter over a store,
// whose walks hold the store's directory handles, resolves decorated
// names beside transactions that commit and fail (each of which replaces
// the tree those handles came from) and beside checkpoints: the names
// always resolve (readers see the state before a transaction, where d/e
// stands), never with ErrUnsupported, and no undone stamp ever shows to a
// read that starts after the change.
func TestIssue19ProbeAdapterBesideUndo(t *testing.T) {
	rounds := 300
	if testsize.Short() || raceEnabled {
		rounds = 100
	}
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS(), CheckpointBytes: 64 << 10})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.MkdirAll("d/e", 0o755))
	mustDo(t, s.WriteFile("d/e/f", []byte("0"), 0o644))
	mustDo(t, s.Symlink("d/e", "l"))
	af := aferoadapter.New(s)
	done := make(chan error, 1)
	go func() {
		defer close(done)
		errNo := errors.New("no")
		for i := 1; i <= rounds; i++ {
			undo := i%2 == 0
			v := fmt.Appendf(nil, "%d", i)
			if undo {
				v = []byte("undone")
			}
			err := s.Update(func(tx *packfs.Tx) error {
				if err := tx.Rename("d/e", "d/tmp"); err != nil {
					return err
				}
				if err := tx.WriteFile("d/tmp/f", v, 0o644); err != nil {
					return err
				}
				if err := tx.Rename("d/tmp", "d/e"); err != nil {
					return err
				}
				if undo {
					return errNo
				}
				return nil
			})
			if undo != (err != nil) || (undo && !errors.Is(err, errNo)) {
				done <- fmt.Errorf("round %d: Update = %v", i, err)
				return
			}
			if i%40 == 0 {
				if err := s.Checkpoint(); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
		for _, name := range []string{"/d/e/f", "/d/../d/e/./f", "/l/f", "/l/../e/f", "d//e/f"} {
			f, err := af.Open(name)
			if err != nil {
				<-done
				t.Fatalf("afero Open(%s): %v", name, err)
			}
			// A file opened before a transaction reads its changes as
			// they are made (see Store.Update): it only has to read.
			_, err = io.ReadAll(f)
			f.Close()
			if err != nil {
				<-done
				t.Fatalf("afero read of %s: %v", name, err)
			}
			if data, err := s.ReadFile("l/f"); err != nil || string(data) == "undone" {
				<-done
				t.Fatalf("ReadFile(l/f) = %q, %v", data, err)
			}
			if _, err := af.Stat(name); err != nil {
				<-done
				t.Fatalf("afero Stat(%s): %v", name, err)
			}
		}
	}
}

// TestIssue19ProbeOpenBesideTransaction: an open for reading that runs
// beside a transaction opens the name in the state before it or after
// it, never in the middle: here d/e, which every transaction renames away
// and back, is always there to open. Store.OpenFile took the live union
// without the check readView makes, and so walked it mid-transaction.
func TestIssue19ProbeOpenBesideTransaction(t *testing.T) {
	rounds := 400
	if testsize.Short() || raceEnabled {
		rounds = 150
	}
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS(), Sync: packfs.SyncNone, CheckpointBytes: -1})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.MkdirAll("d/e", 0o755))
	mustDo(t, s.WriteFile("d/e/f", []byte("0"), 0o644))
	var stop atomicInt
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for stop.Load() == 0 {
				f, err := s.Open("d/e/f")
				if err != nil {
					errs <- err
					return
				}
				f.Close()
			}
		}()
	}
	errNo := errors.New("no")
	for i := range rounds {
		err := s.Update(func(tx *packfs.Tx) error {
			mustDo(t, tx.Rename("d/e", "d/tmp"))
			for k := range 20 {
				mustDo(t, tx.WriteFile(fmt.Sprintf("d/tmp/g%d", k), []byte("g"), 0o644))
			}
			mustDo(t, tx.Rename("d/tmp", "d/e"))
			if i%2 == 0 {
				return errNo
			}
			return nil
		})
		if i%2 == 0 && !errors.Is(err, errNo) || i%2 == 1 && err != nil {
			t.Fatalf("round %d: Update = %v", i, err)
		}
		if len(errs) > 0 {
			break
		}
	}
	stop.Store(1)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Open beside a transaction: %v", err)
	}
}

// TestIssue19ProbeStoreSub: a store's Sub reads the store as it is at each
// read. It was bound to the union of the moment it was made, and so,
// after an undone transaction replaced that union, showed the undone
// file and missed every later change.
func TestIssue19ProbeStoreSub(t *testing.T) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
	mustDo(t, err)
	defer s.Close()
	mustDo(t, s.MkdirAll("d", 0o755))
	sub, err := s.Sub("d")
	mustDo(t, err)
	errNo := errors.New("no")
	if err := s.Update(func(tx *packfs.Tx) error {
		mustDo(t, tx.WriteFile("d/undone", []byte("u"), 0o644))
		return errNo
	}); !errors.Is(err, errNo) {
		t.Fatalf("Update = %v", err)
	}
	mustDo(t, s.WriteFile("d/later", []byte("l"), 0o644))
	mustDo(t, s.Symlink("later", "d/link"))
	mustDo(t, s.Checkpoint())
	mustDo(t, s.WriteFile("d/after", []byte("a"), 0o644))
	if _, err := fs.Stat(sub, "undone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sub: Stat(undone) = %v, want ErrNotExist", err)
	}
	for _, n := range []string{"later", "link", "after"} {
		if data, err := fs.ReadFile(sub, n); err != nil {
			t.Errorf("Sub: ReadFile(%s) = %q, %v", n, data, err)
		}
	}
	if tgt, err := fs.ReadLink(sub, "link"); err != nil || tgt != "later" {
		t.Errorf("Sub: ReadLink(link) = %q, %v", tgt, err)
	}
	if got := probeTreeSum(t, sub); got != probeTreeSum(t, mustSub(t, s.Snapshot, "d")) {
		t.Errorf("Sub lists\n%s", got)
	}
	mustDo(t, s.Close())
	if _, err := fs.Stat(sub, "later"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Sub of a closed store: %v, want ErrClosed", err)
	}
}

func mustSub(t *testing.T, snap func() (*packfs.FS, error), dir string) fs.FS {
	t.Helper()
	f, err := snap()
	mustDo(t, err)
	sub, err := fs.Sub(f, dir)
	mustDo(t, err)
	return sub
}

// TestIssue19ProbeDirBesideUndo: a directory opened from a store before an
// undone transaction, a checkpoint or a committed rename of it lists, at
// its first ReadDir, the directory as it is then, as on Linux: it was left
// on the union of the moment, and so listed the undone transaction's file
// and missed every change after that union was replaced. A listing once
// begun is kept.
func TestIssue19ProbeDirBesideUndo(t *testing.T) {
	for _, merged := range []bool{false, true} {
		s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS()})
		mustDo(t, err)
		mustDo(t, s.MkdirAll("d", 0o755))
		mustDo(t, s.WriteFile("d/a", nil, 0o644))
		if merged {
			mustDo(t, s.Checkpoint())
			mustDo(t, s.WriteFile("d/b", nil, 0o644))
		}
		list := func(f fs.File, n int) string {
			t.Helper()
			ents, err := f.(fs.ReadDirFile).ReadDir(n)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			return strings.Join(names, " ")
		}
		undone, err := s.Open("d")
		mustDo(t, err)
		begun, err := s.Open("d")
		mustDo(t, err)
		first := list(begun, 1)
		errNo := errors.New("no")
		if err := s.Update(func(tx *packfs.Tx) error {
			mustDo(t, tx.WriteFile("d/undone", nil, 0o644))
			mustDo(t, tx.Rename("d", "moved"))
			return errNo
		}); !errors.Is(err, errNo) {
			t.Fatalf("Update = %v", err)
		}
		mustDo(t, s.WriteFile("d/later", nil, 0o644))
		ckpt, err := s.Open("d")
		mustDo(t, err)
		mustDo(t, s.Checkpoint())
		mustDo(t, s.WriteFile("d/after", nil, 0o644))
		mustDo(t, s.Rename("d", "e"))
		mustDo(t, s.WriteFile("e/renamed", nil, 0o644))
		want := "a after b later renamed"
		if !merged {
			want = "a after later renamed"
		}
		for what, f := range map[string]fs.File{"before an undone transaction": undone, "before a checkpoint": ckpt} {
			if got := list(f, -1); got != want {
				t.Errorf("merged %v: a directory opened %s lists %q, want %q", merged, what, got, want)
			}
			f.Close()
		}
		rest := list(begun, -1)
		if merged && (first != "a" || rest != "b") || !merged && (first != "a" || rest != "") {
			t.Errorf("merged %v: a listing begun before lists %q then %q", merged, first, rest)
		}
		begun.Close()
		mustDo(t, s.Close())
	}
}
