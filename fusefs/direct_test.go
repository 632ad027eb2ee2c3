package fusefs_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"golang.org/x/sys/unix"
)

// writableTrees are the writable trees the direct-write tests mount: the
// in-memory layer and a durable store.
func writableTrees(t *testing.T) map[string]fs.FS {
	s, err := packfs.Open(filepath.Join(t.TempDir(), "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return map[string]fs.FS{"mem": mem.New(), "store": s}
}

// directCases are the programs TestIssue17DirectWrites runs, each in a
// directory and in a process of its own; each returns what it read.
var directCases = map[string]func(t reporter, dir string) []byte{
	"readback": func(t reporter, dir string) []byte {
		f, err := os.Create(filepath.Join(dir, "f"))
		must(t, err)
		defer f.Close()
		for _, s := range []string{"hello ", "direct ", "world"} {
			_, err := f.WriteString(s)
			must(t, err)
		}
		buf := make([]byte, 64)
		n, err := f.ReadAt(buf, 0)
		if err != io.EOF {
			must(t, err)
		}
		fi, err := f.Stat()
		must(t, err)
		if fi.Size() != int64(n) {
			t.Errorf("size %d after reading %d bytes back", fi.Size(), n)
		}
		return buf[:n]
	},
	"append": func(t reporter, dir string) []byte {
		p := filepath.Join(dir, "f")
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		must(t, err)
		for _, s := range []string{"a", "bc", "def"} {
			_, err := f.WriteString(s)
			must(t, err)
		}
		must(t, f.Close())
		// Not empty now: an open through the page cache.
		f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.WriteString("g")
		must(t, err)
		must(t, f.Close())
		b, err := os.ReadFile(p)
		must(t, err)
		return b
	},
	"sparse": func(t reporter, dir string) []byte {
		// A write far past the end leaves a hole.
		f, err := os.Create(filepath.Join(dir, "f"))
		must(t, err)
		defer f.Close()
		_, err = f.WriteAt([]byte("far"), 1<<33)
		must(t, err)
		fi, err := f.Stat()
		must(t, err)
		got := make([]byte, 8)
		_, err = f.ReadAt(got, 1<<33-5)
		if err != io.EOF {
			must(t, err)
		}
		return append(got, fmt.Sprint(fi.Size())...)
	},
	"copy": func(t reporter, dir string) []byte {
		// io.Copy between files: copy_file_range, splice or sendfile
		// into the file written past the cache.
		src := filepath.Join(t.TempDir(), "src")
		want := bytes.Repeat([]byte("copy me "), 40000)
		must(t, os.WriteFile(src, want, 0o644))
		r, err := os.Open(src)
		must(t, err)
		defer r.Close()
		w, err := os.Create(filepath.Join(dir, "f"))
		must(t, err)
		_, err = io.Copy(w, r)
		must(t, err)
		must(t, w.Close())
		b, err := os.ReadFile(filepath.Join(dir, "f"))
		must(t, err)
		return b
	},
	"readers": func(t reporter, dir string) []byte {
		// A reader and a mapping hold the old bytes in the page
		// cache when a descriptor truncates the file and writes new
		// ones; both see the new.
		const n = 3 * 4096
		p := filepath.Join(dir, "f")
		must(t, os.WriteFile(p, bytes.Repeat([]byte("A"), n), 0o644))
		r, err := os.Open(p)
		must(t, err)
		defer r.Close()
		old, err := io.ReadAll(r)
		must(t, err)
		if len(old) != n {
			t.Fatalf("read %d bytes, want %d", len(old), n)
		}
		mapped, err := unix.Mmap(int(r.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
		must(t, err)
		defer unix.Munmap(mapped)
		_ = mapped[n-1] // in the page cache
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
		must(t, err)
		_, err = w.Write(bytes.Repeat([]byte("B"), n))
		must(t, err)
		got := make([]byte, n)
		_, err = r.ReadAt(got, 0)
		must(t, err)
		if !bytes.Equal(got, mapped) {
			t.Errorf("read %q..., the mapping holds %q...", got[:8], mapped[:8])
		}
		must(t, w.Close())
		return got
	},
	"mmap": func(t reporter, dir string) []byte {
		// A shared mapping of the descriptor written, beside its
		// writes: each sees the other's bytes.
		const page = 4096
		p := filepath.Join(dir, "f")
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		must(t, err)
		defer f.Close()
		must(t, f.Truncate(3*page))
		m, err := unix.Mmap(int(f.Fd()), 0, 3*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		must(t, err)
		defer unix.Munmap(m)
		copy(m[:page], bytes.Repeat([]byte("M"), page))
		_, err = f.WriteAt(bytes.Repeat([]byte("W"), page), page)
		must(t, err)
		if !bytes.Equal(m[page:2*page], bytes.Repeat([]byte("W"), page)) {
			t.Errorf("the mapping holds %q... where the descriptor wrote", m[page:page+8])
		}
		head := make([]byte, page)
		_, err = f.ReadAt(head, 0)
		must(t, err)
		if !bytes.Equal(head, m[:page]) {
			t.Errorf("the descriptor reads %q... where the mapping wrote", head[:8])
		}
		copy(m[2*page:], bytes.Repeat([]byte("Z"), page))
		must(t, unix.Msync(m, unix.MS_SYNC))
		must(t, f.Sync())
		b, err := os.ReadFile(p)
		must(t, err)
		return b
	},
}

// TestIssue17DirectWrites: a file opened for writing while empty is
// written past the kernel's page cache (FOPEN_DIRECT_IO), and programs
// see what they see on Linux's own file systems: their reads back
// through the same descriptor, O_APPEND, other descriptors and mappings
// that cached the old bytes, and shared mappings of the file written.
// Each case runs in the mount and in a host directory, which must agree,
// in a process of its own (see TestMain).
func TestIssue17DirectWrites(t *testing.T) {
	for tree, fsys := range writableTrees(t) {
		t.Run(tree, func(t *testing.T) {
			mnt, _ := mountT(t, fsys, nil)
			for name := range directCases {
				t.Run(name, func(t *testing.T) {
					dir := filepath.Join(mnt, tree+"-"+name)
					must(t, os.Mkdir(dir, 0o755))
					want := runDirectCase(t, name, t.TempDir())
					if got := runDirectCase(t, name, dir); !bytes.Equal(got, want) {
						t.Errorf("through the mount: %q, on the host: %q", abbrev(got), abbrev(want))
					}
				})
			}
		})
	}
}

// TestMain runs one of directCases, named by $FUSEFS_DIRECT_CASE, in
// $FUSEFS_DIRECT_DIR, when they are set, and prints what it returns;
// else the tests. The cases map files of the mount, and a process must
// not touch a mapping of a mount it serves itself: a page fault there
// waits for the server, and so does a stop of the world for the garbage
// collector, which cannot stop the faulting thread, so the server never
// answers.
func TestMain(m *testing.M) {
	if name := os.Getenv("FUSEFS_DIRECT_CASE"); name != "" {
		c := &childReporter{}
		out := directCases[name](c, os.Getenv("FUSEFS_DIRECT_DIR"))
		c.cleanup()
		if c.failed {
			os.Exit(1)
		}
		os.Stdout.Write(out)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runDirectCase runs directCases[name] in dir in a new process of the
// test binary, and returns what it printed.
func runDirectCase(t *testing.T, name, dir string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "FUSEFS_DIRECT_CASE="+name, "FUSEFS_DIRECT_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("case %s in %s: %v\n%s", name, dir, err, stderr.Bytes())
	}
	return out
}

// reporter is what a case reports through: a *testing.T, or in the
// process that runs it, a childReporter.
type reporter interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	TempDir() string
}

// childReporter reports to standard error; Fatal ends the process.
type childReporter struct {
	failed bool
	temps  []string
}

func (c *childReporter) Helper() {}

func (c *childReporter) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	c.cleanup()
	os.Exit(1)
}

func (c *childReporter) Fatalf(format string, args ...any) { c.Fatal(fmt.Sprintf(format, args...)) }

func (c *childReporter) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	c.failed = true
}

func (c *childReporter) TempDir() string {
	dir, err := os.MkdirTemp("", "fusefs-direct-")
	if err != nil {
		c.Fatal(err)
	}
	c.temps = append(c.temps, dir)
	return dir
}

func (c *childReporter) cleanup() {
	for _, dir := range c.temps {
		os.RemoveAll(dir)
	}
}

// TestIssue17DirectWriteDurable: an fsync after writes past the page
// cache makes them durable in the store, as one after cached writes does.
func TestIssue17DirectWriteDurable(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "store")
	s, err := packfs.Open(storeDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir, _ := mountT(t, s, nil)
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<13) // 128 KiB: the log's large writes
	f, err := os.Create(filepath.Join(dir, "big"))
	must(t, err)
	defer f.Close()
	for i := 0; i < len(want); i += 40 << 10 {
		_, err := f.Write(want[i:min(i+40<<10, len(want))])
		must(t, err)
	}
	must(t, f.Sync())
	ro, err := packfs.Open(storeDir, &packfs.Options{ReadOnly: true})
	must(t, err)
	defer ro.Close()
	if got, err := ro.ReadFile("big"); err != nil || !bytes.Equal(got, want) {
		t.Errorf("after fsync, the store holds %d bytes (%v), want %d", len(got), err, len(want))
	}
}

func must(t reporter, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func abbrev(b []byte) []byte {
	if len(b) > 32 {
		return append(b[:32:32], "..."...)
	}
	return b
}
