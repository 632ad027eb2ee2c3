package mem_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer/mem"
)

// TestIssue19In: OpenFileIn and RemoveIn act on the entry of a directory
// handle as OpenFile and Remove do on its path, refuse what is not one
// element, a symlink, a handle on a removed directory or on a file, and
// follow a directory moved since, as a descriptor does.
func TestIssue19In(t *testing.T) {
	f := mem.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.MkdirAll("d/sub", 0o755))
	must(f.WriteFile("d/sub/x", []byte("x"), 0o644))
	must(f.WriteFile("d/f", []byte("old"), 0o644))
	must(f.Symlink("f", "d/link"))
	d, err := f.LookupAt(nil, "d")
	must(err)

	w, err := f.OpenFileIn(d.Dir, "new", "d/new", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	must(err)
	if _, err := io.WriteString(w, "hello"); err != nil {
		t.Fatal(err)
	}
	must(w.Close())
	if b, err := f.ReadFile("d/new"); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile(d/new) = %q, %v", b, err)
	}
	if fi, err := f.Stat("d/new"); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("Stat(d/new) = %v, %v; want mode 0640", fi, err)
	}
	w, err = f.OpenFileIn(d.Dir, "f", "d/f", os.O_WRONLY|os.O_TRUNC, 0)
	must(err)
	must(w.Close())
	if b, _ := f.ReadFile("d/f"); len(b) != 0 {
		t.Fatalf("d/f after O_TRUNC holds %q", b)
	}

	for _, c := range []struct {
		name string
		flag int
		want error
	}{
		{"new", os.O_RDWR | os.O_CREATE | os.O_EXCL, fs.ErrExist},
		{"missing", os.O_RDONLY, fs.ErrNotExist},
		{"link", os.O_RDONLY, syscall.ELOOP},
		{"sub", os.O_WRONLY, syscall.EISDIR},
		{"sub/x", os.O_RDONLY, fs.ErrInvalid},
		{".", os.O_RDONLY, fs.ErrInvalid},
		{"..", os.O_RDONLY, fs.ErrInvalid},
		{"", os.O_RDONLY | os.O_CREATE, fs.ErrInvalid},
		{strings.Repeat("n", 256), os.O_RDWR | os.O_CREATE, syscall.ENAMETOOLONG},
	} {
		if _, err := f.OpenFileIn(d.Dir, c.name, "d/"+c.name, c.flag, 0o644); !errors.Is(err, c.want) {
			t.Errorf("OpenFileIn(d, %q, %#x) = %v, want %v", c.name, c.flag, err, c.want)
		}
	}
	if err := f.RemoveIn(d.Dir, "sub", "d/sub"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("RemoveIn(d, sub) = %v, want ENOTEMPTY", err)
	}
	if err := f.RemoveIn(d.Dir, "missing", "d/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemoveIn(d, missing) = %v, want ErrNotExist", err)
	}
	var pe *fs.PathError
	if err := f.RemoveIn(d.Dir, "missing", "d/missing"); !errors.As(err, &pe) || pe.Path != "d/missing" || pe.Op != "remove" {
		t.Errorf("RemoveIn(d, missing) = %#v, want a PathError of remove d/missing", err)
	}
	must(f.RemoveIn(d.Dir, "link", "d/link"))
	if _, err := f.Lstat("d/link"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lstat(d/link) after RemoveIn: %v", err)
	}
	file, err := f.LookupAt(d.Dir, "f")
	must(err)
	if _, err := f.OpenFileIn(file.Dir, "x", "d/f/x", os.O_RDONLY, 0); err == nil {
		t.Error("OpenFileIn on a file's handle succeeds")
	}

	// A moved directory's handle follows it; a removed one's fails.
	must(f.Rename("d", "e"))
	must(f.RemoveIn(d.Dir, "new", "e/new"))
	if _, err := f.Stat("e/new"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(e/new) after RemoveIn through d's handle: %v", err)
	}
	sub, err := f.LookupAt(d.Dir, "sub")
	must(err)
	must(f.RemoveAll("e/sub"))
	if _, err := f.OpenFileIn(sub.Dir, "y", "e/sub/y", os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenFileIn in a removed directory = %v, want ErrNotExist", err)
	}
	if err := f.RemoveIn(sub.Dir, "x", "e/sub/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RemoveIn in a removed directory = %v, want ErrNotExist", err)
	}
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestIssue19OpenAt: OpenAt opens a regular file of a directory handle for
// reading under the path it is given, refuses anything else with a bare
// error and no allocation for a miss, and sees the file as it is now.
func TestIssue19OpenAt(t *testing.T) {
	f := mem.New()
	for _, err := range []error{
		f.Mkdir("d", 0o755), f.Mkdir("d/sub", 0o755),
		f.WriteFile("d/f", []byte("data"), 0o644), f.Symlink("f", "d/link"),
		f.Whiteout("d/gone"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	d, err := f.LookupAt(nil, "d")
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.OpenAt(d.Dir, "f", "d/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile("d/f", []byte("newer"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(h)
	if err != nil || string(b) != "newer" {
		t.Fatalf("read through OpenAt = %q, %v; want the file as it is now", b, err)
	}
	if fi, err := h.Stat(); err != nil || fi.Name() != "f" || fi.Size() != 5 {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	h.Close()
	for name, want := range map[string]error{
		"missing": syscall.ENOENT, "sub": syscall.EISDIR, "link": syscall.ELOOP,
		"gone": syscall.EINVAL, "f/x": fs.ErrInvalid, ".": fs.ErrInvalid,
	} {
		if _, err := f.OpenAt(d.Dir, name, "d/"+name); err != want {
			t.Errorf("OpenAt(d, %q) = %v, want the bare %v", name, err, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { f.OpenAt(d.Dir, "missing", "d/missing") }); n != 0 {
		t.Errorf("OpenAt of a missing name: %v allocations, want 0", n)
	}
}

// TestWriteFileIn: WriteFileIn creates or truncates and writes the entry
// of a directory handle as WriteFile does its path, refuses what
// OpenFileIn refuses, does not keep the caller's buffer, and publishes
// the file whole: a reader beside it sees the old contents or the new,
// never an empty or partial file.
func TestWriteFileIn(t *testing.T) {
	f := mem.New()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.MkdirAll("d/sub", 0o755))
	must(f.WriteFile("d/f", []byte("old"), 0o644))
	must(f.Symlink("f", "d/link"))
	d, err := f.LookupAt(nil, "d")
	must(err)

	data := []byte("hello")
	must(f.WriteFileIn(d.Dir, "new", "d/new", data, 0o640))
	data[0] = 'j'
	if b, err := f.ReadFile("d/new"); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile(d/new) = %q, %v", b, err)
	}
	if fi, err := f.Stat("d/new"); err != nil || fi.Mode() != 0o640 {
		t.Fatalf("Stat(d/new) = %v, %v; want a file of mode 0640", fi, err)
	}
	must(f.WriteFileIn(d.Dir, "f", "d/f", []byte("x"), 0o600))
	if b, _ := f.ReadFile("d/f"); string(b) != "x" {
		t.Fatalf("d/f after WriteFileIn holds %q", b)
	}
	if fi, _ := f.Stat("d/f"); fi.Mode() != 0o644 {
		t.Fatalf("WriteFileIn over d/f changed its mode to %v", fi.Mode())
	}
	must(f.WriteFileIn(d.Dir, "f", "d/f", nil, 0o644))
	if b, _ := f.ReadFile("d/f"); len(b) != 0 {
		t.Fatalf("d/f after an empty WriteFileIn holds %q", b)
	}

	for _, c := range []struct {
		name string
		want error
	}{
		{"link", syscall.ELOOP},
		{"sub", syscall.EISDIR},
		{"sub/x", fs.ErrInvalid},
		{".", fs.ErrInvalid},
		{"..", fs.ErrInvalid},
		{"", fs.ErrInvalid},
		{strings.Repeat("n", 256), syscall.ENAMETOOLONG},
	} {
		err := f.WriteFileIn(d.Dir, c.name, "d/"+c.name, []byte("y"), 0o644)
		var pe *fs.PathError
		if !errors.Is(err, c.want) || !errors.As(err, &pe) || pe.Op != "open" || pe.Path != "d/"+c.name {
			t.Errorf("WriteFileIn(d, %q) = %v, want a PathError of open wrapping %v", c.name, err, c.want)
		}
	}
	if b, _ := f.ReadFile("d/f"); len(b) != 0 {
		t.Fatalf("a refused WriteFileIn through d/link wrote d/f: %q", b)
	}
	sub, err := f.LookupAt(d.Dir, "sub")
	must(err)
	must(f.RemoveAll("d/sub"))
	if err := f.WriteFileIn(sub.Dir, "y", "d/sub/y", nil, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFileIn in a removed directory = %v, want ErrNotExist", err)
	}

	// A reader beside the writer sees one of the two contents, whole.
	a, b := strings.Repeat("a", 3000), strings.Repeat("b", 5000)
	must(f.WriteFile("d/w", []byte(a), 0o644))
	done := make(chan struct{})
	errs := make(chan string, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			got, err := f.ReadFile("d/w")
			if err != nil || (string(got) != a && string(got) != b) {
				errs <- fmt.Sprintf("reader saw %d bytes, %v", len(got), err)
				return
			}
		}
	}()
	for i := range 2000 {
		must(f.WriteFileIn(d.Dir, "w", "d/w", []byte([]string{a, b}[i%2]), 0o644))
	}
	close(done)
	if msg, ok := <-errs; ok {
		t.Fatal(msg)
	}
	must(f.Check())
}

// TestReadFileAt: ReadFileAt of the live layer and of a snapshot returns a
// copy of a regular file of a directory handle, as ReadFile returns its
// path's (the live layer's as it is now, the snapshot's as it was), and
// refuses anything else with OpenAt's bare errors and no allocation for a
// miss.
func TestReadFileAt(t *testing.T) {
	f := mem.New()
	for _, err := range []error{
		f.Mkdir("d", 0o755), f.Mkdir("d/sub", 0o755),
		f.WriteFile("d/f", []byte("data"), 0o644), f.Symlink("f", "d/link"),
		f.Whiteout("d/gone"), f.WriteFile("top", []byte("root"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	snap := f.Snapshot()
	if err := f.WriteFile("d/f", []byte("newer"), 0o644); err != nil {
		t.Fatal(err)
	}
	type readerAt interface {
		LookupAt(dir pathwalk.Dir, name string) (pathwalk.Entry, error)
		ReadFileAt(dir pathwalk.Dir, name, path string) ([]byte, error)
	}
	for _, c := range []struct {
		what string
		fsys readerAt
		want string
	}{{"live", f, "newer"}, {"snapshot", snap, "data"}} {
		d, err := c.fsys.LookupAt(nil, "d")
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.fsys.ReadFileAt(d.Dir, "f", "d/f")
		if err != nil || string(b) != c.want {
			t.Errorf("%s: ReadFileAt(d, f) = %q, %v; want %q", c.what, b, err, c.want)
		}
		b[0] = 'X' // a copy: the layer's content stays
		if b, err := c.fsys.ReadFileAt(d.Dir, "f", "d/f"); err != nil || string(b) != c.want {
			t.Errorf("%s: ReadFileAt after changing a copy = %q, %v", c.what, b, err)
		}
		if b, err := c.fsys.ReadFileAt(nil, "top", "top"); err != nil || string(b) != "root" {
			t.Errorf("%s: ReadFileAt(root, top) = %q, %v", c.what, b, err)
		}
		for name, want := range map[string]error{
			"missing": syscall.ENOENT, "sub": syscall.EISDIR, "link": syscall.ELOOP,
			"gone": syscall.EINVAL, "f/x": fs.ErrInvalid, ".": fs.ErrInvalid, "": fs.ErrInvalid,
			strings.Repeat("n", 256): syscall.ENAMETOOLONG,
		} {
			if _, err := c.fsys.ReadFileAt(d.Dir, name, "d/"+name); err != want {
				t.Errorf("%s: ReadFileAt(d, %q) = %v, want the bare %v", c.what, name, err, want)
			}
		}
		if n := testing.AllocsPerRun(100, func() { c.fsys.ReadFileAt(d.Dir, "missing", "d/missing") }); n != 0 {
			t.Errorf("%s: ReadFileAt of a missing name: %v allocations, want 0", c.what, n)
		}
	}
}
