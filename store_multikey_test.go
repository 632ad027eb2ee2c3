package packfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// multiKeyTxs commits txs transactions of 128 new keys each on s, every
// one also overwriting the file "last" with its number, after one
// transaction that writes 64 keys and gives up. acked(i) is called once
// transaction i (from 1) has committed. It returns the first error.
func multiKeyTxs(s *packfs.Store, txs int, acked func(int)) error {
	err := s.Update(func(tx *packfs.Tx) error {
		for k := range 64 {
			if err := tx.WriteFile(fmt.Sprintf("t0-%03d", k), []byte("given up"), 0o644); err != nil {
				return err
			}
		}
		return errTx
	})
	if !errors.Is(err, errTx) {
		return fmt.Errorf("a transaction that gives up: %v", err)
	}
	for t := 1; t <= txs; t++ {
		err := s.Update(func(tx *packfs.Tx) error {
			if err := tx.Mkdir(fmt.Sprintf("t%d", t), 0o755); err != nil {
				return err
			}
			for k := range 128 {
				if err := tx.WriteFile(fmt.Sprintf("t%d/%03d", t, k), multiKeyValue(t, k), 0o644); err != nil {
					return err
				}
			}
			return tx.WriteFile("last", []byte(strconv.Itoa(t)), 0o644)
		})
		if err != nil {
			return err
		}
		acked(t)
	}
	return nil
}

func multiKeyValue(t, k int) []byte { return fmt.Appendf(nil, "tx %d key %d of 128", t, k) }

// checkMultiKey opens the store fsys holds and checks that it holds the
// transactions 1 to j whole, for some j of at least acked, and nothing of
// any other; it returns j.
func checkMultiKey(t *testing.T, fsys vfs.FS, acked int, what string) int {
	t.Helper()
	s, err := packfs.Open("", &packfs.Options{FS: fsys})
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	defer s.Close()
	j := 0
	if b, err := s.ReadFile("last"); err == nil {
		if j, err = strconv.Atoi(string(b)); err != nil {
			t.Fatalf("%s: last holds %q", what, b)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s: %v", what, err)
	}
	if j < acked {
		t.Fatalf("%s: %d transactions recovered, %d were acknowledged", what, j, acked)
	}
	list, err := s.ReadDir(".")
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	dirs := 0
	for _, e := range list {
		switch n := e.Name(); {
		case n == "last":
		case e.IsDir():
			dirs++
			tn, err := strconv.Atoi(n[1:])
			if err != nil || tn < 1 || tn > j {
				t.Fatalf("%s: %s recovered with last = %d", what, n, j)
			}
			keys, err := s.ReadDir(n)
			if err != nil || len(keys) != 128 {
				t.Fatalf("%s: %s holds %d keys, %v", what, n, len(keys), err)
			}
			for k := range 128 {
				b, err := s.ReadFile(fmt.Sprintf("%s/%03d", n, k))
				if err != nil || string(b) != string(multiKeyValue(tn, k)) {
					t.Fatalf("%s: %s/%03d = %q, %v", what, n, k, b, err)
				}
			}
		default:
			t.Fatalf("%s: %s recovered: the transaction that gave up left it", what, n)
		}
	}
	if dirs != j {
		t.Fatalf("%s: %d transactions' directories, last = %d", what, dirs, j)
	}
	return j
}

// TestStoreCrashMidMultiKey crashes the machine at every file-system
// operation of transactions of 128 keys, with torn writes and without,
// with checkpoints running beside the commits (a small CheckpointBytes)
// and without: the reopened store holds a prefix of the transactions,
// each whole, that includes every acknowledged one.
func TestStoreCrashMidMultiKey(t *testing.T) {
	txs, stride := 12, 1
	switch {
	case raceEnabled:
		txs, stride = 4, 7
	case testsize.Short():
		txs, stride = 6, 3
	}
	for _, ck := range []int64{-1, 16 << 10} {
		m := vfstest.NewMemFS()
		s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: ck})
		if err != nil {
			t.Fatal(err)
		}
		if err := multiKeyTxs(s, txs, func(int) {}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if j := checkMultiKey(t, m, txs, "no crash"); j != txs {
			t.Fatalf("%d transactions after a clean run, want %d", j, txs)
		}
		total := m.Count()
		t.Logf("checkpoints at %d bytes: %d file-system operations", ck, total)
		for _, keep := range []float64{0, 0.5, 0.9} {
			t.Run(fmt.Sprintf("checkpoint%d/keep%.0f%%", ck, keep*100), func(t *testing.T) {
				t.Parallel()
				for k := 0; k <= total; k += stride {
					m := vfstest.NewMemFS()
					m.CrashAt(k)
					acked := 0
					if s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: ck}); err == nil {
						multiKeyTxs(s, txs, func(i int) { acked = i })
						s.Close()
					}
					rec := m.Recover(vfstest.Torn{Keep: keep, Names: k%2 == 1, Rand: rand.New(rand.NewPCG(uint64(k), 7))})
					checkMultiKey(t, rec, acked, fmt.Sprintf("crash at %d of %d", k, total))
				}
			})
		}
	}
}

