package packfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// probeDirs returns a directory on each kind of disk the machine has for
// tests: t.TempDir, and one under /dev/shm (tmpfs) where there is one.
func probeDirs(t *testing.T) map[string]string {
	dirs := map[string]string{"tempdir": t.TempDir()}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "packfs-probe-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dirs["shm"] = d
		}
	}
	return dirs
}

// settleGoroutines fails t unless the goroutines come back to base
// within 20 s.
func settleGoroutines(t *testing.T, base int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); runtime.NumGoroutine() > base; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
	}
}

// waitAll waits for wg, or fails t with every goroutine's stack once 60 s
// have passed: a hang.
func waitAll(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("%s: hung:\n%s", what, buf[:runtime.Stack(buf, true)])
	}
}

// TestProbeGroupCommitMixed: sixteen durable committers under SyncAlways
// at once, on ext4 and on tmpfs, each mixing writes that succeed, writes
// that fail before they are logged (into a missing directory),
// transactions that commit, transactions that fail, and Sync: every
// change acknowledged is there, now and after a reopen, every one that
// failed is not, and no goroutine outlives Close.
func TestProbeGroupCommitMixed(t *testing.T) {
	committers, each := 16, 12
	if !testsize.Short() && !raceEnabled { // full size, but not under the race detector (10x)
		committers, each = 32, 60
	}
	for kind, dir := range probeDirs(t) {
		base := runtime.NumGoroutine()
		s, err := packfs.Open(dir+"/store", &packfs.Options{Sync: packfs.SyncAlways})
		mustDo(t, err)
		acked := make([][]bool, committers)
		var wg sync.WaitGroup
		for g := range committers {
			acked[g] = make([]bool, each)
			wg.Go(func() {
				for i := range each {
					name := fmt.Sprintf("g%02d-%03d", g, i)
					var err error
					switch i % 5 {
					case 0, 1:
						err = s.WriteFile(name, []byte(name), 0o644)
					case 2:
						err = s.Update(func(tx *packfs.Tx) error {
							if err := tx.WriteFile(name, []byte(name), 0o644); err != nil {
								return err
							}
							return tx.WriteFile(name+".b", []byte(name), 0o644)
						})
					case 3:
						if werr := s.WriteFile("missing/"+name, nil, 0o644); !errors.Is(werr, fs.ErrNotExist) {
							t.Errorf("%s: write into a missing directory: %v", kind, werr)
						}
						uerr := s.Update(func(tx *packfs.Tx) error {
							if err := tx.WriteFile(name, []byte("lost"), 0o644); err != nil {
								return err
							}
							return errors.New("no")
						})
						if uerr == nil {
							t.Errorf("%s: a failed transaction committed", kind)
						}
						err = errors.New("failed on purpose")
					case 4:
						err = s.WriteFile(name, []byte(name), 0o644)
						if serr := s.Sync(); serr != nil {
							t.Errorf("%s: Sync: %v", kind, serr)
						}
					}
					acked[g][i] = err == nil
				}
			})
		}
		waitAll(t, &wg, kind+": committers")
		check := func(when string, s *packfs.Store) {
			for g := range committers {
				for i := range each {
					name := fmt.Sprintf("g%02d-%03d", g, i)
					b, err := s.ReadFile(name)
					switch {
					case acked[g][i] && (err != nil || string(b) != name):
						t.Errorf("%s %s: %s acknowledged, reads %q, %v", kind, when, name, b, err)
					case !acked[g][i] && !errors.Is(err, fs.ErrNotExist):
						t.Errorf("%s %s: %s failed, reads %q, %v", kind, when, name, b, err)
					}
					if i%5 == 2 && acked[g][i] {
						if _, err := s.Stat(name + ".b"); err != nil {
							t.Errorf("%s %s: half a transaction: %v", kind, when, err)
						}
					}
				}
			}
		}
		check("now", s)
		mustDo(t, s.Close())
		settleGoroutines(t, base)
		s, err = packfs.Open(dir+"/store", &packfs.Options{Sync: packfs.SyncAlways})
		mustDo(t, err)
		check("reopened", s)
		mustDo(t, s.Close())
		settleGoroutines(t, base)
	}
}

