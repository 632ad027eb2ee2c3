package packfs_test

// Hostile probes of the union's ReadFile of lower files through
// pathwalk.ReadFileAtFS (deeeb13): whatever the fast path answers must be
// what Open and ReadAll answer through the same union, what the union's
// own slow path answers, and (for plain names) what os answers on a real
// directory of the same tree.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// prfaClass names the outcome of a read: "=" and the content, or "!" and
// the first of the errors it is.
func prfaClass(b []byte, err error) string {
	if err == nil {
		return "=" + string(b)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"ENAMETOOLONG", syscall.ENAMETOOLONG},
		{"ELOOP", syscall.ELOOP},
		{"ENOTDIR", syscall.ENOTDIR},
		{"EISDIR", syscall.EISDIR},
		{"ENOENT", fs.ErrNotExist},
		{"EINVAL", syscall.EINVAL},
		{"ErrInvalid", fs.ErrInvalid},
		{"CORRUPT", packreader.ErrCorrupt},
		{"CLOSED", fs.ErrClosed},
		{"ENXIO", syscall.ENXIO}, // a whiteout (a device) read as a file
	} {
		if errors.Is(err, c.err) {
			return "!" + c.name
		}
	}
	return "!other: " + err.Error()
}

func prfaShort(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%s...(%d bytes)", s[:60], len(s))
	}
	return s
}

// prfaRead is ReadFile's outcome.
func prfaRead(fsys fs.FS, name string) string {
	return prfaClass(fs.ReadFile(fsys, name))
}

