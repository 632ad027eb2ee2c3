package packfs_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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

// A write through a handle of 64 KiB or more is logged before it applies,
// and the chunks it fills whole are the log's mapped pages (see
// storeFile.writeShared). These tests run it on host directories, where
// the log can map its segments.

// largeStep is one write of the large-write workload: through handle 0
// (read-write) or 1 (O_APPEND), at the offset or positioned.
type largeStep struct {
	handle     int
	positioned bool
	off        int64
	size       int
	truncate   bool
}

// largeSteps returns a workload of large writes, aligned and not, over
// chunk edges and holes, with small writes and truncations between.
func largeSteps(seed uint64, n int) []largeStep {
	r := rand.New(rand.NewPCG(seed, 19))
	sizes := []int{64 << 10, 128 << 10, 100_000, 200_001, 1 << 20, 3, 65_535, 65_537}
	var steps []largeStep
	for range n {
		st := largeStep{size: sizes[r.IntN(len(sizes))]}
		switch r.IntN(8) {
		case 0:
			st.handle = 1
		case 1, 2:
			st.positioned = true
			st.off = r.Int64N(4 << 20)
			if r.IntN(2) == 0 {
				st.off &^= 64<<10 - 1
			}
		case 3:
			st.truncate = true
			st.off = r.Int64N(3 << 20)
		}
		steps = append(steps, st)
	}
	return steps
}

// applyLarge applies st to the two handles (0: read-write, 1: O_APPEND)
// with data from buf, which it changes afterwards, as a caller reusing
// its buffer does.
func applyLarge(fs [2]largeFile, st largeStep, buf []byte, fill byte) error {
	p := buf[:st.size]
	for i := range p {
		p[i] = fill + byte(i*7)
	}
	var err error
	switch {
	case st.truncate:
		err = fs[0].Truncate(st.off)
	case st.positioned:
		_, err = fs[0].WriteAt(p, st.off)
	default:
		_, err = fs[st.handle].Write(p)
	}
	clear(p)
	return err
}

type largeFile interface {
	io.Writer
	io.WriterAt
	Truncate(int64) error
}

