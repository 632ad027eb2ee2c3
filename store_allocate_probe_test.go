package packfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs/internal/testmount"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
	"github.com/packfs/packfs/wal"
)

// Probes, through Open's store and its files, of the block reservation
// that the log makes for a large write (eight preallocation steps past
// it, 8 MiB on a host directory): real full disks, a reservation that the
// disk refuses, sizes after Close, readers beside large writes, power
// cuts and huge offsets.

// allocProbeData is the content of file i of n bytes: distinct per file
// and per offset, so that a misplaced block shows.
func allocProbeData(i, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(i), uint64(n)))
	for j := 0; j < n; j += 8 {
		v := r.Uint64()
		for k := 0; k < 8 && j+k < n; k++ {
			b[j+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// allocProbeCheck fails unless every file in want reads back byte for
// byte from s.
func allocProbeCheck(t *testing.T, what string, s *Store, want map[string][]byte) {
	t.Helper()
	for name, data := range want {
		got, err := s.ReadFile(name)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %s: %d bytes, %v; want the %d written", what, name, len(got), err, len(data))
		}
	}
}

// TestAllocateProbeStoreFullDisk fills a real, small disk (a tmpfs)
// through the store, under each sync policy, with files synced one by
// one: the write or sync that finds no room fails with ENOSPC and its
// file is not seen; nothing synced before is lost, across a reopen on
// the full disk; and once room is made, removed files and a checkpoint
// give the disk back, and large writes go on.
func TestAllocateProbeStoreFullDisk(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncNone, SyncOnCommit, SyncAlways} {
		t.Run(fmt.Sprint(policy), func(t *testing.T) {
			mnt := testmount.Mount(t, "tmpfs", 16<<20)
			ballast := filepath.Join(mnt, "ballast")
			if err := os.WriteFile(ballast, make([]byte, 2<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(mnt, "store")
			opts := &Options{Sync: policy, CheckpointBytes: -1}
			s, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			acked := map[string][]byte{}
			var failed string
			for i := 0; failed == ""; i++ {
				if i > 100 {
					t.Fatal("the disk never filled")
				}
				name, data := fmt.Sprintf("f%02d", i), allocProbeData(i, 512<<10+i*4093)
				err := s.WriteFile(name, data, 0o644)
				if err == nil {
					err = s.Sync()
				} else if _, serr := s.Stat(name); !errors.Is(serr, fs.ErrNotExist) {
					t.Errorf("stat %s, whose write failed: %v", name, serr)
				}
				switch {
				case err == nil:
					acked[name] = data
				case !errors.Is(err, syscall.ENOSPC):
					t.Fatalf("%s on a full disk: %v, want ENOSPC", name, err)
				default:
					failed = name
				}
			}
			allocProbeCheck(t, "after the disk filled", s, acked)
			s.Close() // may fail: the log failed
			s, err = Open(dir, opts)
			if err != nil {
				t.Fatalf("reopen on the full disk: %v", err)
			}
			allocProbeCheck(t, "reopened on the full disk", s, acked)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(ballast); err != nil {
				t.Fatal(err)
			}
			s, err = Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			allocProbeCheck(t, "with room again", s, acked)
			// Room: keep f00 alone, and checkpoint it into a pack, which
			// drops the log that held the others.
			before := testmount.Free(t, mnt)
			for name := range acked {
				if name != "f00" {
					if err := s.Remove(name); err != nil {
						t.Fatal(err)
					}
					delete(acked, name)
				}
			}
			if err := s.Checkpoint(); err != nil {
				t.Fatalf("checkpoint with 2 MiB free: %v", err)
			}
			if after := testmount.Free(t, mnt); after < before+4<<20 {
				t.Fatalf("removing the files and a checkpoint freed %d bytes", after-before)
			}
			for i := 50; i < 58; i++ {
				name, data := fmt.Sprintf("f%02d", i), allocProbeData(i, 1<<20)
				if err := s.WriteFile(name, data, 0o644); err != nil {
					t.Fatalf("%s after the room was made: %v", name, err)
				}
				acked[name] = data
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, opts); err != nil {
				t.Fatal(err)
			}
			allocProbeCheck(t, "reopened at the end", s, acked)
		})
	}
}

// TestAllocateProbeStoreFitsWithoutReserve writes, next to a synced
// file, one large file with room for it and the step of zeros its sync
// writes, 3 MiB to spare, but not for the eight steps of its reserve:
// the write and its sync succeed (a refused reservation fails nothing),
// and the disk keeps its spare room for others while the store is open,
// as it did before the reserve. On ext4 the refused fallocate keeps the
// blocks it found until Rotate or Close: the disk reads full, and a 1 MiB
// file beside the store fails with ENOSPC.
func TestAllocateProbeStoreFitsWithoutReserve(t *testing.T) {
	for _, kind := range []string{"tmpfs", "ext4"} {
		t.Run(kind, func(t *testing.T) {
			mnt := testmount.Mount(t, kind, 32<<20)
			dir := filepath.Join(mnt, "store")
			s, err := Open(dir, &Options{CheckpointBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			want := map[string][]byte{"old": allocProbeData(0, 1000)}
			if err := s.WriteFile("old", want["old"], 0o644); err != nil {
				t.Fatal(err)
			}
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			free := testmount.Free(t, mnt)
			want["big"] = allocProbeData(1, int(free-(1<<20)-(3<<20)))
			if err := s.WriteFile("big", want["big"], 0o644); err != nil {
				t.Fatalf("a file of %d bytes with %d free: %v", len(want["big"]), free, err)
			}
			if err := s.Sync(); err != nil {
				t.Fatalf("sync of a file of %d bytes with %d free: %v", len(want["big"]), free, err)
			}
			left := testmount.Free(t, mnt)
			beside := filepath.Join(mnt, "beside")
			werr := os.WriteFile(beside, make([]byte, 1<<20), 0o644)
			os.Remove(beside)
			if left < 2<<20 || werr != nil {
				t.Errorf("%d bytes free, a file of %d bytes written: %d free (the store open), and a 1 MiB file beside it: %v", free, len(want["big"]), left, werr)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, &Options{CheckpointBytes: -1}); err != nil {
				t.Fatal(err)
			}
			allocProbeCheck(t, "reopened", s, want)
		})
	}
}

// allocProbePublisher runs during at each checkpoint's publication,
// between the pack's write and the manifest's.
type allocProbePublisher struct{ during func() error }

func (p allocProbePublisher) PublishCheckpoint(*Checkpoint) error { return p.during() }

// TestAllocateProbeCheckpointBesideLargeWrite: writers go on while a
// checkpoint runs, and a large write then, with room for it and for the
// manifest still to come, but not for its reserve, fails neither itself
// nor the checkpoint. On ext4 the refused fallocate keeps every block it
// found: the manifest's write fails with ENOSPC, and so the checkpoint,
// which succeeds without the reserve.
func TestAllocateProbeCheckpointBesideLargeWrite(t *testing.T) {
	for _, kind := range []string{"tmpfs", "ext4"} {
		t.Run(kind, func(t *testing.T) {
			mnt := testmount.Mount(t, kind, 32<<20)
			dir := filepath.Join(mnt, "store")
			want := map[string][]byte{"small": allocProbeData(0, 100)}
			var s *Store
			pub := allocProbePublisher{during: func() error {
				free := testmount.Free(t, mnt)
				want["big"] = allocProbeData(1, int(free-3<<20))
				done := make(chan error)
				go func() { done <- s.WriteFile("big", want["big"], 0o644) }()
				if err := <-done; err != nil {
					return fmt.Errorf("a write of %d bytes with %d free, beside the checkpoint: %w", len(want["big"]), free, err)
				}
				return nil
			}}
			s, err := Open(dir, &Options{CheckpointBytes: -1, Publisher: pub})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			if err := s.WriteFile("small", want["small"], 0o644); err != nil {
				t.Fatal(err)
			}
			if err := s.Checkpoint(); err != nil {
				t.Errorf("checkpoint beside a large write (%d bytes free after it): %v", testmount.Free(t, mnt), err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, &Options{CheckpointBytes: -1}); err != nil {
				t.Fatal(err)
			}
			allocProbeCheck(t, "reopened", s, want)
		})
	}
}

// allocProbeSegments returns the log's segment files in dir, oldest
// first.
func allocProbeSegments(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

// TestAllocateProbeStoreCloseSizes: large files written whole and
// through an open file in large chunks, small ones, a checkpoint between
// them; after Close the last segment is exactly as long as its records
// (the log read back read-only says where they end) and no segment
// holds blocks past its end; every reopen gives every file.
func TestAllocateProbeStoreCloseSizes(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]byte{}
	next := 0
	for round := range 3 {
		s, err := Open(dir, &Options{CheckpointBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		allocProbeCheck(t, fmt.Sprintf("round %d: reopened", round), s, want)
		for i := next; i < next+6; i++ {
			name := fmt.Sprintf("f%02d", i)
			switch i % 3 {
			case 0:
				want[name] = allocProbeData(i, 3<<20+i*511)
				err = s.WriteFile(name, want[name], 0o644)
			case 1:
				want[name] = allocProbeData(i, 200+i)
				err = s.WriteFile(name, want[name], 0o644)
			case 2:
				// Through an open file, 300 KiB at a time: each a direct
				// append.
				want[name] = allocProbeData(i, 2<<20+i*97)
				var f interface {
					io.Writer
					io.Closer
				}
				if f, err = s.Create(name); err == nil {
					for off := 0; off < len(want[name]) && err == nil; off += 300 << 10 {
						_, err = f.Write(want[name][off:min(off+300<<10, len(want[name]))])
					}
					if cerr := f.Close(); err == nil {
						err = cerr
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if i == next+2 {
				if err := s.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
		}
		next += 6
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		segs := allocProbeSegments(t, dir)
		if len(segs) == 0 {
			t.Fatal("no segment")
		}
		first := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(segs[0]), "wal-"), ".log")
		var id uint64
		if _, err := fmt.Sscanf(first, "%x", &id); err != nil {
			t.Fatal(err)
		}
		d, err := vfs.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		l, err := wal.Open(d, wal.Options{ReadOnly: true, First: id}, func([][]byte) error { return nil })
		if err != nil {
			t.Fatalf("round %d: the closed log read back: %v", round, err)
		}
		end := int64(uint64(l.End()) & (1<<40 - 1))
		l.Close()
		for i, name := range segs {
			st, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			if i == len(segs)-1 && st.Size() != end {
				t.Errorf("round %d: closed %s of %d bytes, its records end at %d", round, filepath.Base(name), st.Size(), end)
			}
			if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks > (st.Size()+4095)/4096*4096+64<<10 {
				t.Errorf("round %d: closed %s of %d bytes holds %d bytes of blocks", round, filepath.Base(name), st.Size(), blocks)
			}
		}
	}
	s, err := Open(dir, &Options{CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	allocProbeCheck(t, "at the end", s, want)
}

// TestAllocateProbeStoreReadersBesideLargeWrites: readers read every
// file finished so far (whole, at random offsets, and by size) while a
// writer writes large files, whole and in chunks through an open file,
// and small ones, with background checkpoints rotating the log under
// them; on the host directory, whose log is mapped and reserves, and in
// memory.
func TestAllocateProbeStoreReadersBesideLargeWrites(t *testing.T) {
	files := 16
	if !testsize.Short() {
		files = 32
	}
	for _, where := range []string{"host", "mem"} {
		t.Run(where, func(t *testing.T) {
			opts := &Options{CheckpointBytes: 12 << 20}
			dir := ""
			if where == "host" {
				dir = t.TempDir()
			} else {
				opts.FS = vfstest.NewMemFS()
			}
			s, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			size := func(i int) int {
				if i%4 == 3 {
					return 10 + i
				}
				return 256<<10 + (i*389_171)%(3<<20)
			}
			var done atomic.Int64 // files 0..done-1 are written
			var wg sync.WaitGroup
			stop := make(chan struct{})
			errs := make(chan error, 8)
			for r := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(r), 5))
					for {
						select {
						case <-stop:
							return
						default:
						}
						n := int(done.Load())
						if n == 0 {
							continue
						}
						i := rnd.IntN(n)
						name, data := fmt.Sprintf("d/f%02d", i), allocProbeData(i, size(i))
						switch rnd.IntN(3) {
						case 0:
							got, err := s.ReadFile(name)
							if err != nil || !bytes.Equal(got, data) {
								errs <- fmt.Errorf("ReadFile %s beside large writes: %d bytes, %v", name, len(got), err)
								return
							}
						case 1:
							f, err := s.Open(name)
							if err != nil {
								errs <- err
								return
							}
							off := rnd.IntN(len(data))
							buf := make([]byte, min(64<<10, len(data)-off))
							_, err = f.(io.ReaderAt).ReadAt(buf, int64(off))
							f.Close()
							if err != nil && err != io.EOF || !bytes.Equal(buf, data[off:off+len(buf)]) {
								errs <- fmt.Errorf("ReadAt %s at %d beside large writes: %v", name, off, err)
								return
							}
						default:
							fi, err := s.Stat(name)
							if err != nil || fi.Size() != int64(len(data)) {
								errs <- fmt.Errorf("Stat %s beside large writes: %v", name, err)
								return
							}
						}
					}
				}()
			}
			if err := s.Mkdir("d", 0o755); err != nil {
				t.Fatal(err)
			}
			for i := range files {
				name, data := fmt.Sprintf("d/f%02d", i), allocProbeData(i, size(i))
				if i%2 == 0 {
					err = s.WriteFile(name, data, 0o644)
				} else {
					var f interface {
						io.Writer
						io.Closer
					}
					if f, err = s.Create(name); err == nil {
						for off := 0; off < len(data) && err == nil; off += 200 << 10 {
							_, err = f.Write(data[off:min(off+200<<10, len(data))])
						}
						if cerr := f.Close(); err == nil {
							err = cerr
						}
					}
				}
				if err == nil && i%5 == 4 {
					err = s.Sync()
				}
				if err != nil {
					t.Fatal(err)
				}
				done.Store(int64(i + 1))
			}
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(dir, opts); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := range files {
				name := fmt.Sprintf("d/f%02d", i)
				if got, err := s.ReadFile(name); err != nil || !bytes.Equal(got, allocProbeData(i, size(i))) {
					t.Fatalf("reopened: %s: %d bytes, %v", name, len(got), err)
				}
			}
		})
	}
}

// TestAllocateProbeStoreCrashSweep stops the machine at every operation
// of a store's workload of large files (each reserving), small ones, a
// checkpoint (whose Rotate cuts the reserve) and Close, and reopens what
// a power cut leaves, reserve and torn sectors included: every file
// synced before the crash reads back whole, every other one is whole or
// absent, and the store takes a large write again.
func TestAllocateProbeStoreCrashSweep(t *testing.T) {
	step := 1
	if testsize.Short() {
		step = 3
	}
	data := func(i int) []byte {
		if i%3 == 1 {
			return allocProbeData(i, 50+i)
		}
		return allocProbeData(i, 40<<10+i*3001)
	}
	const files = 8
	crashes := 0
	for k := 0; ; k += step {
		m := vfstest.NewMemFS()
		m.CrashAt(k)
		synced := 0
		s, err := Open("", &Options{FS: m, CheckpointBytes: -1})
		if err == nil {
			for i := range files {
				if err = s.WriteFile(fmt.Sprintf("f%d", i), data(i), 0o644); err != nil {
					break
				}
				switch {
				case i == 4:
					err = s.Checkpoint()
				case i%2 == 1:
					err = s.Sync()
				}
				if err != nil {
					break
				}
				if i == 4 || i%2 == 1 {
					synced = i + 1
				}
			}
			if cerr := s.Close(); err == nil && cerr == nil {
				synced = files
			}
		}
		if !m.Crashed() {
			break
		}
		crashes++
		for c, torn := range []vfstest.Torn{{}, {Keep: 0.5, Names: true, Rand: rand.New(rand.NewPCG(uint64(k), 2))}, {Keep: 1, Names: true}} {
			what := fmt.Sprintf("crash at %d, cut %d", k, c)
			s, err := Open("", &Options{FS: m.Recover(torn), CheckpointBytes: -1})
			if err != nil {
				t.Fatalf("%s: reopen: %v", what, err)
			}
			for i := range files {
				got, err := s.ReadFile(fmt.Sprintf("f%d", i))
				switch {
				case err == nil && bytes.Equal(got, data(i)):
				case i >= synced && errors.Is(err, fs.ErrNotExist):
				default:
					t.Fatalf("%s: f%d (synced: %v): %d bytes, %v", what, i, i < synced, len(got), err)
				}
			}
			if err := s.WriteFile("after", data(99), 0o644); err != nil {
				t.Fatalf("%s: a large write after recovery: %v", what, err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("%s: close after recovery: %v", what, err)
			}
		}
	}
	if crashes < 20 {
		t.Fatalf("only %d crash points", crashes)
	}
}

// TestAllocateProbeStoreHugeOffsets writes large chunks at offsets far
// apart, up to a terabyte, through an open file, with small writes
// between them: each large chunk is a direct append that reserves; after
// a reopen the file reads back the chunks, holes as zeros, and its size.
func TestAllocateProbeStoreHugeOffsets(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, &Options{CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Create("sparse")
	if err != nil {
		t.Fatal(err)
	}
	w := f.(io.WriterAt)
	offs := []int64{0, 1 << 20, 1<<32 - 100, 1<<40 + 12345}
	for i, off := range offs {
		if _, err := w.WriteAt(allocProbeData(i, 300<<10), off); err != nil {
			t.Fatalf("WriteAt %d: %v", off, err)
		}
		if _, err := w.WriteAt([]byte("small"), off+(600<<10)); err != nil {
			t.Fatalf("WriteAt %d: %v", off+(600<<10), err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		fi, err := s.Stat("sparse")
		if want := offs[len(offs)-1] + 600<<10 + 5; err != nil || fi.Size() != want {
			t.Fatalf("%s: stat: %v, want size %d", what, err, want)
		}
		g, err := s.Open("sparse")
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		r := g.(io.ReaderAt)
		for i, off := range offs {
			buf := make([]byte, 300<<10)
			if _, err := r.ReadAt(buf, off); err != nil || !bytes.Equal(buf, allocProbeData(i, 300<<10)) {
				t.Fatalf("%s: chunk at %d: %v", what, off, err)
			}
			hole := make([]byte, 4096)
			if _, err := r.ReadAt(hole, off+(400<<10)); err != nil || !bytes.Equal(hole, make([]byte, 4096)) {
				t.Fatalf("%s: hole at %d: %v", what, off+(400<<10), err)
			}
			small := make([]byte, 5)
			if _, err := r.ReadAt(small, off+(600<<10)); (err != nil && err != io.EOF) || string(small) != "small" {
				t.Fatalf("%s: small write at %d: %q, %v", what, off+(600<<10), small, err)
			}
		}
	}
	check("written")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, &Options{CheckpointBytes: -1}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("reopened")
	// No checkpoint here: the pack writer reads a hole as zeros to hash
	// it, a terabyte of them, a cost of its own (not the reserve's).
}

// TestAllocateProbeReadOnlyBesideReserve: a read-only open beside the
// writer replays a live segment that ends in the writer's reserve (8 MiB
// of zeros past a large write) and in records written into it since,
// leaves it as it is, and sees every synced file.
func TestAllocateProbeReadOnlyBesideReserve(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, &Options{CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[string][]byte{}
	for i := range 6 {
		name := fmt.Sprintf("f%d", i)
		want[name] = allocProbeData(i, 100+i)
		if i%2 == 0 {
			want[name] = allocProbeData(i, 1<<20+i)
		}
		if err := s.WriteFile(name, want[name], 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		segs := allocProbeSegments(t, dir)
		before, err := os.Stat(segs[len(segs)-1])
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(dir, &Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open beside the writer after %s: %v", name, err)
		}
		allocProbeCheck(t, "read-only beside the writer", r, want)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if after, err := os.Stat(segs[len(segs)-1]); err != nil || after.Size() != before.Size() {
			t.Fatalf("a read-only open changed the live segment from %d bytes: %v", before.Size(), err)
		}
	}
	if st, err := os.Stat(allocProbeSegments(t, dir)[0]); err != nil || st.Size() < 1<<20+8<<20 {
		t.Fatalf("the live segment holds no reserve: %v", err)
	}
}

// TestStoreWritesWithoutRoomForZeros: a store on a disk with room for its
// changes but not for the MiB of zeros each durable commit writes ahead
// of its log's records takes those changes, durably, and stays usable:
// the zeros were written before each sync, and a disk without room for
// them failed the sync and the store with it until reopened.
func TestStoreWritesWithoutRoomForZeros(t *testing.T) {
	for _, kind := range []string{"tmpfs", "ext4"} {
		t.Run(kind, func(t *testing.T) {
			mnt := testmount.Mount(t, kind, 16<<20)
			dir := filepath.Join(mnt, "store")
			s, err := Open(dir, &Options{Sync: SyncAlways, CheckpointBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			filler, err := os.Create(filepath.Join(mnt, "filler"))
			if err != nil {
				t.Fatal(err)
			}
			chunk := make([]byte, 64<<10)
			for testmount.Free(t, mnt) > 512<<10 {
				if _, err := filler.Write(chunk); err != nil {
					break
				}
			}
			if err := filler.Close(); err != nil {
				t.Fatal(err)
			}
			want := map[string][]byte{}
			for i := range 8 {
				name := fmt.Sprintf("f%d", i)
				data := allocProbeData(i, 16<<10)
				if err := s.WriteFile(name, data, 0o644); err != nil {
					t.Fatalf("%d bytes free: write %s: %v", testmount.Free(t, mnt), name, err)
				}
				want[name] = data
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if s, err = Open(dir, &Options{Sync: SyncAlways, CheckpointBytes: -1}); err != nil {
				t.Fatal(err)
			}
			allocProbeCheck(t, "reopened", s, want)
		})
	}
}