// prfaOpenRead is Open and ReadAll's outcome.
func prfaOpenRead(fsys fs.FS, name string) string {
	f, err := fsys.Open(name)
	if err != nil {
		return prfaClass(nil, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return prfaClass(b, err)
}

// prfaLower is one way to make a lower layer of a mem tree.
type prfaLower struct {
	what string
	make func(t *testing.T, m *mem.FS) fs.FS
}

func prfaMapped(t *testing.T, m *mem.FS, opts ...packwriter.Option) *packreader.Reader {
	t.Helper()
	name := filepath.Join(t.TempDir(), "l.pack")
	if err := packwriter.WriteFile(name, m.Snapshot(), opts...); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func prfaReaderAt(t *testing.T, m *mem.FS, opts ...packwriter.Option) *packreader.Reader {
	t.Helper()
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, m.Snapshot(), opts...); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var prfaLowers = []prfaLower{
	{"mem.FS", func(t *testing.T, m *mem.FS) fs.FS { return m }},
	{"mem.Snapshot", func(t *testing.T, m *mem.FS) fs.FS { return m.Snapshot() }},
	{"mapped pack", func(t *testing.T, m *mem.FS) fs.FS { return prfaMapped(t, m) }},
	{"mapped zstd pack", func(t *testing.T, m *mem.FS) fs.FS { return prfaMapped(t, m, packwriter.WithCompression(3)) }},
	{"pack v2 through ReaderAt", func(t *testing.T, m *mem.FS) fs.FS { return prfaReaderAt(t, m, packwriter.WithFormat(2)) }},
	{"pack through ReaderAt", func(t *testing.T, m *mem.FS) fs.FS { return prfaReaderAt(t, m) }},
	{"union snapshot over a pack", func(t *testing.T, m *mem.FS) fs.FS {
		s, err := packfs.New(mem.New(), prfaMapped(t, m)).Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func prfaDo(t *testing.T, errs ...error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("setup step %d: %v", i, err)
		}
	}
}

// prfaTree is a lower directory d with files, symlinks of every kind and
// chains of 40 and 41 links, mirrored on os for the plain semantics
// (noOS: the names os cannot hold or resolves otherwise).
type prfaTree struct {
	m     *mem.FS
	osDir string
	names []string // names to read through the union
	noOS  map[string]bool
}

func prfaBuildTree(t *testing.T) prfaTree {
	t.Helper()
	m := mem.New()
	osDir := t.TempDir()
	noOS := map[string]bool{}
	maxName := strings.Repeat("m", 255)
	big := bytes.Repeat([]byte("0123456789abcdef"), 80<<10) // 1.25 MiB: several zstd frames
	sparse := make([]byte, 200<<10)
	copy(sparse[150<<10:], "after the hole")
	files := map[string][]byte{
		"top":          []byte("top"),
		"d/f":          []byte("lower f"),
		"d/empty":      {},
		"d/big":        big,
		"d/" + maxName: []byte("name at NAME_MAX"),
		"d/.wh.plain":  []byte("a plain file whose name looks like OCI's whiteout"),
		"d/sub/g":      []byte("deeper"),
		"d/sub/sub2/h": []byte("deeper still"),
		"other/x":      []byte("other x"),
		// a regular file is no whiteout, whatever its name
		"other/" + layer.OpaqueName: []byte("a regular file named as the opaque marker"),
		"d/sub/sparsish":            sparse,
	}
	deep := "d"
	for i := range 30 {
		deep += fmt.Sprintf("/l%d", i)
	}
	files[deep+"/leaf"] = []byte("deep leaf")
	links := map[string]string{
		"d/link":       "f",
		"d/up":         "../top",
		"d/dirlink":    "sub",
		"d/dirslash":   "sub/",
		"d/fileslash":  "f/",
		"d/dangling":   "nowhere",
		"d/loop1":      "loop2",
		"d/loop2":      "loop1",
		"d/self":       "self",
		"d/tootherdir": "../other/x",
		"d/dotdot":     "..",
		"d/sub/back":   "../f",
		"d/sub/dotf":   "./../f",
		"d/toempty":    "empty",
	}
	// c0 -> c1 -> ... -> c44 -> f: reading ck follows 45-k links.
	for k := range 45 {
		target := fmt.Sprintf("c%d", k+1)
		if k == 44 {
			target = "f"
		}
		links[fmt.Sprintf("d/c%d", k)] = target
	}
	chroot := map[string]string{ // resolve inside the layer, not on os
		"d/abs":    "/top",
		"d/escape": "../../../../../top",
	}
	var dirs []string
	for name := range files {
		dirs = append(dirs, filepath.Dir(name))
	}
	for name := range links {
		dirs = append(dirs, filepath.Dir(name))
	}
	for _, d := range dirs {
		prfaDo(t, m.MkdirAll(d, 0o755), os.MkdirAll(filepath.Join(osDir, d), 0o755))
	}
	for name, b := range files {
		prfaDo(t, m.WriteFile(name, b, 0o644), os.WriteFile(filepath.Join(osDir, name), b, 0o644))
	}
	// a real hole in the sparse file of the mem tree
	f, err := m.OpenFile("d/holes", os.O_CREATE|os.O_WRONLY, 0o644)
	prfaDo(t, err)
	_, err = f.WriteAt([]byte("past a hole"), 300<<10)
	prfaDo(t, err, f.Close())
	holes := append(make([]byte, 300<<10), "past a hole"...)
	prfaDo(t, os.WriteFile(filepath.Join(osDir, "d/holes"), holes, 0o644))
	for name, target := range links {
		prfaDo(t, m.Symlink(target, name), os.Symlink(target, filepath.Join(osDir, name)))
	}
	for name, target := range chroot {
		prfaDo(t, m.Symlink(target, name))
		noOS[name] = true
	}
	// whiteouts in the lower: invisible through the union
	prfaDo(t, m.Whiteout("d/gone"), layer.MarkOpaque(m, "d/sub/sub2"))
	noOS["d/gone"], noOS["d/sub/sub2/"+layer.OpaqueName], noOS["d/"+layer.OpaqueName] = true, true, true

	var names []string
	for name := range files {
		names = append(names, name)
	}
	for name := range links {
		names = append(names, name)
	}
	for name := range chroot {
		names = append(names, name)
	}
	names = append(names, "d/holes", "other/"+layer.OpaqueName, "d/gone", "d/sub/sub2/"+layer.OpaqueName, "d/"+layer.OpaqueName,
		"d", "d/sub", "d/sub/sub2", deep, "d/none", "d/f/x", "d/link/x", "d/dirlink/g", "d/dirslash/g",
		"d/fileslash", "d/dotdot/top", "d/dotdot/d/f", "d/"+maxName+"/x", "d/"+strings.Repeat("m", 256),
		"d/"+strings.Repeat("m", 256)+"/x", "d/sub/"+strings.Repeat("n", 256),
		// names io/fs refuses: the union must refuse them, however the
		// directory was learned
		"d/f/", "d//f", "d/./f", "d/../d/f", "./d/f", "/d/f", "", ".", "d/", "d/f/.", "d/f/..", "d/sub/",
		"d/sub//g", "d/sub/./g", "d/sub/g/", "d/.", "d/..", "d/sub/.", "d/sub/..", deep+"/", deep+"/./leaf",
	)
	return prfaTree{m: m, osDir: osDir, names: names, noOS: noOS}
}

// TestProbeReadFileAtNamesAndLinks reads every name of a lower directory,
// plain and decorated, through unions over each kind of lower, twice (the
// second finds the directory learned), and wants ReadFile to answer as
// Open and ReadAll, and (for valid names os can hold) as os.ReadFile on the
// same tree: symlinks in, out and up, to directories, dangling, loops,
// chains of 40 links (followed) and 41 (ELOOP), names at NAME_MAX and one
// over, whiteouts and the opaque marker of the lower (invisible), and
// names io/fs refuses (ErrInvalid).
func TestProbeReadFileAtNamesAndLinks(t *testing.T) {
	tree := prfaBuildTree(t)
	osWant := map[string]string{}
	for _, name := range tree.names {
		if fs.ValidPath(name) && !tree.noOS[name] {
			osWant[name] = prfaClass(os.ReadFile(tree.osDir + "/" + name))
		}
	}
	for _, lower := range prfaLowers {
		low := lower.make(t, tree.m)
		for _, ro := range []bool{false, true} {
			var u *packfs.FS
			if ro {
				u = packfs.New(nil, low)
			} else {
				u = packfs.New(mem.New(), low)
			}
			for pass := range 3 {
				for _, name := range tree.names {
					got, viaOpen := prfaRead(u, name), prfaOpenRead(u, name)
					if got != viaOpen {
						t.Errorf("%s (read-only %v) pass %d: ReadFile(%q) = %s; Open+ReadAll = %s", lower.what, ro, pass, prfaShort(name), prfaShort(got), prfaShort(viaOpen))
					}
					if want, ok := osWant[name]; ok && got != want {
						t.Errorf("%s (read-only %v) pass %d: ReadFile(%q) = %s; os.ReadFile = %s", lower.what, ro, pass, prfaShort(name), prfaShort(got), prfaShort(want))
					}
					if !fs.ValidPath(name) && got != "!ErrInvalid" {
						t.Errorf("%s: ReadFile of the invalid name %q = %s, want ErrInvalid", lower.what, name, prfaShort(got))
					}
				}
				if pass == 1 && !ro {
					// An upper entry beside d (not in it): the union's
					// answers must not change.
					if err := u.WriteFile("beside", []byte("x"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The chroot links and the lower's whiteouts, by their rules.
			for name, want := range map[string]string{
				"d/abs":                          "=top",
				"d/escape":                       "=top",
				"d/gone":                         "!ENOENT",
				"d/" + layer.OpaqueName:          "!ENOENT",
				"d/sub/sub2/" + layer.OpaqueName: "!ENOENT",
			} {
				if got := prfaRead(u, name); got != want {
					t.Errorf("%s: ReadFile(%q) = %s, want %s", lower.what, name, prfaShort(got), want)
				}
			}
			// A copy: changing what ReadFile returned changes nothing.
			for _, name := range []string{"d/f", "d/big", "d/link", "d/sub/g"} {
				b, err := u.ReadFile(name)
				if err != nil || len(b) == 0 {
					t.Fatalf("%s: ReadFile(%q): %v", lower.what, name, err)
				}
				first := b[0]
				b[0] ^= 0xff
				if again, err := u.ReadFile(name); err != nil || again[0] != first {
					t.Errorf("%s: ReadFile(%q) returned bytes shared with the lower", lower.what, name)
				}
			}
			// An empty file reads as an empty, non-nil slice, as os.ReadFile and
			// io.ReadAll give.
			if b, err := u.ReadFile("d/empty"); err != nil || b == nil || len(b) != 0 {
				t.Errorf("%s (read-only %v): ReadFile(d/empty) = %#v, %v; want []byte{}, nil", lower.what, ro, b, err)
			}
		}
	}
}

// prfaLongTree is a mem tree holding a file whose path is longer than
// PATH_MAX, in a directory whose path is shorter: the directory was made
// under a short name and renamed to a long one, as on Linux.
func prfaLongTree(t *testing.T) (m *mem.FS, dir, name string) {
	m = mem.New()
	p := "a"
	prfaDo(t, m.Mkdir(p, 0o755))
	elem := strings.Repeat("e", 200)
	for len(p) < 3500 {
		p += "/" + elem
		prfaDo(t, m.Mkdir(p, 0o755))
	}
	base := strings.Repeat("f", 250)
	prfaDo(t, m.WriteFile(p+"/"+base, []byte("past PATH_MAX"), 0o644))
	long := strings.Repeat("L", 255)
	prfaDo(t, m.Rename("a", long))
	dir = long + p[1:]
	return m, dir, dir + "/" + base
}

// TestProbeReadFileAtPathMax: a name of PATH_MAX bytes or more fails with
// ENAMETOOLONG (pathwalk.MaxPath; os.ReadFile on Linux), even when its
// directory is shorter and one lower layer alone holds it, whatever the
// union learned before, and ReadFile answers as Open and ReadAll do.
func TestProbeReadFileAtPathMax(t *testing.T) {
	m, dir, name := prfaLongTree(t)
	if len(dir) >= 4096 || len(name) < 4096 {
		t.Fatalf("dir %d bytes, name %d", len(dir), len(name))
	}
	for _, lower := range []fs.FS{m, m.Snapshot()} {
		what := fmt.Sprintf("%T", lower)
		u := packfs.New(mem.New(), lower)
		for pass := range 2 {
			got, viaOpen := prfaRead(u, name), prfaOpenRead(u, name)
			if got != "!ENAMETOOLONG" {
				t.Errorf("%s pass %d: ReadFile of a %d-byte name = %s, want ENAMETOOLONG", what, pass, len(name), got)
			}
			if got != viaOpen {
				t.Errorf("%s pass %d: ReadFile of a %d-byte name = %s; Open+ReadAll = %s", what, pass, len(name), got, viaOpen)
			}
		}
		// The upper now holds the first element: the slow path answers.
		if err := u.WriteFile(strings.Repeat("L", 255)+"/beside", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := prfaRead(u, name); got != "!ENAMETOOLONG" {
			t.Errorf("%s after a write beside: ReadFile = %s, want ENAMETOOLONG", what, got)
		}
	}
}

// TestProbeReadFileAtLayers: several lowers, a directory merged from two,
// a directory of the top lower marked opaque, a whiteout of the top lower
// over a file of the one below, a directory only one lower holds: ReadFile
// answers by the layers' rules and as Open and ReadAll, before and after
// the upper's changes (a file written over, removed, a directory removed
// and made again opaque, renamed away).
func TestProbeReadFileAtLayers(t *testing.T) {
	l1, l2 := mem.New(), mem.New()
	prfaDo(t,
		l1.MkdirAll("a", 0o755), l1.WriteFile("a/x", []byte("l1 a/x"), 0o644),
		l1.MkdirAll("b", 0o755), l1.WriteFile("b/y", []byte("l1 b/y"), 0o644), layer.MarkOpaque(l1, "b"),
		l1.MkdirAll("c", 0o755), l1.Whiteout("c/z"),
		l1.MkdirAll("e/deep", 0o755), l1.WriteFile("e/f", []byte("l1 e/f"), 0o644), l1.WriteFile("e/deep/f", []byte("l1 e/deep/f"), 0o644),
		l1.Symlink("e", "s"), l1.Symlink("../g/h", "e/tog"),
		l1.Whiteout("gone"),
	)
	prfaDo(t,
		l2.MkdirAll("a", 0o755), l2.WriteFile("a/x", []byte("l2 a/x"), 0o644), l2.WriteFile("a/w", []byte("l2 a/w"), 0o644),
		l2.MkdirAll("b", 0o755), l2.WriteFile("b/y", []byte("l2 b/y"), 0o644), l2.WriteFile("b/v", []byte("l2 b/v"), 0o644),
		l2.MkdirAll("c", 0o755), l2.WriteFile("c/z", []byte("l2 c/z"), 0o644), l2.WriteFile("c/k", []byte("l2 c/k"), 0o644),
		l2.MkdirAll("g/i", 0o755), l2.WriteFile("g/h", []byte("l2 g/h"), 0o644), l2.WriteFile("g/i/j", []byte("l2 g/i/j"), 0o644),
		l2.MkdirAll("gone", 0o755), l2.WriteFile("gone/f", []byte("l2 gone/f"), 0o644),
		l2.MkdirAll("e/deep", 0o755), l2.WriteFile("e/deep/q", []byte("l2 e/deep/q"), 0o644),
	)
	want := map[string]string{
		"a/x": "=l1 a/x", "a/w": "=l2 a/w", "b/y": "=l1 b/y", "b/v": "!ENOENT", "c/z": "!ENOENT", "c/k": "=l2 c/k",
		"g/h": "=l2 g/h", "g/i/j": "=l2 g/i/j", "e/f": "=l1 e/f", "s/f": "=l1 e/f", "e/tog": "=l2 g/h",
		"gone/f": "!ENOENT", "e/deep/f": "=l1 e/deep/f", "e/deep/q": "=l2 e/deep/q", "s/deep/q": "=l2 e/deep/q",
	}
	steps := []struct {
		what string
		do   func(u *packfs.FS) error
		set  map[string]string
	}{
		{"read", func(u *packfs.FS) error { return nil }, nil},
		{"write g/h", func(u *packfs.FS) error { return u.WriteFile("g/h", []byte("up g/h"), 0o644) },
			map[string]string{"g/h": "=up g/h", "e/tog": "=up g/h"}},
		{"remove g/h", func(u *packfs.FS) error { return u.Remove("g/h") },
			map[string]string{"g/h": "!ENOENT", "e/tog": "!ENOENT"}},
		{"removeall e, mkdir e", func(u *packfs.FS) error {
			if err := u.RemoveAll("e"); err != nil {
				return err
			}
			return u.Mkdir("e", 0o755)
		}, map[string]string{"e/f": "!ENOENT", "s/f": "!ENOENT", "e/tog": "!ENOENT", "e/deep/f": "!ENOENT", "e/deep/q": "!ENOENT", "s/deep/q": "!ENOENT"}},
		{"rename g away", func(u *packfs.FS) error { return u.Rename("g", "g2") },
			map[string]string{"g/i/j": "!ENOENT", "g2/i/j": "=l2 g/i/j"}},
		{"file over a", func(u *packfs.FS) error {
			if err := u.RemoveAll("a"); err != nil {
				return err
			}
			return u.WriteFile("a", []byte("a file"), 0o644)
		}, map[string]string{"a/x": "!ENOTDIR", "a/w": "!ENOTDIR"}},
	}
	for _, mk := range []struct {
		what string
		make func(t *testing.T) []fs.FS
	}{
		{"mem", func(t *testing.T) []fs.FS { return []fs.FS{l1, l2} }},
		{"snapshots", func(t *testing.T) []fs.FS { return []fs.FS{l1.Snapshot(), l2.Snapshot()} }},
		{"packs", func(t *testing.T) []fs.FS { return []fs.FS{prfaMapped(t, l1), prfaReaderAt(t, l2)} }},
		{"pack over snapshot", func(t *testing.T) []fs.FS { return []fs.FS{prfaMapped(t, l1), l2.Snapshot()} }},
	} {
		lowers := mk.make(t)
		u := packfs.New(mem.New(), lowers...)
		cur := map[string]string{}
		for k, v := range want {
			cur[k] = v
		}
		for _, st := range steps {
			if err := st.do(u); err != nil {
				t.Fatalf("%s: %s: %v", mk.what, st.what, err)
			}
			for k, v := range st.set {
				cur[k] = v
			}
			for pass := range 2 {
				for name, w := range cur {
					got, viaOpen := prfaRead(u, name), prfaOpenRead(u, name)
					if got != w || viaOpen != w {
						t.Errorf("%s after %s, pass %d: ReadFile(%q) = %s, Open+ReadAll %s; want %s", mk.what, st.what, pass, name, got, viaOpen, w)
					}
				}
			}
		}
	}
}

// TestProbeReadFileAtRacingWriters: readers ReadFile names of a lower
// directory while one writer changes the union over them and their parent
// (a file written over, removed, a directory put there, the directory
// renamed away and back, removed whole and made again opaque, replaced by
// a file). Each read must give a state the name was in at some moment of
// the read (the one before the read began, or one the writer made while
// it ran), never a torn mix; and the writer's own read after each change
// returned must give the new state.
func TestProbeReadFileAtRacingWriters(t *testing.T) {
	cycles := 24
	if testing.Short() {
		cycles = 8
	}
	const readers = 4
	watched := []string{"f", "sub/g", "link"}
	lowerState := map[string]string{"f": "=lower f 0123", "sub/g": "=lower g 4567", "link": "=lower f 0123"}
	// The changes of one cycle, over the directory D; each states what the
	// watched names read after it. Contents are of one length, so that a
	// torn read shows.
	type change struct {
		// shows: what a change may show beside it while it runs beyond
		// the states before and after it. Nothing: a WriteFile over a
		// lower file or a whiteout publishes the file with its content in
		// one step, and a read that a removal or rename raced is read
		// again once the writer is done (the empty file, ENXIO and
		// ENOTDIR this probe first saw).
		shows map[string]bool
		what  string
		do    func(u *packfs.FS, d string) error
		after map[string]string
	}
	cycle := []change{
		{prfaShows(), "write f", func(u *packfs.FS, d string) error { return u.WriteFile(d+"/f", []byte("upper A 89ab"), 0o644) },
			map[string]string{"f": "=upper A 89ab", "link": "=upper A 89ab"}},
		{prfaShows(), "remove f", func(u *packfs.FS, d string) error { return u.Remove(d + "/f") },
			map[string]string{"f": "!ENOENT", "link": "!ENOENT"}},
		{prfaShows(), "mkdir f", func(u *packfs.FS, d string) error { return u.Mkdir(d+"/f", 0o755) },
			map[string]string{"f": "!EISDIR", "link": "!EISDIR"}},
		{prfaShows(), "rmdir f", func(u *packfs.FS, d string) error { return u.Remove(d + "/f") },
			map[string]string{"f": "!ENOENT", "link": "!ENOENT"}},
		{prfaShows(), "write f again", func(u *packfs.FS, d string) error { return u.WriteFile(d+"/f", []byte("upper B cdef"), 0o644) },
			map[string]string{"f": "=upper B cdef", "link": "=upper B cdef"}},
		{prfaShows(), "rename away", func(u *packfs.FS, d string) error { return u.Rename(d, d+"x") },
			map[string]string{"f": "!ENOENT", "sub/g": "!ENOENT", "link": "!ENOENT"}},
		{prfaShows(), "rename back", func(u *packfs.FS, d string) error { return u.Rename(d+"x", d) },
			map[string]string{"f": "=upper B cdef", "sub/g": "=lower g 4567", "link": "=upper B cdef"}},
		{prfaShows(), "write sub/g", func(u *packfs.FS, d string) error { return u.WriteFile(d+"/sub/g", []byte("upper C 0000"), 0o644) },
			map[string]string{"sub/g": "=upper C 0000"}},
		{prfaShows(), "removeall", func(u *packfs.FS, d string) error { return u.RemoveAll(d) },
			map[string]string{"f": "!ENOENT", "sub/g": "!ENOENT", "link": "!ENOENT"}},
		{prfaShows(), "mkdir (opaque)", func(u *packfs.FS, d string) error { return u.Mkdir(d, 0o755) }, nil},
		{prfaShows(), "write f in opaque", func(u *packfs.FS, d string) error { return u.WriteFile(d+"/f", []byte("upper D 1111"), 0o644) },
			map[string]string{"f": "=upper D 1111"}},
		{prfaShows(), "removeall again", func(u *packfs.FS, d string) error { return u.RemoveAll(d) },
			map[string]string{"f": "!ENOENT"}},
		{prfaShows(), "file over dir", func(u *packfs.FS, d string) error { return u.WriteFile(d, []byte("file"), 0o644) },
			map[string]string{"f": "!ENOTDIR", "sub/g": "!ENOTDIR", "link": "!ENOTDIR"}},
		{prfaShows(), "remove file", func(u *packfs.FS, d string) error { return u.Remove(d) },
			map[string]string{"f": "!ENOENT", "sub/g": "!ENOENT", "link": "!ENOENT"}},
	}
	m := mem.New()
	for c := range cycles {
		d := fmt.Sprintf("d%02d", c)
		prfaDo(t, m.MkdirAll(d+"/sub", 0o755), m.WriteFile(d+"/f", []byte("lower f 0123"), 0o644),
			m.WriteFile(d+"/sub/g", []byte("lower g 4567"), 0o644), m.Symlink("f", d+"/link"))
	}
	// states[c][k]: what the watched names of dc read after k changes of
	// its cycle (0: the lower's).
	states := make([]map[string]string, len(cycle)+1)
	states[0] = lowerState
	for k, ch := range cycle {
		s := map[string]string{}
		for n, v := range states[k] {
			s[n] = v
		}
		for n, v := range ch.after {
			s[n] = v
		}
		states[k+1] = s
	}
	for _, lower := range []prfaLower{prfaLowers[1], prfaLowers[2], prfaLowers[5]} {
		t.Run(strings.ReplaceAll(lower.what, " ", "_"), func(t *testing.T) {
			u := packfs.New(mem.New(), lower.make(t, m))
			// done counts the changes returned: change i (from 0) of the
			// whole run is change i%len(cycle) of cycle i/len(cycle).
			var done atomic.Int64
			total := int64(cycles * len(cycle))
			stateAt := func(c int, n int64) map[string]string {
				k := n - int64(c*len(cycle))
				k = max(0, min(k, int64(len(cycle))))
				return states[k]
			}
			var wg sync.WaitGroup
			var bad atomic.Int64
			for r := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						before := done.Load()
						if before >= total {
							return
						}
						c := int(before) / len(cycle)
						name := watched[(i+r)%len(watched)]
						full := fmt.Sprintf("d%02d/%s", c, name)
						var got string
						if i%4 == 3 {
							got = prfaOpenRead(u, full)
						} else {
							got = prfaRead(u, full)
						}
						after := done.Load()
						// Changes before..after returned meanwhile, and
						// change after+1 may have been under way.
						ok := false
						for n := before; n <= min(after+1, total); n++ {
							if stateAt(c, n)[name] == got {
								ok = true
								break
							}
							// change n (from 1) of the run under way, and
							// what it is known to show while it runs
							if k := n - 1 - int64(c*len(cycle)); k >= 0 && k < int64(len(cycle)) && cycle[k].shows[got] {
								ok = true
								break
							}
						}
						if !ok && bad.Add(1) <= 10 {
							var seen []string
							for n := before; n <= min(after+1, total); n++ {
								seen = append(seen, stateAt(c, n)[name])
							}
							t.Errorf("reader: %s read %s during changes %d..%d, whose states were %q", full, got, before, after+1, seen)
						}
					}
				}()
			}
			for c := range cycles {
				d := fmt.Sprintf("d%02d", c)
				for k, ch := range cycle {
					if err := ch.do(u, d); err != nil {
						t.Errorf("cycle %d: %s: %v", c, ch.what, err)
					}
					done.Add(1)
					for _, name := range watched {
						if got, want := prfaRead(u, d+"/"+name), states[k+1][name]; got != want {
							t.Errorf("cycle %d: after %s returned, ReadFile(%s/%s) = %s, want %s", c, ch.what, d, name, got, want)
						}
					}
				}
			}
			prfaWait(t, &wg, "readers")
		})
	}
}

func prfaShows(outcomes ...string) map[string]bool {
	m := map[string]bool{}
	for _, o := range outcomes {
		m[o] = true
	}
	return m
}

func prfaWait(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s hang", what)
	}
}

// TestProbeReadFileAtDamagedPack: one byte of a file's stored content
// flipped in an uncompressed pack, opened over a byte slice (and mapped
// from a file): ReadFile of that file fails, through the union (with an
// upper and read-only) and through ReadFileAt, and every other file reads
// whole or fails, never with wrong bytes; Open and ReadAll agrees.
func TestProbeReadFileAtDamagedPack(t *testing.T) {
	m := mem.New()
	contents := map[string][]byte{}
	prfaDo(t, m.MkdirAll("d/sub", 0o755))
	for i := range 6 {
		name := fmt.Sprintf("d/f%d", i)
		b := bytes.Repeat([]byte(fmt.Sprintf("<%s unique content %d>", name, i*7919)), 1+i*i*300)
		contents[name] = b
		prfaDo(t, m.WriteFile(name, b, 0o644))
	}
	contents["d/sub/g"] = bytes.Repeat([]byte("<d/sub/g's own bytes>"), 10000)
	prfaDo(t, m.WriteFile("d/sub/g", contents["d/sub/g"], 0o644))
	for _, format := range []int{2, 3} {
		var buf bytes.Buffer
		if err := packwriter.Write(&buf, m.Snapshot(), packwriter.WithFormat(format)); err != nil {
			t.Fatal(err)
		}
		clean := buf.Bytes()
		for victim, vb := range contents {
			at := bytes.Index(clean, vb[:min(len(vb), 32)])
			if at < 0 {
				t.Fatalf("%s's content not found in the pack", victim)
			}
			offs := []int{0, len(vb) - 1}
			if testing.Short() {
				offs = offs[1:]
			}
			for _, off := range offs {
				data := bytes.Clone(clean)
				data[at+off] ^= 0x20
				ra, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
				if err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(t.TempDir(), "damaged.pack")
				prfaDo(t, os.WriteFile(file, data, 0o644))
				mapped, err := packreader.Open(file)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range []*packreader.Reader{ra, mapped} {
					what := fmt.Sprintf("format %d, %s byte %d flipped, mapped %v", format, victim, off, r == mapped)
					for _, u := range []*packfs.FS{packfs.New(mem.New(), r), packfs.New(nil, r)} {
						for pass := range 2 {
							for name, want := range contents {
								got, viaOpen := prfaRead(u, name), prfaOpenRead(u, name)
								switch {
								case name == victim && got[0] != '!':
									t.Errorf("%s, pass %d: ReadFile(%s) = %d bytes, want an error", what, pass, name, len(got)-1)
								case got[0] == '=' && got[1:] != string(want):
									t.Errorf("%s, pass %d: ReadFile(%s) gave wrong bytes", what, pass, name)
								case viaOpen[0] == '=' && viaOpen[1:] != string(want):
									t.Errorf("%s, pass %d: Open+ReadAll(%s) gave wrong bytes", what, pass, name)
								case name == victim && viaOpen[0] != '!':
									t.Errorf("%s, pass %d: Open+ReadAll(%s) read it all, want an error", what, pass, name)
								}
							}
						}
					}
					dir, err := r.LookupAt(nil, "d")
					if err != nil {
						t.Fatal(err)
					}
					parent, base := dir.Dir, strings.TrimPrefix(victim, "d/")
					if strings.HasPrefix(base, "sub/") {
						sub, err := r.LookupAt(dir.Dir, "sub")
						if err != nil {
							t.Fatal(err)
						}
						parent, base = sub.Dir, "g"
					}
					if b, err := r.ReadFileAt(parent, base, victim); err == nil || b != nil {
						t.Errorf("%s: ReadFileAt = %d bytes, %v; want nil and an error", what, len(b), err)
					}
				}
				mapped.Close()
				ra.Close()
			}
		}
	}
}

// TestProbeReadFileAtClosedLower: a pack lower closed after the union
// learned its directory: ReadFile fails (ErrClosed), as Open does, and
// neither panics.
func TestProbeReadFileAtClosedLower(t *testing.T) {
	m := mem.New()
	prfaDo(t, m.MkdirAll("d", 0o755), m.WriteFile("d/f", []byte("lower f"), 0o644))
	for _, r := range []*packreader.Reader{prfaMapped(t, m), prfaReaderAt(t, m)} {
		u := packfs.New(mem.New(), r)
		if got := prfaRead(u, "d/f"); got != "=lower f" {
			t.Fatalf("ReadFile = %s", got)
		}
		r.Close()
		for range 2 {
			got, viaOpen := prfaRead(u, "d/f"), prfaOpenRead(u, "d/f")
			if got[0] != '!' || got != viaOpen {
				t.Errorf("after the lower's Close: ReadFile = %s, Open+ReadAll = %s; want the same error", got, viaOpen)
			}
		}
	}
}

// TestProbeReadFileAtMemDirect: mem.FS's ReadFileAt with handles LookupAt
// gave, under writers: a handle of a directory removed since reads ENOENT,
// of one renamed reads where it went (a handle follows its directory),
// names that are no one element are refused, and a file rewritten by
// writers reads whole as one of the versions written, never torn; a
// Snapshot's ReadFileAt reads the snapshot's state whatever changed since.
func TestProbeReadFileAtMemDirect(t *testing.T) {
	m := mem.New()
	prfaDo(t, m.MkdirAll("d/sub", 0o755), m.WriteFile("d/f", []byte("v0 v0 v0"), 0o644), m.WriteFile("d/sub/g", []byte("g"), 0o644))
	snap := m.Snapshot()
	e, err := m.LookupAt(nil, "d")
	if err != nil || e.Dir == nil {
		t.Fatal(e, err)
	}
	se, err := snap.LookupAt(nil, "d")
	if err != nil || se.Dir == nil {
		t.Fatal(se, err)
	}
	for _, name := range []string{"", ".", "..", "sub/g", "/f", "f/", strings.Repeat("x", 256)} {
		if b, err := m.ReadFileAt(e.Dir, name, "d/"+name); err == nil || b != nil {
			t.Errorf("mem.FS.ReadFileAt(d, %q) = %q, %v; want an error", name, b, err)
		}
		if b, err := snap.ReadFileAt(se.Dir, name, "d/"+name); err == nil || b != nil {
			t.Errorf("Snapshot.ReadFileAt(d, %q) = %q, %v; want an error", name, b, err)
		}
	}
	if b, err := m.ReadFileAt(e.Dir, "sub", "d/sub"); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("ReadFileAt of a directory = %q, %v; want EISDIR", b, err)
	}
	// writers over d/f while readers read it through the handle
	versions := map[string]bool{"v0 v0 v0": true}
	for i := range 10 {
		versions[fmt.Sprintf("v%d v%d v%d", i%10, i%10, i%10)] = true
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := m.ReadFileAt(e.Dir, "f", "d/f")
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("ReadFileAt under writers: %v", err)
					return
				}
				if err == nil && !versions[string(b)] {
					t.Errorf("ReadFileAt under writers read %q, no version written", b)
					return
				}
				if sb, err := snap.ReadFileAt(se.Dir, "f", "d/f"); err != nil || string(sb) != "v0 v0 v0" {
					t.Errorf("Snapshot.ReadFileAt under writers = %q, %v", sb, err)
					return
				}
			}
		}()
	}
	for i := range 600 {
		v := fmt.Sprintf("v%d v%d v%d", i%10, i%10, i%10)
		switch i % 3 {
		case 0:
			prfaDo(t, m.WriteFile("d/f", []byte(v), 0o644))
		case 1:
			prfaDo(t, m.WriteFile("d/f.tmp", []byte(v), 0o644), m.Rename("d/f.tmp", "d/f"))
		case 2:
			prfaDo(t, m.Remove("d/f"), m.WriteFile("d/f.tmp", []byte(v), 0o644), m.Rename("d/f.tmp", "d/f"))
		}
	}
	close(stop)
	prfaWait(t, &wg, "mem readers")
	// the directory renamed: the handle follows it
	prfaDo(t, m.Rename("d", "d2"))
	if b, err := m.ReadFileAt(e.Dir, "sub", "d/sub"); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("ReadFileAt through a renamed directory's handle = %q, %v; want EISDIR", b, err)
	}
	// removed: the handle reads nothing, even when a new d stands there
	prfaDo(t, m.RemoveAll("d2"), m.MkdirAll("d2", 0o755), m.WriteFile("d2/f", []byte("new"), 0o644))
	if b, err := m.ReadFileAt(e.Dir, "f", "d/f"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFileAt through a removed directory's handle = %q, %v; want ENOENT", b, err)
	}
	if b, err := snap.ReadFileAt(se.Dir, "f", "d/f"); err != nil || string(b) != "v0 v0 v0" {
		t.Errorf("Snapshot.ReadFileAt after the directory's removal = %q, %v", b, err)
	}
}

