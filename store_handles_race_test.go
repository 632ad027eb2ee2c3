package packfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
)

// TestStoreHandlesConcurrent: goroutines open files of a store (for
// reading, for writing, O_APPEND, directories to list), read and write
// them and close them, some twice, some from another goroutine than the
// one that opened them, several goroutines closing the same file at
// once; beside them files are renamed over (a fresh file each time,
// never written in place), directories renamed back and forth and onto
// themselves, checkpoints and transactions run, committed or undone.
// Every file holds one byte value of its own, and a handle writes only
// that value: a read that finds another value has reached another file.
// A closed handle must fail with fs.ErrClosed; after Store.Close, every
// handle still open must too.
func TestStoreHandlesConcurrent(t *testing.T) {
	dur := 2 * time.Second
	if testsize.Short() {
		dur = 300 * time.Millisecond
	}
	s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: 64 << 10, MaxPacks: 3})
	mustDo(t, err)
	var next atomic.Int32
	fresh := func() []byte {
		v := byte('A' + next.Add(1)%200)
		return []byte{v, v, v, v}
	}
	dirs := []string{"d1", "d2"}
	var files []string
	for _, d := range dirs {
		mustDo(t, s.Mkdir(d, 0o755))
		for _, f := range []string{"a", "b", "c"} {
			n := d + "/" + f
			files = append(files, n)
			mustDo(t, s.WriteFile(n, fresh(), 0o644))
		}
	}
	mustDo(t, s.Mkdir("d1/sub", 0o755))

	var failed atomic.Value
	fail := func(format string, args ...any) { failed.CompareAndSwap(nil, fmt.Sprintf(format, args...)) }
	stop := make(chan struct{})
	var wg sync.WaitGroup

	// checkSame reads f whole and reports a byte other than v.
	checkSame := func(f layer.File, v byte, what string) {
		b := make([]byte, 4096)
		n, err := f.ReadAt(b, 0)
		if err != nil && err != io.EOF {
			if !errors.Is(err, fs.ErrClosed) {
				fail("%s: ReadAt: %v", what, err)
			}
			return
		}
		for _, c := range b[:n] {
			if c != v {
				fail("%s: holds %q, a byte of another file (its own: %q)", what, b[:n], v)
				return
			}
		}
	}

	// handed are files opened by one goroutine for others to close.
	handed := make(chan layer.File, 64)
	var stillOpen sync.Map // layer.File -> struct{}: open at Store.Close

	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 77))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r.IntN(8) == 0 {
					d := dirs[r.IntN(2)]
					f, err := s.Open(d)
					if err != nil {
						continue // renamed away just now
					}
					if _, err := f.(fs.ReadDirFile).ReadDir(-1); err != nil {
						fail("list %s: %v", d, err)
					}
					f.Close()
					continue
				}
				name := files[r.IntN(len(files))]
				flag := []int{os.O_RDONLY, os.O_RDWR, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_APPEND}[r.IntN(4)]
				f, err := s.OpenFile(name, flag, 0)
				if err != nil {
					if errors.Is(err, fs.ErrNotExist) {
						continue // a directory renamed meanwhile
					}
					fail("open %s: %v", name, err)
					return
				}
				var v byte
				if flag != os.O_WRONLY|os.O_APPEND {
					b := make([]byte, 1)
					if _, err := f.ReadAt(b, 0); err != nil {
						fail("first read of %s: %v", name, err)
					}
					v = b[0]
				}
				for range r.IntN(6) {
					if v != 0 {
						checkSame(f, v, fmt.Sprintf("%s (flag %#x)", name, flag))
						if flag&(os.O_RDWR) != 0 && flag&os.O_APPEND != 0 {
							if _, err := f.Write([]byte{v}); err != nil {
								fail("write %s: %v", name, err)
							}
						}
					}
					time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
				}
				switch r.IntN(4) {
				case 0: // closed by several goroutines at once
					var cw sync.WaitGroup
					var ok atomic.Int32
					for range 3 {
						cw.Add(1)
						go func() {
							defer cw.Done()
							if f.Close() == nil {
								ok.Add(1)
							}
						}()
					}
					cw.Wait()
					if ok.Load() != 1 {
						fail("%s closed by three goroutines: %d closes succeeded, want 1", name, ok.Load())
					}
					if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrClosed) {
						fail("read of %s closed: %v, want fs.ErrClosed", name, err)
					}
				case 1: // handed to another goroutine
					select {
					case handed <- f:
					default:
						f.Close()
					}
				case 2: // left open until the store closes
					if r.IntN(10) == 0 {
						stillOpen.Store(f, flag)
						continue
					}
					f.Close()
				default:
					if err := f.Close(); err != nil {
						fail("close %s: %v", name, err)
					}
					if err := f.Close(); !errors.Is(err, fs.ErrClosed) {
						fail("second close of %s: %v, want fs.ErrClosed", name, err)
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the closer of handed files
		defer wg.Done()
		for {
			select {
			case f := <-handed:
				f.Close()
				if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrClosed) {
					fail("read of a closed file: %v, want fs.ErrClosed", err)
				}
				if _, err := f.Write([]byte{0}); !errors.Is(err, fs.ErrClosed) {
					fail("write to a closed file: %v, want fs.ErrClosed", err)
				}
			case <-stop:
				return
			}
		}
	}()
	wg.Add(1)
	go func() { // the tree's changes
		defer wg.Done()
		r := rand.New(rand.NewPCG(9, 9))
		tmp := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			switch k := r.IntN(10); {
			case k < 4: // a fresh file renamed over one
				tmp++
				n := fmt.Sprintf("t%d", tmp)
				if err := s.WriteFile(n, fresh(), 0o644); err != nil {
					fail("write %s: %v", n, err)
					return
				}
				to := files[r.IntN(len(files))]
				if err := s.Rename(n, to); err != nil {
					fail("rename %s %s: %v", n, to, err)
				}
			case k < 5:
				if err := s.Rename("d1", "d2/x"); err == nil {
					// os.Rename of a directory onto itself is EEXIST.
					if err := s.Rename("d2/x", "d2/x"); !errors.Is(err, fs.ErrExist) {
						fail("self-rename of a directory: %v, want fs.ErrExist as os gives", err)
					}
					if err := s.Rename("d2/x", "d1"); err != nil {
						fail("rename back: %v", err)
					}
				}
			case k < 6:
				f := files[r.IntN(len(files))]
				if err := s.Rename(f, f); err != nil {
					fail("self-rename %s: %v", f, err)
				}
			case k < 7:
				if err := s.Checkpoint(); err != nil {
					fail("checkpoint: %v", err)
				}
			default:
				commit := r.IntN(2) == 0
				err := s.Update(func(tx *packfs.Tx) error {
					tmp++
					n := fmt.Sprintf("t%d", tmp)
					if err := tx.WriteFile(n, fresh(), 0o644); err != nil {
						return err
					}
					if err := tx.Rename(n, files[r.IntN(len(files))]); err != nil {
						return err
					}
					if err := tx.Rename("d2", "d1/sub/y"); err != nil {
						return err
					}
					if err := tx.Rename("d1/sub/y", "d2"); err != nil {
						return err
					}
					if !commit {
						return errUndoTx
					}
					return nil
				})
				if commit && err != nil || !commit && !errors.Is(err, errUndoTx) {
					fail("update (commit %v): %v", commit, err)
				}
			}
		}
	}()
	time.Sleep(dur)
	close(stop)
	wg.Wait()
	if v := failed.Load(); v != nil {
		t.Fatal(v)
	}
	stillOpen.Range(func(k, v any) bool {
		f := k.(layer.File)
		if v.(int) != os.O_WRONLY|os.O_APPEND {
			b := make([]byte, 1)
			if _, err := f.ReadAt(b, 0); err != nil {
				fail("a file left open: %v", err)
			}
			checkSame(f, b[0], "a file left open")
		}
		return true
	})
	if v := failed.Load(); v != nil {
		t.Fatal(v)
	}
	mustDo(t, s.Close())
	stillOpen.Range(func(k, v any) bool {
		f := k.(layer.File)
		if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, fs.ErrClosed) && v.(int) != os.O_WRONLY|os.O_APPEND {
			t.Errorf("read of a file (flag %#x) open at Store.Close: %v, want fs.ErrClosed", v, err)
		}
		_, err := f.Write([]byte{1})
		switch {
		case v.(int) == os.O_RDONLY:
			// A write to a file open for reading only is EBADF, the
			// file's own refusal, store closed or not.
			if err == nil {
				t.Errorf("write to a file open for reading only succeeded")
			}
		case !errors.Is(err, fs.ErrClosed):
			t.Errorf("write to a file (flag %#x) open at Store.Close: %v, want fs.ErrClosed", v, err)
		}
		if _, err := f.Stat(); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("stat of a file open at Store.Close: %v, want fs.ErrClosed", err)
		}
		f.Close()
		return true
	})
}