// TestLargeWrites applies the workload to a store on a host directory
// and to a host file, and checks the file's bytes after each step, after
// a checkpoint, through a snapshot taken before a checkpoint dropped the
// log it maps, and after the store is reopened.
func TestLargeWrites(t *testing.T) {
	n := 40
	if !testsize.Short() {
		n = 200
	}
	dir := t.TempDir()
	host := filepath.Join(t.TempDir(), "big")
	s, err := packfs.Open(dir, &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	open := func() (sf [2]largeFile, hf [2]largeFile) {
		for i, flag := range []int{os.O_RDWR | os.O_CREATE, os.O_WRONLY | os.O_APPEND} {
			f, err := s.OpenFile("big", flag, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			h, err := os.OpenFile(host, flag, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { h.Close() })
			sf[i], hf[i] = f.(largeFile), h
		}
		return
	}
	sf, hf := open()
	buf := make([]byte, 1<<20)
	check := func(what string) {
		t.Helper()
		want, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadFile("big")
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes (%v), want %d; first difference at %d", what, len(got), err, len(want), diffAt(got, want))
		}
	}
	var snap *packfs.FS
	var snapWant []byte
	for i, st := range largeSteps(1, n) {
		if err := applyLarge(sf, st, buf, byte(i)); err != nil {
			t.Fatalf("step %d %+v: %v", i, st, err)
		}
		if err := applyLarge(hf, st, buf, byte(i)); err != nil {
			t.Fatalf("step %d %+v: host: %v", i, st, err)
		}
		if i%7 == 0 || i == n-1 {
			check(fmt.Sprintf("step %d %+v", i, st))
		}
		if i == n/2 {
			if snap, err = s.Snapshot(); err != nil {
				t.Fatal(err)
			}
			snapWant, _ = os.ReadFile(host)
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			check("after a checkpoint")
			runtime.GC()
			if got, err := snap.ReadFile("big"); err != nil || !bytes.Equal(got, snapWant) {
				t.Fatalf("the snapshot before the checkpoint reads %d bytes (%v), want %d", len(got), err, len(snapWant))
			}
		}
	}
	if got, err := snap.ReadFile("big"); err != nil || !bytes.Equal(got, snapWant) {
		t.Fatalf("the snapshot reads %d bytes (%v), want %d", len(got), err, len(snapWant))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = packfs.Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("reopened")
}

func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestLargeWriteReaders: readers beside a sequence of large appends see
// the file as some prefix of whole writes, through ReadFile, a handle's
// ReadAt and Stat, never a write in part.
func TestLargeWriteReaders(t *testing.T) {
	const chunk = 96 << 10 // a whole chunk and part of one
	writes := 100
	if !testsize.Short() {
		writes = 600
	}
	s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wantChunk := func(got []byte, what string) error {
		if len(got)%chunk != 0 {
			return fmt.Errorf("%s: %d bytes, not a whole number of writes", what, len(got))
		}
		for i := 0; i < len(got); i += chunk {
			if c := got[i : i+chunk]; c[0] != byte(i/chunk) || !bytes.Equal(c, bytes.Repeat(c[:1], chunk)) {
				return fmt.Errorf("%s: write %d holds other bytes", what, i/chunk)
			}
		}
		return nil
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for r := range 3 {
		wg.Go(func() {
			h, err := s.Open("big")
			if err != nil {
				errs <- err
				return
			}
			defer h.Close()
			p := make([]byte, chunk)
			for !done.Load() {
				var err error
				switch r {
				case 0:
					var got []byte
					if got, err = s.ReadFile("big"); err == nil {
						err = wantChunk(got, "ReadFile")
					}
				case 1:
					var fi os.FileInfo
					if fi, err = h.Stat(); err == nil && fi.Size()%chunk != 0 {
						err = fmt.Errorf("Stat: size %d", fi.Size())
					}
				case 2:
					var n int
					off := int64(rand.IntN(writes)) * chunk
					n, err = h.(io.ReaderAt).ReadAt(p, off)
					switch {
					case errors.Is(err, io.EOF) && n == 0:
						err = nil
					case err != nil:
					case !bytes.Equal(p, bytes.Repeat([]byte{byte(off / chunk)}, chunk)):
						err = fmt.Errorf("ReadAt %d: %d bytes, not write %d's", off, n, off/chunk)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	buf := make([]byte, chunk)
	for i := range writes {
		for j := range buf {
			buf[j] = byte(i)
		}
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestLargeWriteHeap: a 32 MiB file written in 64 KiB writes costs the
// heap a small fraction of its size: its bytes are the log's pages.
func TestLargeWriteHeap(t *testing.T) {
	s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f, err := s.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for i := range 512 {
		buf[0] = byte(i)
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	f.Close()
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Errorf("32 MiB written, the heap grew by %d bytes", grown)
	}
	got, err := s.ReadFile("big")
	if err != nil || len(got) != 32<<20 || got[511*64<<10] != 255 {
		t.Fatalf("read back %d bytes: %v", len(got), err)
	}
}

// bytesFile is a file in memory, the model of the large-write workload.
type bytesFile struct {
	b   []byte
	off int64
}

func (m *bytesFile) WriteAt(p []byte, off int64) (int, error) {
	if end := int(off) + len(p); end > len(m.b) {
		m.b = append(m.b, make([]byte, end-len(m.b))...)
	}
	return copy(m.b[off:], p), nil
}

func (m *bytesFile) Write(p []byte) (int, error) {
	n, err := m.WriteAt(p, m.off)
	m.off += int64(n)
	return n, err
}

func (m *bytesFile) Truncate(size int64) error {
	if int(size) <= len(m.b) {
		m.b = m.b[:size]
	} else {
		m.b = append(m.b, make([]byte, int(size)-len(m.b))...)
	}
	return nil
}

// TestLargeWriteFaults makes each file-system operation of a workload of
// large writes fail in turn, on a host directory: the error reaches the
// writer, the file shows what the writes before it made, and the store
// reopens to the file after some write at or after the last one a sync
// acknowledged.
func TestLargeWriteFaults(t *testing.T) {
	steps := largeSteps(2, 24)
	for i := range steps {
		steps[i].handle = 0 // one handle here
	}
	// The file after each step, by its bytes; state -1 is no file.
	states := map[string][]int{}
	model := &bytesFile{}
	buf := make([]byte, 1<<20)
	for i, st := range steps {
		applyLarge([2]largeFile{model}, st, buf, byte(i))
		states[string(model.b)] = append(states[string(model.b)], i)
	}
	stride := 1
	if testsize.Short() || raceEnabled {
		stride = 13
	}
	for _, policy := range []packfs.SyncPolicy{packfs.SyncOnCommit, packfs.SyncAlways} {
		t.Run(fmt.Sprint("policy=", policy), func(t *testing.T) { largeFaults(t, steps, states, policy, stride) })
	}
}

func largeFaults(t *testing.T, steps []largeStep, states map[string][]int, policy packfs.SyncPolicy, stride int) {
	buf := make([]byte, 1<<20)
	total := -1
	for k := 0; total < 0 || k < total; k += stride {
		dir := t.TempDir()
		d, err := vfs.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		fy := vfstest.NewFaulty(d, k)
		acked := -1
		var failure error
		if s, err := packfs.Open("", &packfs.Options{FS: fy, CheckpointBytes: -1, Sync: policy}); err == nil {
			var last []byte // the file after the last step that succeeded
			f, err := s.OpenFile("big", os.O_RDWR|os.O_CREATE, 0o644)
			for i, st := range steps {
				if err != nil {
					break
				}
				if err = applyLarge([2]largeFile{f.(largeFile)}, st, buf, byte(i)); err != nil {
					break
				}
				if last, err = s.ReadFile("big"); err != nil {
					t.Fatalf("fault at %d: read: %v", k, err)
				}
				if policy == packfs.SyncAlways {
					acked = i
				}
				if i%3 == 0 {
					if err = f.Sync(); err == nil {
						acked = i
					}
				}
			}
			if failure = err; failure != nil && last != nil {
				if got, err := s.ReadFile("big"); err != nil || !bytes.Equal(got, last) {
					t.Fatalf("fault at %d: after %v the file reads %d bytes (%v), want the %d before", k, failure, len(got), err, len(last))
				}
			}
			if f != nil {
				f.Close()
			}
			s.Close()
		} else {
			failure = err
		}
		if !fy.Failed() {
			total = k // a run without a fault: every operation was tried
		}
		if failure != nil && !errors.Is(failure, vfstest.ErrInjected) {
			t.Fatalf("fault at %d: %v does not wrap the injected error", k, failure)
		}
		s, err := packfs.Open(dir, nil)
		if err != nil {
			t.Fatalf("fault at %d: reopen: %v", k, err)
		}
		got, err := s.ReadFile("big")
		at, ok := states[string(got)]
		switch {
		case err != nil && acked >= 0:
			t.Fatalf("fault at %d: step %d was synced, the file is gone: %v", k, acked, err)
		case err == nil && !ok && len(got) > 0:
			t.Fatalf("fault at %d: the reopened file (%d bytes) is the file after no step", k, len(got))
		case err == nil && acked >= 0 && at[len(at)-1] < acked:
			t.Fatalf("fault at %d: the reopened file is that after step %v, step %d was synced", k, at, acked)
		}
		s.Close()
	}
	t.Logf("%d operations", total)
}

const largeKillEnv = "PACKFS_LARGE_KILL_DIR"

// TestLargeWriteKillChild is the child of TestLargeWriteSIGKILL: it
// appends 192 KiB writes to "big" in the store in $PACKFS_LARGE_KILL_DIR
// until killed, write i all of byte i, and prints "ack N" once an fsync
// made the file N writes long.
func TestLargeWriteKillChild(t *testing.T) {
	dir := os.Getenv(largeKillEnv)
	if dir == "" {
		return // run only as the child
	}
	s, err := packfs.Open(dir, &packfs.Options{CheckpointBytes: 16 << 20})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	f, err := s.OpenFile("big", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fi, err := f.Stat()
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	buf := make([]byte, largeKillWrite)
	for i := fi.Size() / largeKillWrite; ; i++ {
		fillKill(buf, i)
		if _, err := f.Write(buf); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if i%3 == 2 {
			if err := f.Sync(); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Printf("ack %d\n", i+1)
		}
	}
}

const largeKillWrite = 192 << 10

func fillKill(buf []byte, i int64) {
	for j := range buf {
		buf[j] = byte(i)
	}
}

// TestLargeWriteSIGKILL kills the child in the middle of its large
// writes at random moments: the reopened file holds every write an fsync
// acknowledged, whole and in order, and no part of a write.
func TestLargeWriteSIGKILL(t *testing.T) {
	rounds := 4
	if !testsize.Short() {
		rounds = 30
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 5))
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLargeWriteKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), largeKillEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := make(chan int64)
		go func() {
			var last int64
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
					last, _ = strconv.ParseInt(n, 10, 64)
				} else if strings.HasPrefix(sc.Text(), "error") {
					t.Errorf("round %d: child: %s", round, sc.Text())
				}
			}
			acked <- last
		}()
		time.Sleep(time.Duration(30+r.IntN(120)) * time.Millisecond)
		cmd.Process.Kill()
		last := <-acked
		cmd.Wait()

		s, err := packfs.Open(dir, nil)
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		got, err := s.ReadFile("big")
		if err != nil && !(last == 0 && errors.Is(err, os.ErrNotExist)) {
			t.Fatalf("round %d: %v", round, err)
		}
		if int64(len(got)) < last*largeKillWrite || len(got)%largeKillWrite != 0 {
			t.Fatalf("round %d: the file holds %d bytes, the child acknowledged %d writes of %d", round, len(got), last, largeKillWrite)
		}
		want := make([]byte, largeKillWrite)
		for i := int64(0); i < int64(len(got))/largeKillWrite; i++ {
			fillKill(want, i)
			if !bytes.Equal(got[i*largeKillWrite:(i+1)*largeKillWrite], want) {
				t.Fatalf("round %d: write %d differs", round, i)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLargeWriteEdges: large writes at the edges: past the largest
// offset (EINVAL, nothing logged), far out (a hole), through a closed or
// read-only handle, to a file renamed or removed while open; the store
// reopens to what succeeded.
func TestLargeWriteEdges(t *testing.T) {
	dir := t.TempDir()
	s, err := packfs.Open(dir, &packfs.Options{CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := bytes.Repeat([]byte("edge"), 32<<10) // 128 KiB
	f, err := s.OpenFile("a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(p, math.MaxInt64-100); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("WriteAt past the largest offset: %v, want EINVAL", err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != 0 {
		t.Fatalf("after a refused write: %v, %v", fi, err)
	}
	const far = 1 << 40
	if n, err := f.WriteAt(p, far); err != nil || n != len(p) {
		t.Fatalf("WriteAt %d: %d, %v", int64(far), n, err)
	}
	if _, err := f.WriteAt(p, -1); err == nil {
		t.Fatal("WriteAt -1 succeeded")
	}
	ro, err := s.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.(largeFile).Write(p); err == nil {
		t.Fatal("a write through a read-only handle succeeded")
	}
	ro.Close()
	if err := s.Rename("a", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(p); err != nil { // at offset 0, logged as b's
		t.Fatal(err)
	}
	g, err := s.OpenFile("gone", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Write(p); err != nil {
		t.Fatalf("a write to a removed file: %v", err)
	}
	back := make([]byte, len(p))
	if _, err := g.(io.ReaderAt).ReadAt(back, 0); err != nil || !bytes.Equal(back, p) {
		t.Fatalf("the removed file reads back %v", err)
	}
	g.Close()
	f.Close()
	if _, err := f.Write(p); err == nil {
		t.Fatal("a write through a closed handle succeeded")
	}
	check := func(what string, s *packfs.Store) {
		fi, err := s.Stat("b")
		if err != nil || fi.Size() != far+int64(len(p)) {
			t.Fatalf("%s: b: %v, %v", what, fi, err)
		}
		h, err := s.Open("b")
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		for _, off := range []int64{0, far} {
			if _, err := h.(io.ReaderAt).ReadAt(back, off); err != nil && err != io.EOF || !bytes.Equal(back, p) {
				t.Fatalf("%s: b at %d: %v", what, off, err)
			}
		}
		if _, err := h.(io.ReaderAt).ReadAt(back[:10], 1<<30); err != nil || !bytes.Equal(back[:10], make([]byte, 10)) {
			t.Fatalf("%s: the hole reads %q, %v", what, back[:10], err)
		}
		if _, err := s.Stat("gone"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: gone: %v", what, err)
		}
	}
	check("open", s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = packfs.Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("reopened", s)
}