// TestProbeReadFileAtWriteFileOverLower: the union's WriteFile of a name a
// lower file holds replaces it in one step for readers (as it does for a
// file of the upper layer, see 25a893d): a ReadFile or Open+ReadAll beside
// it reads the old state (the lower content, or ENOENT over the upper's
// whiteout of it) or the new content, never an empty file. In a
// lower-only directory (the directory is copied up too), in a directory
// the upper layer already holds, and over a whiteout.
func TestProbeReadFileAtWriteFileOverLower(t *testing.T) {
	rounds := 10
	if testing.Short() {
		rounds = 4
	}
	m := mem.New()
	for i := range rounds {
		d := fmt.Sprintf("d%03d", i)
		prfaDo(t, m.MkdirAll(d, 0o755), m.WriteFile(d+"/f", []byte("lower content"), 0o644))
	}
	for _, lower := range []prfaLower{prfaLowers[1], prfaLowers[2]} {
		for _, how := range []string{"a lower-only directory", "a directory the upper holds", "a whiteout of the lower file"} {
			u := packfs.New(mem.New(), lower.make(t, m))
			bad := map[string]int{}
			for i := range rounds {
				d := fmt.Sprintf("d%03d", i)
				old := "=lower content"
				switch how {
				case "a directory the upper holds":
					prfaDo(t, u.WriteFile(d+"/beside", []byte("BESIDE"), 0o644))
				case "a whiteout of the lower file":
					prfaDo(t, u.Remove(d+"/f"))
					old = "!ENOENT"
				}
				var wg sync.WaitGroup
				var stop atomic.Bool
				var mu sync.Mutex
				for r := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for !stop.Load() {
							var got string
							if r == 0 {
								got = prfaRead(u, d+"/f")
							} else {
								got = prfaOpenRead(u, d+"/f")
							}
							if got != old && got != "=new content!" {
								mu.Lock()
								bad[got]++
								mu.Unlock()
							}
						}
					}()
				}
				time.Sleep(100 * time.Microsecond)
				if err := u.WriteFile(d+"/f", []byte("new content!"), 0o644); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Microsecond)
				stop.Store(true)
				prfaWait(t, &wg, "readers")
			}
			for got, n := range bad {
				t.Errorf("%s, in %s: %d reads beside WriteFile over a lower file gave %s, neither the old state nor the new", lower.what, how, n, prfaShort(got))
			}
		}
	}
}