// TestProbeGroupCommitClose: Close of a SyncAlways store while durable
// committers keep committing (and so wait in the group commit): Close
// returns, every committer returns, each change acknowledged is there
// after a reopen, every call after Close fails with fs.ErrClosed, and
// no goroutine outlives it.
func TestProbeGroupCommitClose(t *testing.T) {
	rounds := 4
	if !testsize.Short() && !raceEnabled { // full size, but not under the race detector (10x)
		rounds = 30
	}
	for kind, dir := range probeDirs(t) {
		for round := range rounds {
			base := runtime.NumGoroutine()
			path := fmt.Sprintf("%s/store%d", dir, round)
			s, err := packfs.Open(path, &packfs.Options{Sync: packfs.SyncAlways, CheckpointBytes: 1 << 16})
			mustDo(t, err)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var acked []string
			var started atomic.Int64
			var closed atomic.Bool
			for g := range 8 {
				wg.Go(func() {
					for i := 0; ; i++ {
						name := fmt.Sprintf("g%d-%d", g, i)
						wasClosed := closed.Load()
						var err error
						if i%3 == 2 {
							err = s.Update(func(tx *packfs.Tx) error { return tx.WriteFile(name, []byte(name), 0o644) })
						} else {
							err = s.WriteFile(name, []byte(name), 0o644)
						}
						started.Add(1)
						if err == nil {
							if wasClosed {
								t.Errorf("%s: %s acknowledged after Close returned", kind, name)
							}
							mu.Lock()
							acked = append(acked, name)
							mu.Unlock()
							continue
						}
						if !errors.Is(err, fs.ErrClosed) {
							t.Errorf("%s: %s: %v", kind, name, err)
						}
						return
					}
				})
			}
			for started.Load() < int64(8*(1+round%4)) {
				runtime.Gosched()
			}
			cerr := s.Close()
			closed.Store(true)
			mustDo(t, cerr)
			waitAll(t, &wg, kind+": committers after Close")
			if err := s.WriteFile("late", nil, 0o644); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("%s: write after Close: %v", kind, err)
			}
			if err := s.Sync(); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("%s: Sync after Close: %v", kind, err)
			}
			settleGoroutines(t, base)
			s, err = packfs.Open(path, nil)
			mustDo(t, err)
			for _, name := range acked {
				if b, err := s.ReadFile(name); err != nil || string(b) != name {
					t.Errorf("%s round %d: %s acknowledged, reads %q, %v after a reopen", kind, round, name, b, err)
				}
			}
			mustDo(t, s.Close())
		}
	}
}

