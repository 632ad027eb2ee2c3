package packfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// issue19Pack returns a pack holding d/low, r (at the root) and m/low,
// for unions whose upper layer holds d or m too.
func issue19Pack(t *testing.T) *packreader.Reader {
	t.Helper()
	l := mem.New()
	for _, err := range []error{
		l.Mkdir("d", 0o755), l.Mkdir("m", 0o755),
		l.WriteFile("d/low", []byte("lower d"), 0o644),
		l.WriteFile("m/low", []byte("lower m"), 0o644),
		l.WriteFile("r", []byte("lower r"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Join(t.TempDir(), "lower.pack")
	if err := packwriter.WriteFile(name, l.Snapshot()); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func wantSize(t *testing.T, fsys fs.FS, name string, size int64) {
	t.Helper()
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != size {
		t.Fatalf("Stat(%q).Size() = %d, want %d", name, fi.Size(), size)
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil || int64(len(b)) != size {
		t.Fatalf("ReadFile(%q) = %d bytes, %v; want %d", name, len(b), err, size)
	}
}

// TestIssue19CachedDirSeesHandleWrites: the read path keeps a merged
// directory's handles across reads; a write through an open file after a
// snapshot replaces the upper layer's entries above it, and the next read
// must see it, not the entries the handles were taken from.
func TestIssue19CachedDirSeesHandleWrites(t *testing.T) {
	up := mem.New()
	u := packfs.New(up, issue19Pack(t))
	f, err := u.OpenFile("m/new", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := u.Snapshot(); err != nil {
		t.Fatal(err)
	}
	wantSize(t, u, "m/new", 0) // the directory m is cached
	wantSize(t, u, "m/low", 7)
	if _, err := f.WriteAt([]byte("pdx"), 14); err != nil {
		t.Fatal(err)
	}
	wantSize(t, u, "m/new", 17)
	wantSize(t, u, "m/low", 7)
}

// TestIssue19CachedDirFollowsWrites: every change the union makes shows
// at the next read of a name at the root and in a merged directory: a
// copy-up, a removal (whiteout), a directory replacing a file, a symlink,
// and a rename of the merged directory itself.
func TestIssue19CachedDirFollowsWrites(t *testing.T) {
	u := packfs.New(mem.New(), issue19Pack(t))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(u.WriteFile("m/up", []byte("u"), 0o644))
	for _, n := range []string{"r", "m/low", "m/up"} {
		if _, err := u.Stat(n); err != nil {
			t.Fatal(err)
		}
	}
	must(u.WriteFile("m/low", []byte("copied up"), 0o644))
	wantSize(t, u, "m/low", 9)
	must(u.WriteFile("r", []byte("rr"), 0o644))
	wantSize(t, u, "r", 2)
	must(u.Remove("m/low"))
	if _, err := u.Stat("m/low"); !os.IsNotExist(err) {
		t.Fatalf("Stat(m/low) after Remove: %v, want ErrNotExist", err)
	}
	must(u.Remove("m/up"))
	must(u.Mkdir("m/up", 0o755))
	if fi, err := u.Stat("m/up"); err != nil || !fi.IsDir() {
		t.Fatalf("Stat(m/up) = %v, %v; want a directory", fi, err)
	}
	must(u.Symlink("../d/low", "m/link"))
	wantSize(t, u, "m/link", 7)
	must(u.Rename("m", "n"))
	if _, err := u.Stat("m/link"); !os.IsNotExist(err) {
		t.Fatalf("Stat(m/link) after renaming m: %v, want ErrNotExist", err)
	}
	wantSize(t, u, "n/link", 7)
}

// TestIssue19FastPathsAllocate: a small-file read of a lower file through
// the union, at the root, in a directory of the lower alone and in a
// merged one, costs a fixed, small number of allocations (it cost 8 to
// 15 when every read walked every layer, 3 before the pack opened in its
// lookup): one, the union's handle with the pack's inside, as many as the
// pack's own Open+Read+Close.
func TestIssue19FastPathsAllocate(t *testing.T) {
	up := mem.New()
	u := packfs.New(up, issue19Pack(t))
	if err := u.WriteFile("m/up", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for _, name := range []string{"r", "d/low", "m/low"} {
		read := func() {
			f, err := u.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			for {
				if _, err := f.Read(buf); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			f.Close()
		}
		read()
		if n := testing.AllocsPerRun(100, read); n > 1 {
			t.Errorf("Open+Read+Close(%q): %v allocations, want at most 1", name, n)
		}
		if n := testing.AllocsPerRun(100, func() { u.Stat(name) }); n > 1 {
			t.Errorf("Stat(%q): %v allocations, want at most 1", name, n)
		}
	}
}

// TestIssue19CachedDirStructure: writes that change which layers merge
// into a directory (removing one and making a file or an opaque directory
// in its place, copying one up) show at once through the directory cache
// of both readers and writers.
func TestIssue19CachedDirStructure(t *testing.T) {
	l := mem.New()
	for _, err := range []error{
		l.Mkdir("m", 0o755), l.Mkdir("m/ld", 0o755), l.Mkdir("lo", 0o755),
		l.WriteFile("m/ld/f", []byte("lower"), 0o644),
		l.WriteFile("lo/f", []byte("lower"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	name := filepath.Join(t.TempDir(), "lower.pack")
	if err := packwriter.WriteFile(name, l.Snapshot()); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	u := packfs.New(mem.New(), r)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	gone := func(name string) {
		t.Helper()
		if _, err := u.Stat(name); err == nil {
			t.Fatalf("Stat(%q) succeeds, want an error", name)
		}
		if _, err := u.ReadFile(name); err == nil {
			t.Fatalf("ReadFile(%q) succeeds, want an error", name)
		}
	}
	must(u.WriteFile("m/up", nil, 0o644)) // m merges both layers now
	wantSize(t, u, "m/ld/f", 5)
	must(u.RemoveAll("m/ld"))
	gone("m/ld/f")
	must(u.Mkdir("m/ld", 0o755)) // opaque: the lower f stays hidden
	gone("m/ld/f")
	must(u.WriteFile("m/ld/g", []byte("g"), 0o644))
	wantSize(t, u, "m/ld/g", 1)
	gone("m/ld/f")
	must(u.Remove("m/ld/g"))
	must(u.Remove("m/ld"))
	must(u.WriteFile("m/ld", []byte("file"), 0o644)) // a file where the directory was
	wantSize(t, u, "m/ld", 4)
	gone("m/ld/f")
	gone("m/ld/g")

	wantSize(t, u, "lo/f", 5) // lo is the lower's alone
	must(u.WriteFile("lo/new", []byte("new"), 0o644))
	wantSize(t, u, "lo/new", 3)
	wantSize(t, u, "lo/f", 5)
	must(u.Remove("lo/f"))
	gone("lo/f")
	wantSize(t, u, "lo/new", 3)
}

// TestIssue19CachedDirReadersBesideWriter runs readers of names in a
// merged directory while a writer creates, removes and replaces entries
// there and below it: a name the writer has finished with reads as the
// writer left it, for every reader.
func TestIssue19CachedDirReadersBesideWriter(t *testing.T) {
	u := packfs.New(mem.New(), issue19Pack(t))
	rounds := 300
	if testsize.Short() {
		rounds = 100
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 3 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if b, err := u.ReadFile("m/low"); err != nil || string(b) != "lower m" {
					errs <- fmt.Errorf("ReadFile(m/low) = %q, %v", b, err)
					return
				}
				u.Stat("m/x")
				u.Stat("m/x/y")
				u.ReadFile("r")
			}
		}()
	}
	for i := range rounds {
		steps := []error{
			u.WriteFile("m/x", []byte("file"), 0o644),
			u.Remove("m/x"),
			u.Mkdir("m/x", 0o755),
			u.WriteFile("m/x/y", []byte("y"), 0o644),
		}
		for _, err := range steps {
			if err != nil {
				t.Fatal(err)
			}
		}
		if b, err := u.ReadFile("m/x/y"); err != nil || string(b) != "y" {
			t.Fatalf("round %d: ReadFile(m/x/y) = %q, %v", i, b, err)
		}
		if err := u.RemoveAll("m/x"); err != nil {
			t.Fatal(err)
		}
		if _, err := u.Stat("m/x/y"); !os.IsNotExist(err) {
			t.Fatalf("round %d: Stat(m/x/y) after RemoveAll: %v", i, err)
		}
		if err := u.WriteFile("r", []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := u.ReadFile("r"); err != nil || string(b) != fmt.Sprint(i) {
			t.Fatalf("round %d: ReadFile(r) = %q, %v", i, b, err)
		}
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestIssue19CachedDirAliases: a directory reached through a symlink is
// never kept, so that a name through the link follows the link as it is
// now; names the kernel refuses are refused through the cached directory
// too.
func TestIssue19CachedDirAliases(t *testing.T) {
	u := packfs.New(mem.New(), issue19Pack(t))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(u.WriteFile("m/up", []byte("up"), 0o644))
	must(u.Symlink("m", "ln"))
	wantSize(t, u, "ln/low", 7)
	wantSize(t, u, "ln/up", 2)
	must(u.Remove("ln"))
	must(u.Symlink("d", "ln"))
	wantSize(t, u, "ln/low", 7)
	if b, err := u.ReadFile("ln/low"); err != nil || string(b) != "lower d" {
		t.Fatalf("ReadFile(ln/low) after relinking = %q, %v; want the lower d's", b, err)
	}
	if _, err := u.Stat("ln/up"); !os.IsNotExist(err) {
		t.Fatalf("Stat(ln/up) after relinking: %v, want ErrNotExist", err)
	}
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'a'
	}
	if _, err := u.Stat("m/" + string(long)); !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("Stat of a 256-byte name in m: %v, want ENAMETOOLONG", err)
	}
	if _, err := u.Stat("m/up/x"); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("Stat(m/up/x): %v, want ENOTDIR", err)
	}
}

// listCounter is a lower layer that counts its listings.
type listCounter struct {
	fs.FS
	lists int
}

func (l *listCounter) ReadDir(name string) ([]fs.DirEntry, error) {
	l.lists++
	return fs.ReadDir(l.FS, name)
}

func (l *listCounter) Stat(name string) (fs.FileInfo, error)  { return fs.Stat(l.FS, name) }
func (l *listCounter) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(l.FS, name) }
func (l *listCounter) ReadLink(name string) (string, error)   { return fs.ReadLink(l.FS, name) }

// TestIssue19FirstLookupLists: the first read below a directory of a
// lower layer looks the name up, and lists nothing (it listed the whole
// directory, which made a union's open and first lookup cost a ReadDir
// of every entry there).
func TestIssue19FirstLookupLists(t *testing.T) {
	low := &listCounter{FS: issue19Pack(t)}
	u := packfs.New(mem.New(), low)
	wantSize(t, u, "d/low", 7)
	f, err := u.Open("d/low")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if low.lists != 0 {
		t.Fatalf("reading d/low listed a lower directory %d times, want 0", low.lists)
	}
}

// TestIssue19OpenInLookup: a union over a pack opens a lower file at the
// root, in the lower's own directory and in a merged one in the pack's
// one lookup (OpenAt), and such a handle is still the union's: it reads
// the lower bytes, follows a copy-up, names the union path in errors;
// entries OpenAt refuses (a symlink, a directory) and names the upper
// layer shadows or whites out open as the slow path opens them.
func TestIssue19OpenInLookup(t *testing.T) {
	l := mem.New()
	for _, err := range []error{
		l.Mkdir("d", 0o755), l.Mkdir("m", 0o755),
		l.WriteFile("d/low", []byte("lower d"), 0o644),
		l.WriteFile("m/low", []byte("lower m"), 0o644),
		l.WriteFile("m/gone", []byte("lower gone"), 0o644),
		l.WriteFile("m/shadowed", []byte("lower shadowed"), 0o644),
		l.WriteFile("r", []byte("lower r"), 0o644),
		l.Symlink("d/low", "lnk"),
		l.Symlink("low", "m/lnk"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	u := packfs.New(mem.New(), packOf(t, l.Snapshot()))
	must(t, u.WriteFile("m/up", []byte("upper"), 0o644))
	must(t, u.WriteFile("m/shadowed", []byte("upper shadowed"), 0o644))
	must(t, u.Remove("m/gone"))
	for name, want := range map[string]string{
		"r": "lower r", "d/low": "lower d", "m/low": "lower m",
		"lnk": "lower d", "m/lnk": "lower m", "m/up": "upper", "m/shadowed": "upper shadowed",
	} {
		for range 2 { // the first read learns the directory, the second uses it
			f, err := u.Open(name)
			must(t, err)
			b, err := io.ReadAll(f)
			if err != nil || string(b) != want {
				t.Errorf("Open(%s) reads %q, %v; want %q", name, b, err, want)
			}
			must(t, f.Close())
		}
	}
	if _, err := u.Open("m/gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(m/gone) after Remove: %v, want ErrNotExist", err)
	}
	if f, err := u.Open("d"); err != nil {
		t.Errorf("Open(d): %v", err)
	} else if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		t.Errorf("Open(d).Stat() = %v, %v; want a directory", fi, err)
	} else {
		f.Close()
	}
	for _, name := range []string{"r", "d/low", "m/low"} {
		h, err := u.Open(name)
		must(t, err)
		if _, err := h.(io.Writer).Write([]byte("x")); !errors.Is(err, syscall.EBADF) {
			t.Errorf("Write to the read-only handle of %s: %v, want EBADF", name, err)
		} else if pe, ok := err.(*fs.PathError); !ok || pe.Path != name {
			t.Errorf("Write to the read-only handle of %s: %v, want the union's path", name, err)
		}
		f, err := u.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.Write([]byte("+upper"))
		must(t, err)
		must(t, f.Close())
		b, err := io.ReadAll(h)
		if want := "lower " + name[:1] + "+upper"; err != nil || string(b) != want {
			t.Errorf("handle of %s opened before the copy-up reads %q, %v; want %q", name, b, err, want)
		}
		must(t, h.Close())
	}
}

// TestIssue19WatchBuckets: the open handles of lower files share hash
// buckets (more files than buckets, several handles a file, opened by the
// fast paths and the slow one): a copy-up moves exactly the handles of
// its own file, at their offsets, and a closed handle is left alone.
func TestIssue19WatchBuckets(t *testing.T) {
	const files = 700
	l := mem.New()
	must(t, l.Mkdir("d", 0o755))
	must(t, l.Symlink("d", "alias"))
	for i := range files {
		must(t, l.WriteFile(fmt.Sprintf("d/f%d", i), []byte(fmt.Sprintf("lower %d", i)), 0o644))
	}
	u := packfs.New(mem.New(), packOf(t, l.Snapshot()))
	type handle struct {
		f    fs.File
		i    int
		skip int // bytes read before the copy-up
	}
	var open []handle
	for i := range files {
		name := fmt.Sprintf("d/f%d", i)
		for k := range 2 {
			if k == 1 && i%5 == 0 {
				name = fmt.Sprintf("alias/f%d", i) // the slow path
			}
			f, err := u.Open(name)
			must(t, err)
			if _, err := f.Read(make([]byte, k)); err != nil && k > 0 {
				t.Fatal(err)
			}
			open = append(open, handle{f, i, k})
		}
	}
	closed := open[len(open)-2:] // the last file's handles, closed before its copy-up
	for _, h := range closed {
		must(t, h.f.Close())
	}
	for i := 0; i < files; i += 3 {
		f, err := u.OpenFile(fmt.Sprintf("d/f%d", i), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.Write([]byte("+up"))
		must(t, err)
		must(t, f.Close())
	}
	if (files-1)%3 != 0 {
		t.Fatal("the closed handles' file must be copied up")
	}
	for _, h := range open[:len(open)-2] {
		want := fmt.Sprintf("lower %d", h.i)
		if h.i%3 == 0 {
			want += "+up"
		}
		b, err := io.ReadAll(h.f)
		if err != nil || string(b) != want[h.skip:] {
			t.Errorf("handle of d/f%d after %d bytes reads %q, %v; want %q", h.i, h.skip, b, err, want[h.skip:])
		}
		must(t, h.f.Close())
	}
	for _, h := range closed {
		if _, err := h.f.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("a handle closed before the copy-up reads: %v, want ErrClosed", err)
		}
	}
}

// TestIssue19OpenAtStacked: over two packs, and in a read-only union of a
// pack alone, a read opens the topmost layer's file: a name only the
// lower pack holds opens there after the upper pack's open missed (in the
// same room), a name both hold opens in the upper pack, a whiteout in the
// upper pack hides the lower's file, and a closed pack's error is the
// union's.
func TestIssue19OpenAtStacked(t *testing.T) {
	a, b := mem.New(), mem.New()
	for _, err := range []error{
		a.Mkdir("m", 0o755), b.Mkdir("m", 0o755),
		a.WriteFile("both", []byte("a"), 0o644), b.WriteFile("both", []byte("b"), 0o644),
		a.WriteFile("m/both", []byte("a m"), 0o644), b.WriteFile("m/both", []byte("b m"), 0o644),
		b.WriteFile("onlyb", []byte("b only"), 0o644), b.WriteFile("m/onlyb", []byte("b m only"), 0o644),
		b.WriteFile("hidden", []byte("b hidden"), 0o644), b.WriteFile("m/hidden", []byte("b m hidden"), 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(t, a.Whiteout("hidden"))
	must(t, a.Whiteout("m/hidden"))
	pa, pb := packOf(t, a.Snapshot()), packOf(t, b.Snapshot())
	u := packfs.New(mem.New(), pa, pb)
	for _, name := range []string{"hidden", "m/hidden"} {
		for range 2 {
			if _, err := u.Open(name); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Open(%s) under a whiteout of the upper pack: %v, want ErrNotExist", name, err)
			}
		}
	}
	for name, want := range map[string]string{
		"both": "a", "m/both": "a m", "onlyb": "b only", "m/onlyb": "b m only",
	} {
		for range 2 {
			f, err := u.Open(name)
			must(t, err)
			got, err := io.ReadAll(f)
			if err != nil || string(got) != want {
				t.Errorf("Open(%s) reads %q, %v; want %q", name, got, err, want)
			}
			must(t, f.Close())
		}
	}
	ro := packfs.New(nil, pb)
	for range 2 {
		f, err := ro.Open("m/onlyb")
		must(t, err)
		if got, err := io.ReadAll(f); err != nil || string(got) != "b m only" {
			t.Errorf("read-only union: %q, %v", got, err)
		}
		must(t, f.Close())
	}
	must(t, pb.Close())
	if _, err := u.Open("m/onlyb"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Open through a closed pack: %v, want ErrClosed", err)
	} else if pe, ok := err.(*fs.PathError); !ok || pe.Path != "m/onlyb" {
		t.Errorf("Open through a closed pack: %v, want the union's path", err)
	}
}

// TestIssue19WatchReadersBesideCopyUp: readers open, read and close lower
// files (at the root and in a directory) through the fast paths while a
// writer copies them up by appending: every read sees the lower bytes,
// with or without the append, never anything else (a handle moved at the
// copy-up reads on at its offset).
func TestIssue19WatchReadersBesideCopyUp(t *testing.T) {
	const files = 64
	l := mem.New()
	must(t, l.Mkdir("d", 0o755))
	var names []string
	for i := range files {
		names = append(names, fmt.Sprintf("r%d", i), fmt.Sprintf("d/f%d", i))
	}
	for _, name := range names {
		must(t, l.WriteFile(name, []byte("lower "+name), 0o644))
	}
	u := packfs.New(mem.New(), packOf(t, l.Snapshot()))
	done := make(chan struct{})
	errs := make(chan error, 4)
	for r := range 3 {
		go func() {
			for k := 0; ; k++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				name := names[(k*7+r)%len(names)]
				f, err := u.Open(name)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(f)
				f.Close()
				if got, want := string(b), "lower "+name; err != nil || (got != want && got != want+"+up") {
					errs <- fmt.Errorf("read %s: %q, %v", name, got, err)
					return
				}
			}
		}()
	}
	for _, name := range names {
		f, err := u.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.Write([]byte("+up"))
		must(t, err)
		must(t, f.Close())
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// rootLookups is a lower layer that counts its lookups at the root.
type rootLookups struct {
	*packreader.Reader
	n int
}

func (r *rootLookups) LookupAt(dir pathwalk.Dir, name string) (pathwalk.Entry, error) {
	if dir == nil {
		r.n++
	}
	return r.Reader.LookupAt(dir, name)
}

// TestIssue19RmdirKeepsCache: removing an empty directory that only the
// upper layer holds leaves the directory cache in place (it cleared it,
// and the next name in a merged directory walked every layer again from
// the root), and the removed directory's own cached node is refused:
// names below a directory removed and made again read as they are now.
func TestIssue19RmdirKeepsCache(t *testing.T) {
	low := &rootLookups{Reader: issue19Pack(t)}
	u := packfs.New(mem.New(), low)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(u.WriteFile("m/up", nil, 0o644)) // m merges both layers
	must(u.Mkdir("m/x", 0o755))
	must(u.WriteFile("m/x/f", []byte("f"), 0o644))
	wantSize(t, u, "m/x/f", 1) // m/x is cached
	must(u.Remove("m/x/f"))
	must(u.Remove("m/x"))
	for _, name := range []string{"m/x", "m/x/f"} {
		if _, err := u.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat(%q) after Remove(m/x): %v, want ErrNotExist", name, err)
		}
	}
	must(u.Mkdir("m/x", 0o755))
	must(u.WriteFile("m/x/g", []byte("gg"), 0o644))
	wantSize(t, u, "m/x/g", 2)
	if _, err := u.Stat("m/x/f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(m/x/f) in the new m/x: %v, want ErrNotExist", err)
	}
	if es, err := u.ReadDir("m/x"); err != nil || len(es) != 1 || es[0].Name() != "g" {
		t.Fatalf("ReadDir(m/x) = %v, %v; want [g]", es, err)
	}
	// Directories made and removed in m, with reads beside them, look
	// m up at the root no more: it stays cached.
	wantSize(t, u, "m/low", 7)
	low.n = 0
	for i := range 10 {
		d := fmt.Sprintf("m/y%d", i)
		must(u.Mkdir(d, 0o755))
		must(u.Remove(d))
		wantSize(t, u, "m/low", 7)
	}
	if low.n != 0 {
		t.Errorf("10 rmdirs in m with reads beside: %d lookups at the lower's root, want 0", low.n)
	}
}

// TestIssue19OpenBesideWriter: opens of the upper layer's own files, which
// open in the lookup that finds them, and writes that open and remove
// entries through the directory's handle, run beside each other: a read
// gives one of the contents the name has held (the lower file, through a
// symlink; nothing, between a WriteFile's create and its write) or an error, and after the writer is done every name reads as
// it left it.
func TestIssue19OpenBesideWriter(t *testing.T) {
	u := packfs.New(mem.New(), issue19Pack(t))
	rounds := 200
	if testsize.Short() {
		rounds = 50
	}
	// WriteFile opens and then writes, as os's does: a reader between the
	// two sees the file empty, as on Linux.
	valid := map[string]bool{"": true, "one": true, "two": true, "lower m": true}
	done := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				for _, name := range []string{"m/u", "top", "m/e/f"} {
					f, err := u.Open(name)
					if err != nil {
						continue
					}
					b, err := io.ReadAll(f)
					f.Close()
					if err == nil && !valid[string(b)] {
						errs <- fmt.Errorf("read %s: %q", name, b)
						return
					}
				}
			}
		}()
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for range rounds {
		must(u.WriteFile("m/u", []byte("one"), 0o644))
		must(u.WriteFile("top", []byte("two"), 0o644))
		must(u.Mkdir("m/e", 0o755))
		must(u.WriteFile("m/e/f", []byte("one"), 0o644))
		must(u.Remove("m/u"))
		must(u.Symlink("low", "m/u"))
		must(u.Remove("m/e/f"))
		must(u.Remove("m/e"))
		must(u.Remove("top"))
		must(u.Mkdir("top", 0o755))
		must(u.Remove("top"))
		must(u.Remove("m/u"))
		must(u.Mkdir("m/u", 0o755))
		must(u.Remove("m/u"))
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	must(u.WriteFile("m/u", []byte("two"), 0o644))
	wantSize(t, u, "m/u", 3)
	for _, name := range []string{"top", "m/e", "m/e/f"} {
		if _, err := u.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat(%q) = %v, want ErrNotExist", name, err)
		}
	}
	if _, err := u.Open("m/e/f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(m/e/f) = %v, want ErrNotExist", err)
	}
}