// TestProbeReadFileAtLinkOverWhiteout: a lower symlink d/link -> f while
// the writer removes the upper's d/f (a whiteout takes its place) and
// writes it again, over and over: reading the link through the union
// gives f's content or ENOENT (or, for a read that began before a
// removal, the old content), never the whiteout's own error (ENXIO, a
// device): a whiteout is no file of the union.
func TestProbeReadFileAtLinkOverWhiteout(t *testing.T) {
	rounds := 1500
	if testing.Short() {
		rounds = 500
	}
	m := mem.New()
	prfaDo(t, m.MkdirAll("d", 0o755), m.WriteFile("d/f", []byte("lower"), 0o644), m.Symlink("f", "d/link"))
	for _, lower := range []prfaLower{prfaLowers[1], prfaLowers[2]} {
		u := packfs.New(mem.New(), lower.make(t, m))
		prfaDo(t, u.WriteFile("d/f", []byte("upper"), 0o644))
		var stop atomic.Bool
		var wg sync.WaitGroup
		var mu sync.Mutex
		bad := map[string]int{}
		for r := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					var got string
					if r == 2 {
						got = prfaOpenRead(u, "d/link")
					} else {
						got = prfaRead(u, "d/link")
					}
					// "=": WriteFile over the whiteout shows an empty
					// file, reported by TestProbeReadFileAtWriteFileOverLower
					if got != "=upper" && got != "!ENOENT" && got != "=" {
						mu.Lock()
						bad[got]++
						mu.Unlock()
					}
				}
			}()
		}
		for range rounds {
			prfaDo(t, u.Remove("d/f"), u.WriteFile("d/f", []byte("upper"), 0o644))
		}
		stop.Store(true)
		prfaWait(t, &wg, "readers")
		for got, n := range bad {
			t.Errorf("%s: %d reads of d/link beside the removal of its target gave %s, want the content or ENOENT", lower.what, n, got)
		}
	}
}

