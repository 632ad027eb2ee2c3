package packfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// crashWorkload runs a fixed, pseudo-random workload of at least 1,000
// changes on s: single changes, transactions of 2 to 8 (some failing on
// purpose, which must leave nothing), writes through open files,
// checkpoints and flattens, some while files are open for writing, and
// renames of names onto themselves, directly and through symlinks (self
// -> ".", ld -> "d"). After each unit that can reach the log (a
// change or a transaction) it calls unit(); after each point that
// acknowledges durability (Sync, a committed transaction, Close of the
// store) it calls ack(). It stops at the first error that the workload did
// not ask for, and returns it.
func crashWorkload(s *packfs.Store, unit, ack func()) error {
	r := rand.New(rand.NewPCG(42, 42))
	name := func() string {
		dirs := []string{"", "d/", "d/e/", "f/"}
		return fmt.Sprintf("%sn%d", dirs[r.IntN(len(dirs))], r.IntN(12))
	}
	// expected tells apart the errors the workload provokes (a name that
	// does not exist, a directory that is not empty) from a failure of
	// the store's disk.
	expected := func(err error) bool { return !diskFailure(err) }
	type change func(w writer) error
	pick := func() change {
		n, m := name(), name()
		data := []byte(strings.Repeat(n, 1+r.IntN(40)))
		switch r.IntN(10) {
		case 8: // onto itself, by the same name or an alias
			alias := []string{n, "self/" + n, "self/self/" + n}[r.IntN(3)]
			return func(w writer) error { return w.Rename(n, alias) }
		case 9: // through a symlink to a directory
			base := n[strings.LastIndexByte(n, '/')+1:]
			return func(w writer) error { return w.Rename("ld/"+base, []string{"d/" + base, "ld/" + base, m}[r.IntN(3)]) }
		case 0:
			return func(w writer) error { return w.Mkdir(n, 0o755) }
		case 1:
			return func(w writer) error { return w.Remove(n) }
		case 2:
			return func(w writer) error { return w.Rename(n, m) }
		case 3:
			return func(w writer) error { return w.Symlink(m, n) }
		case 4:
			return func(w writer) error { return w.RemoveAll(n) }
		default:
			return func(w writer) error { return w.WriteFile(n, data, 0o644) }
		}
	}
	ops := 0
	for _, d := range []string{"d", "d/e", "f"} {
		if err := s.Mkdir(d, 0o755); err != nil {
			return err
		}
		unit()
		ops++
	}
	for _, l := range [][2]string{{".", "self"}, {"d", "ld"}} {
		if err := s.Symlink(l[0], l[1]); err != nil {
			return err
		}
		unit()
		ops++
	}
	for i := 0; ops < 1000; i++ {
		switch k := r.IntN(20); {
		case k < 8: // a single change
			err := pick()(s)
			if !expected(err) {
				return err
			}
			unit()
			ops++
		case k < 16: // a transaction
			changes := make([]change, 2+r.IntN(7))
			for j := range changes {
				changes[j] = pick()
			}
			fail := r.IntN(5) == 0
			err := s.Update(func(tx *packfs.Tx) error {
				for _, c := range changes {
					if err := c(tx); !expected(err) {
						return err
					}
				}
				if fail {
					return errTx
				}
				return nil
			})
			ops += len(changes)
			if err != nil && !errors.Is(err, errTx) {
				return err
			}
			if err == nil {
				unit()
				ack()
			}
		case k < 18: // writes through an open file
			n := name()
			f, err := s.OpenFile(n, os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				if !expected(err) {
					return err
				}
				break
			}
			unit()
			for j := range 1 + r.IntN(3) {
				if _, err := f.Write([]byte(fmt.Sprintf("<%d.%d>", i, j))); err != nil {
					f.Close()
					return err
				}
				unit()
				ops++
				// Between writes: the open file renamed onto itself, or
				// the store checkpointed or flattened under it.
				var err error
				switch r.IntN(24) {
				case 0, 1, 2:
					if err = s.Rename(n, "self/"+n); !expected(err) {
						break
					}
					unit()
					ops++
					err = nil
				case 3:
					err = s.Flatten()
				case 4:
					err = s.Checkpoint()
				}
				if err != nil {
					f.Close()
					return err
				}
			}
			if r.IntN(2) == 0 {
				if err := f.Truncate(int64(r.IntN(8))); err != nil {
					f.Close()
					return err
				}
				unit()
				ops++
			}
			err = f.Sync()
			f.Close()
			if err != nil {
				return err
			}
			ack()
		case k < 19:
			if err := s.Sync(); err != nil {
				return err
			}
			ack()
		default:
			var err error
			if i%7 == 0 {
				err = s.Flatten()
			} else {
				err = s.Checkpoint()
			}
			if err != nil {
				return err
			}
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	ack()
	return nil
}

var errTx = errors.New("the transaction gives up")

// diskFailure reports whether err comes from the store's disk failing
// (a crash, an injected fault, or the sticky error either leaves), rather
// than from what the workload asked.
func diskFailure(err error) bool {
	return errors.Is(err, vfstest.ErrCrashed) || errors.Is(err, syscall.EIO) || errors.Is(err, fs.ErrClosed)
}

// writer is what the workload changes: a Store or a Tx.
type writer interface {
	Mkdir(string, fs.FileMode) error
	Remove(string) error
	RemoveAll(string) error
	Rename(string, string) error
	Symlink(string, string) error
	WriteFile(string, []byte, fs.FileMode) error
}

// states runs the workload without a crash and returns the tree after
// each unit (mtimes left out: they depend on the clock), and the number
// of file-system operations it made.
func states(t *testing.T) (map[string][]int, int) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]int{}
	n := 0
	record := func() {
		d := dump(t, s, false)
		seen[d] = append(seen[d], n)
		n++
	}
	record()
	if err := crashWorkload(s, record, func() {}); err != nil {
		t.Fatal(err)
	}
	return seen, m.Count()
}

