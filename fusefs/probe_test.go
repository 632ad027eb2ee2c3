package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

// Hostile probes of a writable mount, each compared with what Linux
// gives on tmpfs.

func newStoreMount(t *testing.T) (string, *packfs.Store) {
	t.Helper()
	s, err := packfs.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir, _ := mountT(t, s, nil)
	return dir, s
}

// TestIssue17ProbeNames: names past NAME_MAX are ENAMETOOLONG, looked up
// or created; a directory renamed into itself is EINVAL; a self-rename
// changes nothing.
func TestIssue17ProbeNames(t *testing.T) {
	dir, _ := newStoreMount(t)
	long := filepath.Join(dir, strings.Repeat("n", 256))
	if _, err := os.Lstat(long); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("lstat of a 256-byte name: %v", err)
	}
	if err := os.WriteFile(long, nil, 0o644); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("create of a 256-byte name: %v", err)
	}
	if err := os.Mkdir(long, 0o755); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Errorf("mkdir of a 256-byte name: %v", err)
	}
	ok := filepath.Join(dir, strings.Repeat("n", 255))
	if err := os.WriteFile(ok, []byte("x"), 0o644); err != nil {
		t.Errorf("create of a 255-byte name: %v", err)
	}
	d := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(d, filepath.Join(d, "sub", "d")); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("rename into itself: %v", err)
	}
	if err := os.Rename(ok, ok); err != nil {
		t.Errorf("self-rename: %v", err)
	}
	if b, err := os.ReadFile(ok); err != nil || string(b) != "x" {
		t.Errorf("after self-rename: %q, %v", b, err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(loop); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("read through a symlink loop: %v", err)
	}
	// Decorated paths resolve as the kernel resolves them.
	for _, p := range []string{"d/../" + filepath.Base(ok), "./d/.//../" + filepath.Base(ok), "d/sub/../../" + filepath.Base(ok)} {
		if b, err := os.ReadFile(filepath.Join(dir, "") + "/" + p); err != nil || string(b) != "x" {
			t.Errorf("read %s: %q, %v", p, b, err)
		}
	}
	if _, err := os.ReadFile(ok + "/"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("read with a trailing slash: %v", err)
	}
	if err := os.Remove(d); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("rmdir of a full directory: %v", err)
	}
	if err := syscall.Unlink(d); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("unlink of a directory: %v", err)
	}
	if err := syscall.Rmdir(ok); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("rmdir of a file: %v", err)
	}
}

// TestIssue17ProbeOpenFiles: an open file follows a rename, stays
// readable and writable once removed (with 0 links), and O_APPEND from
// two descriptors appends both.
func TestIssue17ProbeOpenFiles(t *testing.T) {
	dir, s := newStoreMount(t)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	f, err := os.OpenFile(a, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("after rename"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(b); err != nil || string(got) != "after rename" {
		t.Errorf("b: %q, %v", got, err)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("!"), 0); err != nil {
		t.Errorf("write to a removed file: %v", err)
	}
	buf := make([]byte, 12)
	if n, err := f.ReadAt(buf, 0); n != 12 || string(buf) != "!fter rename" {
		t.Errorf("read of a removed file: %q, %v", buf[:n], err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 {
		t.Errorf("fstat of a removed file: nlink %d, %v", st.Nlink, err)
	}
	if _, err := s.Stat("b"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the store still has b: %v", err)
	}

	log := filepath.Join(dir, "log")
	var fds []*os.File
	for range 2 {
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fds = append(fds, f)
	}
	var want bytes.Buffer
	for i := range 10 {
		line := fmt.Sprintf("line %d\n", i)
		if _, err := fds[i%2].WriteString(line); err != nil {
			t.Fatal(err)
		}
		want.WriteString(line)
	}
	if got, err := os.ReadFile(log); err != nil || string(got) != want.String() {
		t.Errorf("appended from two descriptors:\n%s\nwant:\n%s (%v)", got, want.String(), err)
	}
}

// TestIssue17ProbeSizes: a sparse write far out and a truncate to a
// large size cost no memory in proportion, and read back as zeros.
func TestIssue17ProbeSizes(t *testing.T) {
	dir, _ := newStoreMount(t)
	p := filepath.Join(dir, "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const far = 1 << 40
	if _, err := f.WriteAt([]byte("end"), far); err != nil {
		t.Fatalf("write at 1 TiB: %v", err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Size() != far+3 {
		t.Fatalf("size %d, %v", fi.Size(), err)
	}
	buf := make([]byte, 8)
	if _, err := f.ReadAt(buf, far-5); err != nil || string(buf) != "\x00\x00\x00\x00\x00end" {
		t.Errorf("read around 1 TiB: %q, %v", buf, err)
	}
	if err := f.Truncate(1 << 41); err != nil {
		t.Errorf("truncate to 2 TiB: %v", err)
	}
	if err := f.Truncate(-1); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("truncate to -1: %v", err)
	}
}

// TestIssue17ProbeReadersBesideWriters: programs reading a directory and
// files while others change them through the mount see no error but
// ENOENT for names removed meanwhile, and the tree ends right.
func TestIssue17ProbeReadersBesideWriters(t *testing.T) {
	m := mem.New()
	dir, _ := mountT(t, m, nil)
	const n = 200
	var writers, reader sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range n {
				p := filepath.Join(dir, fmt.Sprintf("w%d-%d", w, i))
				if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i)}, i*10), 0o644); err != nil {
					errs <- err
					return
				}
				if i%3 == 0 {
					if err := os.Remove(p); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	done := make(chan struct{})
	reader.Add(1)
	go func() {
		defer reader.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				errs <- err
				return
			}
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					errs <- err
					return
				}
				// A file is written whole by one call: a reader sees
				// it empty or whole, of one byte value.
				if len(b) > 0 && !bytes.Equal(b, bytes.Repeat(b[:1], len(b))) {
					errs <- fmt.Errorf("%s: mixed bytes", e.Name())
					return
				}
			}
		}
	}()
	writers.Wait()
	close(done)
	reader.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := 2 * (n - (n+2)/3)
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != want {
		t.Errorf("%d entries, want %d, %v", len(entries), want, err)
	}
}