// TestProbeReadFileAtSlowPathRaces: readers of one name while a writer
// changes it over and over; each read must give a state the name had.
// The union's slow path resolves a name, then reads it by path: a change
// between the two shows what the name never was to the union (ENXIO,
// reading the whiteout a removal left; ENOTDIR, walking through the
// whiteout a directory's rename left).
func TestProbeReadFileAtSlowPathRaces(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	m := mem.New()
	prfaDo(t, m.MkdirAll("d/sub", 0o755), m.WriteFile("d/f", []byte("lower"), 0o644), m.WriteFile("d/sub/g", []byte("lower g"), 0o644))
	for _, c := range []struct {
		what  string
		setup func(u *packfs.FS) error
		ops   []func(u *packfs.FS) error
		name  string
		ok    map[string]bool
	}{
		{"remove, mkdir, rmdir, write d/f",
			func(u *packfs.FS) error { return u.WriteFile("d/f", []byte("upper"), 0o644) },
			[]func(u *packfs.FS) error{
				func(u *packfs.FS) error { return u.Remove("d/f") },
				func(u *packfs.FS) error { return u.Mkdir("d/f", 0o755) },
				func(u *packfs.FS) error { return u.Remove("d/f") },
				func(u *packfs.FS) error { return u.WriteFile("d/f", []byte("upper"), 0o644) },
			}, "d/f", prfaShows("=upper", "!ENOENT", "!EISDIR", "=")}, // "=": see TestProbeReadFileAtWriteFileOverLower
		{"rename d away and back",
			func(u *packfs.FS) error { return nil },
			[]func(u *packfs.FS) error{
				func(u *packfs.FS) error { return u.Rename("d", "dx") },
				func(u *packfs.FS) error { return u.Rename("dx", "d") },
			}, "d/sub/g", prfaShows("=lower g", "!ENOENT")},
	} {
		for _, lower := range []prfaLower{prfaLowers[1], prfaLowers[2]} {
			for _, viaOpen := range []bool{false, true} {
				u := packfs.New(mem.New(), lower.make(t, m))
				prfaDo(t, c.setup(u))
				var stop atomic.Bool
				var wg sync.WaitGroup
				var mu sync.Mutex
				bad := map[string]int{}
				for range 3 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for !stop.Load() {
							got := ""
							if viaOpen {
								got = prfaOpenRead(u, c.name)
							} else {
								got = prfaRead(u, c.name)
							}
							if !c.ok[got] {
								mu.Lock()
								bad[got]++
								mu.Unlock()
							}
						}
					}()
				}
				for range rounds {
					for _, op := range c.ops {
						prfaDo(t, op(u))
					}
				}
				stop.Store(true)
				prfaWait(t, &wg, "readers")
				for got, n := range bad {
					how := "ReadFile"
					if viaOpen {
						how = "Open+ReadAll"
					}
					t.Errorf("%s, %s: %d reads of %s by %s gave %s, no state it had", c.what, lower.what, n, c.name, how, got)
				}
			}
		}
	}
}