// TestStoreCrashEveryOperation crashes the machine at every file-system
// operation of the workload, with and without torn writes, and checks
// that the reopened store holds exactly the state after some prefix of
// the units, a prefix that includes every acknowledged one.
func TestStoreCrashEveryOperation(t *testing.T) {
	seen, total := states(t)
	t.Logf("%d distinct states, %d file-system operations", len(seen), total)
	stride := 1
	switch {
	case testsize.Short():
		stride = 41
	case raceEnabled:
		stride = 17
	}
	for _, keep := range []float64{0, 0.1, 0.5, 0.9} {
		t.Run(fmt.Sprintf("keep%.0f%%", keep*100), func(t *testing.T) {
			t.Parallel()
			for k := 0; k <= total; k += stride {
				m := vfstest.NewMemFS()
				m.CrashAt(k)
				units, acked := 0, 0
				if s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1}); err == nil {
					crashWorkload(s, func() { units++ }, func() { acked = units })
				}
				rec := m.Recover(vfstest.Torn{Keep: keep, Names: k%2 == 1, Rand: rand.New(rand.NewPCG(uint64(k), 9))})
				checkRecovered(t, rec, seen, acked, fmt.Sprintf("crash at %d of %d", k, total))
			}
		})
	}
}

// checkRecovered opens the store fsys holds and checks its tree is the
// state after some prefix of at least acked units (units count from 1;
// the empty store is state 0).
func checkRecovered(t *testing.T, fsys vfs.FS, seen map[string][]int, acked int, what string) {
	t.Helper()
	s, err := packfs.Open("", &packfs.Options{FS: fsys})
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	got := dump(t, s, false)
	at, ok := seen[got]
	if !ok {
		t.Fatalf("%s: the recovered tree is no state of the workload:\n%s", what, got)
	}
	if at[len(at)-1] < acked {
		t.Fatalf("%s: recovered state %v, but %d units were acknowledged", what, at, acked)
	}
	// The store goes on after recovery.
	if err := s.WriteFile("after-crash", []byte("x"), 0o644); err != nil {
		t.Fatalf("%s: write after recovery: %v", what, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("%s: close after recovery: %v", what, err)
	}
}

// TestStoreFaultEveryOperation makes each file-system operation of the
// workload fail in turn: no panic, the error reaches the caller, and the
// store reopens to a state that holds every acknowledged unit.
func TestStoreFaultEveryOperation(t *testing.T) {
	seen, total := states(t)
	stride := 1
	switch {
	case testsize.Short():
		stride = 29
	case raceEnabled:
		stride = 11
	}
	surfaced := 0
	for k := 0; k < total; k += stride {
		m := vfstest.NewMemFS()
		f := vfstest.NewFaulty(m, k)
		units, acked := 0, 0
		s, err := packfs.Open("", &packfs.Options{FS: f, CheckpointBytes: -1})
		if err == nil {
			err = crashWorkload(s, func() { units++ }, func() { acked = units })
			if err != nil {
				s.Close()
			}
		}
		switch {
		case f.Failed() && err == nil:
			// The failing operation was one whose failure the store may
			// absorb: removing a file no longer needed.
		case f.Failed() && !errors.Is(err, vfstest.ErrInjected):
			t.Fatalf("fault at %d: the error %v does not wrap the injected one", k, err)
		case err != nil:
			surfaced++
		}
		checkRecovered(t, m.Recover(vfstest.Torn{}), seen, acked, fmt.Sprintf("fault at %d", k))
	}
	t.Logf("%d faults surfaced as errors", surfaced)
}

// TestStoreDirectorySyncs checks, on the recorded operations of the
// workload, that every segment, pack and manifest is named durably (a
// directory fsync) before anything relies on it.
func TestStoreDirectorySyncs(t *testing.T) {
	m := vfstest.NewMemFS()
	s, err := packfs.Open("", &packfs.Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := crashWorkload(s, func() {}, func() {}); err != nil {
		t.Fatal(err)
	}
	ops := m.Ops()
	// pending names a new name and what must not happen before the
	// directory fsync that makes it durable.
	pending := map[string]func(op string) bool{}
	checked := 0
	for i, op := range ops {
		if op == "syncdir" {
			checked += len(pending)
			clear(pending)
			continue
		}
		for name, forbidden := range pending {
			if forbidden(op) {
				t.Fatalf("op %d %q before the directory fsync that makes %s durable; ops:\n%s", i, op, name, strings.Join(ops[max(0, i-10):i+1], "\n"))
			}
		}
		f := strings.Fields(op)
		switch {
		case f[0] == "create" && strings.HasPrefix(f[1], "wal-"):
			// Records go into a segment only once its name is durable:
			// the first write is its header.
			seg, writes := f[1], 0
			pending[seg] = func(op string) bool {
				if strings.HasPrefix(op, "write "+seg+" ") {
					writes++
				}
				return writes > 1
			}
		case f[0] == "rename" && strings.HasPrefix(f[2], "pack-"):
			pending[f[2]] = func(op string) bool {
				return strings.HasPrefix(op, "create MANIFEST") || strings.HasPrefix(op, "open MANIFEST")
			}
		case f[0] == "rename" && f[2] == "MANIFEST":
			pending[f[2]] = func(op string) bool { return strings.HasPrefix(op, "remove ") || strings.HasPrefix(op, "write wal-") }
		}
	}
	if checked == 0 {
		t.Fatal("no creation or rename was checked")
	}
	t.Logf("%d operations, %d new names checked", len(ops), checked)
}