// TestProbeGroupCommitCrash: eight durable committers under SyncAlways at
// once on a disk that crashes at operation k (every one from then on
// fails), or fails operation k alone, for k across the run: every
// committer returns, and every change
// acknowledged is in the store that a power cut at that moment leaves,
// a transaction's two files both or neither.
func TestProbeGroupCommitCrash(t *testing.T) {
	const committers, each = 8, 6
	run := func(d vfs.FS) ([][]bool, error) {
		s, err := packfs.Open("", &packfs.Options{FS: d, Sync: packfs.SyncAlways, CheckpointBytes: 1 << 12})
		if err != nil {
			return nil, err
		}
		acked := make([][]bool, committers)
		var wg sync.WaitGroup
		for g := range committers {
			acked[g] = make([]bool, each)
			wg.Go(func() {
				for i := range each {
					name := fmt.Sprintf("g%d-%d", g, i)
					var err error
					if i%2 == 1 {
						err = s.Update(func(tx *packfs.Tx) error {
							if err := tx.WriteFile(name, []byte(name), 0o644); err != nil {
								return err
							}
							return tx.WriteFile(name+".b", []byte(name), 0o644)
						})
					} else {
						err = s.WriteFile(name, []byte(name), 0o644)
					}
					acked[g][i] = err == nil
				}
			})
		}
		waitAll(t, &wg, "committers")
		s.Close()
		return acked, nil
	}
	m := vfstest.NewMemFS()
	if _, err := run(m); err != nil {
		t.Fatal(err)
	}
	total := m.Count()
	stride := max(1, total/40)
	if !testsize.Short() && !raceEnabled { // full size, but not under the race detector (10x)
		stride = 1
	}
	for k := 0; k < 2*total; k += stride {
		m := vfstest.NewMemFS()
		var d vfs.FS = m
		what := "crash"
		if k < total {
			m.CrashAt(k)
		} else {
			// One operation fails, a write or a sync of the log, say;
			// the store fails from then on.
			what = "fault"
			d = vfstest.NewFaulty(m, k-total)
		}
		acked, err := run(d)
		if err != nil {
			continue // failed before the store opened
		}
		s, err := packfs.Open("", &packfs.Options{FS: m.Recover(vfstest.Torn{})})
		if err != nil {
			t.Fatalf("%s at %d of %d: reopen: %v", what, k%total, total, err)
		}
		for g := range committers {
			for i := range each {
				name := fmt.Sprintf("g%d-%d", g, i)
				b, err := s.ReadFile(name)
				if acked[g][i] && (err != nil || string(b) != name) {
					t.Errorf("%s at %d of %d: %s acknowledged, reads %q, %v", what, k%total, total, name, b, err)
				}
				if i%2 == 1 {
					_, berr := s.Stat(name + ".b")
					if (err == nil) != (berr == nil) {
						t.Errorf("%s at %d of %d: half of transaction %s: %v, %v", what, k%total, total, name, err, berr)
					}
				}
			}
		}
		mustDo(t, s.Close())
	}
}

// TestProbeGroupCommitHandles: sixty-four durable committers under
// SyncAlways at once, more than the group commit's sleepers, each writing
// through a file of its own kept open, on ext4 and on tmpfs; then the
// store is closed with the files open: every write acknowledged is in
// the file after a reopen, writes after Close fail with fs.ErrClosed, and
// no goroutine outlives Close.
func TestProbeGroupCommitHandles(t *testing.T) {
	const committers = 64
	each := 4
	if !testsize.Short() && !raceEnabled { // full size, but not under the race detector (10x)
		each = 40
	}
	for kind, dir := range probeDirs(t) {
		base := runtime.NumGoroutine()
		s, err := packfs.Open(dir+"/store", &packfs.Options{Sync: packfs.SyncAlways})
		mustDo(t, err)
		files := make([]interface {
			Write([]byte) (int, error)
			Close() error
		}, committers)
		for g := range files {
			f, err := s.Create(fmt.Sprintf("h%02d", g))
			mustDo(t, err)
			files[g] = f
		}
		written := make([]int, committers)
		var wg sync.WaitGroup
		for g := range committers {
			wg.Go(func() {
				for i := range each {
					n, err := files[g].Write([]byte(fmt.Sprintf("%02d:%03d;", g, i)))
					written[g] += n
					if err != nil {
						t.Errorf("%s: write %d of h%02d: %v", kind, i, g, err)
						return
					}
				}
			})
		}
		waitAll(t, &wg, kind+": committers")
		mustDo(t, s.Close())
		for g, f := range files {
			if _, err := f.Write([]byte("late")); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("%s: write to h%02d after Close: %v", kind, g, err)
			}
			f.Close()
		}
		settleGoroutines(t, base)
		s, err = packfs.Open(dir+"/store", nil)
		mustDo(t, err)
		for g := range committers {
			var want []byte
			for i := range each {
				want = fmt.Appendf(want, "%02d:%03d;", g, i)
			}
			b, err := s.ReadFile(fmt.Sprintf("h%02d", g))
			if err != nil || string(b) != string(want) || written[g] != len(want) {
				t.Errorf("%s: h%02d = %q, %v; want %q", kind, g, b, err, want)
			}
		}
		mustDo(t, s.Close())
		settleGoroutines(t, base)
	}
}

