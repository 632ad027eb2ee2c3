package packfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/vfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// reviewWatchdog fails the test with every goroutine's stack when done
// is not closed within d.
func reviewWatchdog(t *testing.T, d time.Duration) (done func()) {
	t.Helper()
	ch := make(chan struct{})
	go func() {
		select {
		case <-ch:
		case <-time.After(d):
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			fmt.Fprintf(os.Stderr, "%s\n", buf[:n])
			panic(fmt.Sprintf("%s: stuck for %v (deadlock?)", t.Name(), d))
		}
	}()
	return func() { close(ch) }
}

// reviewFailingNames are names whose reads fail with an error other than
// ENOENT in the tree reviewErrTree makes, and the errors os gives.
var reviewFailingNames = []struct {
	name string
	want error
}{
	{"f/x", syscall.ENOTDIR},
	{"lf/x", syscall.ENOTDIR},
	{"loop", syscall.ELOOP},
	{"d/loop/x", syscall.ELOOP},
	{"d/" + strings.Repeat("n", 256), syscall.ENAMETOOLONG},
}

// reviewErrTree makes, in fsys (a union, a store or the host through
// mk), a tree with a file, a lower-ish directory and symlink loops.
func reviewErrTree(t *testing.T, fsys interface {
	WriteFile(string, []byte, fs.FileMode) error
	Mkdir(string, fs.FileMode) error
	Symlink(string, string) error
}) {
	t.Helper()
	for _, err := range []error{
		fsys.WriteFile("f", []byte("file"), 0o644),
		fsys.Mkdir("d", 0o755),
		fsys.Symlink("loop", "loop"),
		fsys.Symlink("loop2", "d/loop"),
		fsys.Symlink("loop", "d/loop2"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

type hostFS struct{ root string }

func (h hostFS) p(n string) string { return filepath.Join(h.root, n) }
func (h hostFS) WriteFile(n string, b []byte, perm fs.FileMode) error {
	return os.WriteFile(h.p(n), b, perm)
}
func (h hostFS) Mkdir(n string, perm fs.FileMode) error { return os.Mkdir(h.p(n), perm) }
func (h hostFS) Symlink(o, n string) error              { return os.Symlink(o, h.p(n)) }

// TestReviewSettledErrors: reads that fail for good, other than with
// ENOENT, fail as on Linux (the host), through ReadFile, Open and a
// store, with writers running beside them.
func TestReviewSettledErrors(t *testing.T) {
	defer reviewWatchdog(t, 60*time.Second)()
	host := hostFS{t.TempDir()}
	reviewErrTree(t, host)

	lower := mem.New()
	reviewErrTree(t, lower)
	if err := lower.WriteFile("lf", []byte("lower file"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(host.p("lf"), []byte("lower file"), 0o644)
	u := packfs.New(mem.New(), lower.Snapshot())
	s, err := packfs.Open(t.TempDir(), &packfs.Options{Lowers: []fs.FS{lower.Snapshot()}, CheckpointBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range []interface {
		WriteFile(string, []byte, fs.FileMode) error
		Remove(string) error
		Rename(string, string) error
	}{u, s} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				w.WriteFile("w", []byte(fmt.Sprint(i)), 0o644)
				w.Rename("w", "w2")
				w.Remove("w2")
			}
		}()
	}
	type reader interface {
		ReadFile(string) ([]byte, error)
		Open(string) (fs.File, error)
	}
	check := func(what string, r reader, name string, want error) {
		_, err := r.ReadFile(name)
		if !errors.Is(err, want) {
			t.Errorf("%s ReadFile(%.20s) = %v, want %v", what, name, err, want)
		}
		f, err := r.Open(name)
		if err == nil {
			f.Close()
		}
		if !errors.Is(err, want) {
			t.Errorf("%s Open(%.20s) = %v, want %v", what, name, err, want)
		}
	}
	for range 50 {
		for _, c := range reviewFailingNames {
			_, herr := os.ReadFile(host.p(c.name))
			if !errors.Is(herr, c.want) {
				t.Fatalf("host ReadFile(%.20s) = %v, want %v", c.name, herr, c.want)
			}
			check("union", u, c.name, c.want)
			check("store", s, c.name, c.want)
		}
		// A directory: ReadFile is EISDIR, Open succeeds.
		if _, err := u.ReadFile("d"); !errors.Is(err, syscall.EISDIR) {
			t.Errorf("union ReadFile(d) = %v", err)
		}
		if _, err := s.ReadFile("d"); !errors.Is(err, syscall.EISDIR) {
			t.Errorf("store ReadFile(d) = %v", err)
		}
		if _, err := u.ReadFile("missing/x"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("union ReadFile(missing/x) = %v", err)
		}
	}
	close(stop)
	wg.Wait()
}

// gatedUpper is a mem upper whose Chmod waits, after it is entered, until
// the gate opens: a writer that holds the union's lock for as long as the
// test likes (a long copy-up, a slow upper layer).
type gatedUpper struct {
	*mem.FS
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedUpper) Chmod(name string, mode fs.FileMode) error {
	g.entered <- struct{}{}
	<-g.gate
	return g.FS.Chmod(name, mode)
}

// TestReviewSettledReadWaitsForWriter: "Reads take no lock" (fs.go), "reads
// never wait for them" (Store): a read that fails for good, with nothing
// torn between its resolution and its read, must not wait for the writer
// that holds the union's lock. Each read below must return while a writer
// is held in the middle of a change, which it is until the reads are done:
// a read that waited for it would never return (the timeout is a hang
// check, not a measure of speed).
func TestReviewSettledReadWaitsForWriter(t *testing.T) {
	g := &gatedUpper{FS: mem.New(), entered: make(chan struct{}, 1), gate: make(chan struct{})}
	u := packfs.New(g)
	reviewErrTree(t, u)
	if err := u.WriteFile("lf", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	writer := make(chan error, 1)
	go func() { writer <- u.Chmod("f", 0o600) }()
	<-g.entered
	defer func() {
		close(g.gate)
		if err := <-writer; err != nil {
			t.Error(err)
		}
	}()
	reads := []struct {
		what string
		read func() error
		want error
	}{
		{"ReadFile(missing)", func() error { _, err := u.ReadFile("missing"); return err }, fs.ErrNotExist},
		{"ReadFile(d)", func() error { _, err := u.ReadFile("d"); return err }, syscall.EISDIR},
		{"ReadFile(f/x)", func() error { _, err := u.ReadFile("f/x"); return err }, syscall.ENOTDIR},
		{"Open(f/x)", func() error { _, err := u.Open("f/x"); return err }, syscall.ENOTDIR},
		{"ReadFile(loop)", func() error { _, err := u.ReadFile("loop"); return err }, syscall.ELOOP},
		{"ReadFile(\"\")", func() error { _, err := u.ReadFile(""); return err }, fs.ErrInvalid},
	}
	for _, r := range reads {
		done := make(chan error, 1)
		go func() { done <- r.read() }()
		select {
		case err := <-done:
			if !errors.Is(err, r.want) {
				t.Errorf("%s = %v, want %v", r.what, err, r.want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s still waiting 10 s into a writer's change: a read waits for the writers' lock", r.what)
			// It returns once the writer does; the deferred close lets it.
		}
	}
}

// slowLower is a lower layer whose file "slow" fails with EIO: the first
// open at once, every later one once release is closed, as a remote lower
// that starts timing out would.
type slowLower struct {
	fs.FS
	opens   *atomic.Int64
	release chan struct{}
}

func (l slowLower) Open(name string) (fs.File, error) {
	if name == "slow" {
		if l.opens.Add(1) > 1 {
			<-l.release
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return l.FS.Open(name)
}

// TestReviewSettledWriterWaitsForLowerRead: a read that a lower layer
// fails must not hold up writers of other names, whatever the union does
// about the failure: it reads nothing under its writers' lock. The lower
// layer fails the read at once and then holds any read made again until
// the writes are done; a write that waited for such a read would never
// return (the timeout is a hang check).
func TestReviewSettledWriterWaitsForLowerRead(t *testing.T) {
	lower := mem.New()
	if err := lower.WriteFile("slow", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	sl := slowLower{FS: lower.Snapshot(), opens: new(atomic.Int64), release: make(chan struct{})}
	u := packfs.New(mem.New(), sl)
	read := make(chan error, 1)
	wrote := make(chan error, 1)
	go func() {
		for i := range 200 {
			if err := u.WriteFile("w", []byte(fmt.Sprint(i)), 0o644); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	go func() { _, err := u.ReadFile("slow"); read <- err }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Error("writes of another name still waiting 10 s beside a read that a lower layer failed")
	}
	close(sl.release)
	if err := <-read; !errors.Is(err, syscall.EIO) {
		t.Errorf("ReadFile(slow) = %v, want EIO", err)
	}
}

// reviewDisk is a store directory whose syncs fail once failing is set.
type reviewDisk struct {
	vfs.FS
	failing atomic.Bool
}

func (d *reviewDisk) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &reviewDiskFile{File: f, d: d}, nil
}

type reviewDiskFile struct {
	vfs.File
	d *reviewDisk
}

func (f *reviewDiskFile) Sync() error {
	if f.d.failing.Load() {
		return syscall.EIO
	}
	return f.File.Sync()
}

// TestReviewSettledStoreNoDeadlock runs, against one store over a lower
// and a union that mounts it, writers that remove, rename and replace
// names and directories, readers of names that fail other than with
// ENOENT, handles open across checkpoints, transactions that read such
// names, and at last a failing disk: nothing may hang.
func TestReviewSettledStoreNoDeadlock(t *testing.T) {
	defer reviewWatchdog(t, 60*time.Second)()
	lower := mem.New()
	reviewErrTree(t, lower)
	lower.MkdirAll("ld/sub", 0o755)
	lower.WriteFile("ld/sub/f", []byte("lower"), 0o644)
	disk := &reviewDisk{FS: vfstest.NewMemFS()}
	s, err := packfs.Open("", &packfs.Options{FS: disk, Lowers: []fs.FS{lower.Snapshot()}, CheckpointBytes: 2 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u := packfs.New(mem.New())
	if err := u.Mkdir("m", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := u.Mount("m", s); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	run := func(fn func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				fn(i)
			}
		}()
	}
	// Writers: a file that becomes a directory and back, a lower
	// directory renamed away and back, names replaced.
	run(func(i int) {
		s.RemoveAll("p")
		s.WriteFile("p", []byte("file"), 0o644)
		s.Remove("p")
		s.Mkdir("p", 0o755)
		s.WriteFile("p/f", []byte(fmt.Sprint(i)), 0o644)
	})
	run(func(i int) {
		s.Rename("ld", "ld2")
		s.Rename("ld2", "ld")
		s.WriteFile("ld/sub/f", []byte(fmt.Sprint(i)), 0o644)
	})
	run(func(i int) {
		u.WriteFile("m/q", []byte(fmt.Sprint(i)), 0o644)
		u.Rename("m/q", "m/q2")
		u.WriteFile("local", []byte("x"), 0o644)
		u.Remove("local")
	})
	// Readers of names that fail other than with ENOENT, some of them
	// only at times.
	names := []string{"p/f/x", "p/f", "p", "f/x", "loop", "d/loop/x", "ld/sub/f", "ld2/sub/f", "ld/sub/f/x"}
	for k := range 3 {
		run(func(i int) {
			name := names[(i+k)%len(names)]
			s.ReadFile(name)
			if f, err := s.Open(name); err == nil {
				f.Close()
			}
			u.ReadFile("m/" + name)
			if f, err := u.Open("m/" + name); err == nil {
				f.Close()
			}
		})
	}
	// Handles kept open across checkpoints, read meanwhile.
	run(func(i int) {
		var hs []fs.File
		for _, n := range []string{"ld/sub/f", "p/f", "d", "f"} {
			if h, err := s.Open(n); err == nil {
				hs = append(hs, h)
			}
		}
		for _, h := range hs {
			if r, ok := h.(io.Reader); ok {
				r.Read(make([]byte, 8))
			}
			if d, ok := h.(fs.ReadDirFile); ok {
				d.ReadDir(-1)
			}
		}
		for _, h := range hs {
			h.Close()
		}
	})
	run(func(i int) {
		if i%2 == 0 {
			s.Checkpoint()
		} else {
			s.Flatten()
		}
	})
	// Transactions that read failing names and write.
	run(func(i int) {
		s.Update(func(tx *packfs.Tx) error {
			tx.ReadFile("f/x")
			tx.ReadFile("p/f/x")
			if f, err := tx.Open("loop"); err == nil {
				f.Close()
			}
			tx.WriteFile("t", []byte(fmt.Sprint(i)), 0o644)
			tx.ReadFile("t/x")
			if i%3 == 0 {
				return errors.New("undone")
			}
			return nil
		})
	})
	time.Sleep(1500 * time.Millisecond)
	// A failing disk: the store falls back, its open files move.
	disk.failing.Store(true)
	s.Sync()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	for _, c := range []struct {
		name string
		want error
	}{{"f/x", syscall.ENOTDIR}, {"loop", syscall.ELOOP}, {"d/loop/x", syscall.ELOOP}} {
		if _, err := s.ReadFile(c.name); !errors.Is(err, c.want) {
			t.Errorf("store ReadFile(%s) after all: %v, want %v", c.name, err, c.want)
		}
	}
}