// TestStoreCommittersAndReaders: eight committers commit transactions of
// 128 keys (each into a directory of its own, and each overwriting the
// committer's 16 shared keys with its number) while readers look on,
// each read through the store itself and through snapshots: a listing
// of a transaction's directory has all its keys or none, a snapshot's
// 16 shared keys of a committer hold one transaction's number, and the
// numbers never go back. Then the store reopens to the same tree.
func TestStoreCommittersAndReaders(t *testing.T) {
	const committers, readers = 8, 3
	txs := 24
	if testsize.Short() || raceEnabled {
		txs = 6
	}
	dir := t.TempDir()
	s, err := packfs.Open(dir, &packfs.Options{CheckpointBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg, rg sync.WaitGroup
	errs := make(chan error, committers+readers)
	for w := range committers {
		if err := s.Mkdir(fmt.Sprintf("c%d", w), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for w := range committers {
		wg.Go(func() {
			for i := 1; i <= txs; i++ {
				err := s.Update(func(tx *packfs.Tx) error {
					d := fmt.Sprintf("c%d/t%d", w, i)
					if err := tx.Mkdir(d, 0o755); err != nil {
						return err
					}
					for k := range 128 {
						if err := tx.WriteFile(fmt.Sprintf("%s/%03d", d, k), multiKeyValue(i, k), 0o644); err != nil {
							return err
						}
					}
					for k := range 16 {
						if err := tx.WriteFile(fmt.Sprintf("c%d/s%02d", w, k), []byte(strconv.Itoa(i)), 0o644); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for r := range readers {
		rg.Go(func() {
			seen := make([]int, committers)
			rnd := rand.New(rand.NewPCG(uint64(r), 3))
			for n := 0; !stop.Load() || n < 10; n++ {
				w := rnd.IntN(committers)
				i := 1 + rnd.IntN(txs)
				// A listing through the store: all of a transaction or none.
				if list, err := s.ReadDir(fmt.Sprintf("c%d/t%d", w, i)); err == nil && len(list) != 128 {
					errs <- fmt.Errorf("c%d/t%d lists %d keys", w, i, len(list))
					return
				} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs <- err
					return
				}
				// A snapshot: one transaction's shared keys, its directory
				// whole, and no going back.
				snap, err := s.Snapshot()
				if err != nil {
					errs <- err
					return
				}
				v := -1
				for k := range 16 {
					b, err := fs.ReadFile(snap, fmt.Sprintf("c%d/s%02d", w, k))
					got := 0
					if err == nil {
						got, _ = strconv.Atoi(string(b))
					} else if !errors.Is(err, fs.ErrNotExist) {
						errs <- err
						return
					}
					if v >= 0 && got != v {
						errs <- fmt.Errorf("a snapshot of c%d's shared keys holds transactions %d and %d", w, v, got)
						return
					}
					v = got
				}
				if v < seen[w] {
					errs <- fmt.Errorf("c%d's shared keys went back from %d to %d", w, seen[w], v)
					return
				}
				seen[w] = v
				if v > 0 {
					if list, err := fs.ReadDir(snap, fmt.Sprintf("c%d/t%d", w, v)); err != nil || len(list) != 128 {
						errs <- fmt.Errorf("a snapshot with c%d's shared keys at %d lists %d keys of c%d/t%d, %v", w, v, len(list), w, v, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := dump(t, s, false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = packfs.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := dump(t, s, false); got != want {
		t.Fatalf("reopened, the store holds another tree")
	}
}

// TestStoreGroupCommit: one committer's transactions take one fdatasync
// each; eight committers' share them, and every commit is there after a
// reopen.
func TestStoreGroupCommit(t *testing.T) {
	for _, committers := range []int{1, 8} {
		m := vfstest.NewMemFS()
		m.SyncDelay = 200 * time.Microsecond
		s, err := packfs.Open("", &packfs.Options{FS: m, CheckpointBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		const each = 40
		before := countSyncs(m)
		var wg sync.WaitGroup
		for w := range committers {
			wg.Go(func() {
				for i := range each {
					err := s.Update(func(tx *packfs.Tx) error {
						return tx.WriteFile(fmt.Sprintf("c%d-%d", w, i), []byte("x"), 0o644)
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		syncs := countSyncs(m) - before
		t.Logf("%d committers: %d commits, %d fdatasyncs", committers, committers*each, syncs)
		switch {
		case committers == 1 && syncs != each:
			t.Errorf("one committer: %d fdatasyncs for %d commits", syncs, each)
		case committers > 1 && syncs > committers*each/2:
			t.Errorf("%d committers: %d fdatasyncs for %d commits", committers, syncs, committers*each)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = packfs.Open("", &packfs.Options{FS: m.Recover(vfstest.Torn{})})
		if err != nil {
			t.Fatal(err)
		}
		for w := range committers {
			for i := range each {
				if _, err := s.Stat(fmt.Sprintf("c%d-%d", w, i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		s.Close()
	}
}

func countSyncs(m *vfstest.MemFS) int {
	n := 0
	for _, op := range m.Ops() {
		if strings.HasPrefix(op, "sync wal-") {
			n++
		}
	}
	return n
}