// TestProbeDirHandleAfterChanges: a directory of 3 or 100 entries (the
// second large enough for lookups to index it) opened, then changed
// before its first ReadDir (entries removed and renamed in, or the
// whole directory removed by RemoveAll), on the store and on os: the
// handle's ReadDir and Stat give what os gives, entry for entry.
func TestProbeDirHandleAfterChanges(t *testing.T) {
	type changer interface {
		Mkdir(string, fs.FileMode) error
		WriteFile(string, []byte, fs.FileMode) error
		Remove(string) error
		RemoveAll(string) error
		Rename(string, string) error
		Open(string) (fs.File, error)
		Stat(string) (fs.FileInfo, error)
	}
	base := t.TempDir()
	s, err := packfs.Open(base+"/store", nil)
	mustDo(t, err)
	defer s.Close()
	host := base + "/os"
	mustDo(t, os.Mkdir(host, 0o755))
	osys := osChanger{host}
	for _, n := range []int{3, 100} {
		for _, whole := range []bool{false, true} {
			var results []string
			for _, c := range []changer{osys, s} {
				d := fmt.Sprintf("d%d-%v", n, whole)
				mustDo(t, c.Mkdir(d, 0o755))
				for i := range n {
					mustDo(t, c.WriteFile(fmt.Sprintf("%s/f%03d", d, i), nil, 0o644))
				}
				mustDo(t, c.WriteFile(d+".in", nil, 0o644))
				// A lookup, which indexes a large directory.
				if _, err := c.Stat(d + "/f001"); err != nil {
					t.Fatal(err)
				}
				h, err := c.Open(d)
				mustDo(t, err)
				if whole {
					mustDo(t, c.RemoveAll(d))
				} else {
					for i := 0; i < n; i += 2 {
						mustDo(t, c.Remove(fmt.Sprintf("%s/f%03d", d, i)))
					}
					mustDo(t, c.Rename(d+".in", d+"/in"))
				}
				ents, err := h.(fs.ReadDirFile).ReadDir(-1)
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				slices.Sort(names)
				_, serr := h.Stat()
				class := "nil"
				if errors.Is(err, fs.ErrNotExist) {
					class = "ENOENT"
				} else if err != nil {
					class = err.Error()
				}
				results = append(results, fmt.Sprintf("%v, %s; stat ok %v", names, class, serr == nil))
				h.Close()
			}
			if results[0] != results[1] {
				t.Errorf("n %d, whole %v:\n os    %s\n store %s", n, whole, results[0], results[1])
			}
		}
	}
}

// osChanger is a directory of the host, changed through package os.
type osChanger struct{ dir string }

func (o osChanger) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(o.dir+"/"+name, perm) }
func (o osChanger) WriteFile(name string, b []byte, perm fs.FileMode) error {
	return os.WriteFile(o.dir+"/"+name, b, perm)
}
func (o osChanger) Remove(name string) error          { return os.Remove(o.dir + "/" + name) }
func (o osChanger) RemoveAll(name string) error       { return os.RemoveAll(o.dir + "/" + name) }
func (o osChanger) Rename(a, b string) error          { return os.Rename(o.dir+"/"+a, o.dir+"/"+b) }
func (o osChanger) Open(name string) (fs.File, error) { return os.Open(o.dir + "/" + name) }
func (o osChanger) Stat(name string) (fs.FileInfo, error) {
	return os.Stat(o.dir + "/" + name)
}
