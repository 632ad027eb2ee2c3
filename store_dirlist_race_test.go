package packfs_test

import (
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
)

// dirLister is what TestDirListingRacedByRenames runs over: the store,
// or a union without one.
type dirLister interface {
	Open(name string) (fs.File, error)
	Rename(oldname, newname string) error
	WriteFile(name string, data []byte, perm fs.FileMode) error
	MkdirAll(name string, perm fs.FileMode) error
}

// TestDirListingRacedByRenames: a directory that opened must list, as
// an open directory does on Linux whatever is renamed meanwhile, itself
// included. Goroutines open d1 and d2 and list them while the writer
// renames d1 into d2 and back, moves d2 below d1 and back in a
// transaction (committed or undone), and renames fresh files over d1/a.
// With transactions undone beside them, a listing of the store failed
// with ENOENT or ENOTDIR, a few in tens of thousands: an undone
// transaction leaves the state before it as a lower layer, and a union's
// first listing of a directory walked its path while a rename of a lower
// directory was half made. The union over a lower layer shows it alone.
func TestDirListingRacedByRenames(t *testing.T) {
	dur := 2 * time.Second
	if testsize.Short() {
		dur = 300 * time.Millisecond
	}
	t.Run("store, transactions undone", func(t *testing.T) {
		s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
		mustDo(t, err)
		defer s.Close()
		dirListingRaced(t, s, dur, func(n int) {
			s.Update(func(tx *packfs.Tx) error {
				tx.Rename("d2", "d1/sub/y")
				tx.Rename("d1/sub/y", "d2")
				if n%2 == 0 {
					return errUndoTx
				}
				return nil
			})
		})
	})
	t.Run("store without transactions", func(t *testing.T) {
		s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
		mustDo(t, err)
		defer s.Close()
		dirListingRaced(t, s, dur, func(int) {
			s.Rename("d2", "d1/sub/y")
			s.Rename("d1/sub/y", "d2")
		})
	})
	t.Run("store, transactions committed", func(t *testing.T) {
		s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
		mustDo(t, err)
		defer s.Close()
		dirListingRaced(t, s, dur, func(n int) {
			s.Update(func(tx *packfs.Tx) error {
				tx.Rename("d2", "d1/sub/y")
				return tx.Rename("d1/sub/y", "d2")
			})
		})
	})
	t.Run("union over a lower layer", func(t *testing.T) {
		// The directories are the lower layer's: a rename copies them up
		// and leaves whiteouts, in steps a walk beside it may meet.
		low := mem.New()
		mustDo(t, low.MkdirAll("d1/sub", 0o755))
		mustDo(t, low.MkdirAll("d2", 0o755))
		u := packfs.New(mem.New(), low.Snapshot())
		dirListingRaced(t, u, dur, func(int) {
			u.Rename("d2", "d1/sub/y")
			u.Rename("d1/sub/y", "d2")
		})
	})
	t.Run("union", func(t *testing.T) {
		u := packfs.New(mem.New())
		dirListingRaced(t, u, dur, func(int) {
			u.Rename("d2", "d1/sub/y")
			u.Rename("d1/sub/y", "d2")
		})
	})
}

func dirListingRaced(t *testing.T, s dirLister, dur time.Duration, moveD2 func(n int)) {
	mustDo(t, s.MkdirAll("d1/sub", 0o755))
	mustDo(t, s.MkdirAll("d2", 0o755))
	for _, f := range []string{"d1/a", "d1/b", "d2/a", "d2/b"} {
		mustDo(t, s.WriteFile(f, []byte("x"), 0o644))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad, listed atomic.Int64
	var first atomic.Value
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				d := []string{"d1", "d2"}[i%2]
				f, err := s.Open(d)
				if err != nil {
					continue // renamed away
				}
				listed.Add(1)
				if _, err := f.(fs.ReadDirFile).ReadDir(-1); err != nil {
					bad.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
				f.Close()
			}
		}()
	}
	deadline := time.Now().Add(dur)
	tmp := 0
	for n := 0; time.Now().Before(deadline); n++ {
		switch n % 3 {
		case 0:
			if err := s.Rename("d1", "d2/x"); err == nil {
				s.Rename("d2/x", "d2/x")
				s.Rename("d2/x", "d1")
			}
		case 1:
			moveD2(n)
		case 2:
			tmp++
			nm := fmt.Sprintf("t%d", tmp)
			s.WriteFile(nm, make([]byte, 3000), 0o644)
			s.Rename(nm, "d1/a")
		}
	}
	close(stop)
	wg.Wait()
	if bad.Load() > 0 {
		t.Errorf("%d of %d listings of an open directory failed; the first: %v", bad.Load(), listed.Load(), first.Load())
	}
}
