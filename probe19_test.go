package packfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/vfs/vfstest"
)

// Hostile probes of the union's directory cache and the store's
// transactions: random sequences against the kernel through os, readers
// beside writers, snapshots taken mid-stream.

// probeErr names the errno an error wraps, the way os reports it.
func probeErr(err error) string {
	if err == nil {
		return "ok"
	}
	for _, e := range []syscall.Errno{syscall.ENOENT, syscall.EEXIST, syscall.ENOTDIR, syscall.EISDIR,
		syscall.ENOTEMPTY, syscall.EINVAL, syscall.ELOOP, syscall.EBUSY} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT.Error()
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST.Error()
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL.Error()
	}
	return "other: " + err.Error()
}

// probeRead describes what a read of name gives in fsys: Lstat, Stat,
// ReadFile and ReadDir, each with its error class.
func probeRead(fsys fs.FS, name string) string {
	var b strings.Builder
	if fi, err := fs.Lstat(fsys, name); err != nil {
		fmt.Fprintf(&b, "lstat %s;", probeErr(err))
	} else {
		fmt.Fprintf(&b, "lstat %v %d;", fi.Mode().Type(), sizeOf(fi))
		if fi.Mode()&fs.ModeSymlink != 0 {
			tgt, err := fs.ReadLink(fsys, name)
			fmt.Fprintf(&b, "link %q %s;", tgt, probeErr(err))
		}
	}
	if fi, err := fs.Stat(fsys, name); err != nil {
		fmt.Fprintf(&b, "stat %s;", probeErr(err))
	} else {
		fmt.Fprintf(&b, "stat %v %v %d;", fi.Mode().Type(), fi.Mode().Perm(), sizeOf(fi))
	}
	if data, err := fs.ReadFile(fsys, name); err != nil {
		fmt.Fprintf(&b, "read %s;", probeErr(err))
	} else {
		fmt.Fprintf(&b, "read %q;", data)
	}
	if ents, err := fs.ReadDir(fsys, name); err != nil {
		fmt.Fprintf(&b, "readdir %s", probeErr(err))
	} else {
		b.WriteString("readdir")
		for _, e := range ents {
			fmt.Fprintf(&b, " %s:%v", e.Name(), e.Type())
		}
	}
	return b.String()
}

func sizeOf(fi fs.FileInfo) int64 {
	if fi.Mode().IsRegular() {
		return fi.Size()
	}
	return 0
}

// probeNames are the names a random sequence works on: few enough that
// operations meet, with more hot directories than the cache has slots.
type probeNames struct {
	tops []string
}

func newProbeNames(hot int) *probeNames {
	p := &probeNames{tops: []string{"a", "b", "c", "l"}}
	for i := range hot {
		p.tops = append(p.tops, fmt.Sprintf("h%d", i))
	}
	return p
}

func (p *probeNames) pick(r *rand.Rand) string {
	n := p.tops[r.IntN(len(p.tops))]
	if r.IntN(4) > 0 {
		n += "/" + []string{"x", "y", "z", "s"}[r.IntN(4)]
		if r.IntN(3) == 0 {
			n += "/" + []string{"p", "q"}[r.IntN(2)]
		}
	}
	return n
}

// target is a symlink target for a link at name that stays inside the
// tree: no ".." from a link at the root.
func (p *probeNames) target(r *rand.Rand, name string) string {
	t := []string{"a", "b", "x", "a/x", "c/y", "h1", "nowhere", "s"}[r.IntN(8)]
	if strings.Contains(name, "/") && r.IntN(2) == 0 {
		t = "../" + t
	}
	return t
}

// probeLower builds the lower tree in fsys (mem or host).
func probeLower(t *testing.T, mkdir func(string) error, write func(string, string) error, hot int) {
	t.Helper()
	for _, d := range []string{"a", "a/x", "b", "b/y", "c", "c/y", "c/y/p"} {
		mustDo(t, mkdir(d))
	}
	for i := range hot {
		mustDo(t, mkdir(fmt.Sprintf("h%d", i)))
		mustDo(t, write(fmt.Sprintf("h%d/x", i), fmt.Sprintf("lower h%d", i)))
	}
	for _, f := range []string{"a/y", "a/x/p", "b/x", "c/z", "c/y/q", "l"} {
		mustDo(t, write(f, "lower "+f))
	}
}

// TestIssue19ProbeUnionModel: random writes through a union of mem over
// a lower (a mem snapshot or a pack), with reads of the names around
// each one (which fill the directory cache), against the kernel through
// os on a temporary directory, and against a fresh snapshot, whose
// cache starts empty.
func TestIssue19ProbeUnionModel(t *testing.T) {
	seeds, steps := 2, 250
	if testsize.Short() || raceEnabled {
		seeds, steps = 1, 150
	}
	if os.Getenv("PACKFS_LONG") != "" && !raceEnabled {
		seeds, steps = 12, 600
	}
	const hot = 70 // more than the cache's 64 slots
	for _, kind := range []string{"mem", "pack"} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("%s/seed%d", kind, seed), func(t *testing.T) {
				probeUnionModel(t, kind, uint64(seed), steps, hot)
			})
		}
	}
}

func probeUnionModel(t *testing.T, kind string, seed uint64, steps, hot int) {
	root := t.TempDir()
	host := filepath.Join(root, "host")
	mustDo(t, os.Mkdir(host, 0o755))
	hp := func(n string) string { return filepath.Join(host, filepath.FromSlash(n)) }
	low := mem.New()
	probeLower(t, func(n string) error { return low.Mkdir(n, 0o755) },
		func(n, d string) error { return low.WriteFile(n, []byte(d), 0o644) }, hot)
	probeLower(t, func(n string) error { return os.Mkdir(hp(n), 0o755) },
		func(n, d string) error { return os.WriteFile(hp(n), []byte(d), 0o644) }, hot)
	var lower fs.FS = low.Snapshot()
	if kind == "pack" {
		name := filepath.Join(root, "lower.pack")
		mustDo(t, packwriter.WriteFile(name, low.Snapshot()))
		r, err := packreader.Open(name)
		mustDo(t, err)
		t.Cleanup(func() { r.Close() })
		lower = r
	}
	u := packfs.New(mem.New(), lower)
	hostFS := os.DirFS(host)
	names := newProbeNames(hot)
	r := rand.New(rand.NewPCG(seed, 19))
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		start := max(0, len(log)-25)
		t.Fatalf("seed %d: %s\nlast ops:\n%s", seed, fmt.Sprintf(format, args...), strings.Join(log[start:], "\n"))
	}
	check := func(n string) {
		t.Helper()
		want := probeRead(hostFS, n)
		if got := probeRead(u, n); got != want {
			fail("union %s:\n got %s\nwant %s", n, got, want)
		}
	}
	for step := range steps {
		a, b := names.pick(r), names.pick(r)
		var op string
		var gotErr, wantErr error
		switch r.IntN(10) {
		case 0, 1:
			data := fmt.Sprintf("v%d", step)
			op = fmt.Sprintf("WriteFile(%s, %s)", a, data)
			gotErr, wantErr = u.WriteFile(a, []byte(data), 0o644), os.WriteFile(hp(a), []byte(data), 0o644)
		case 2:
			op = fmt.Sprintf("Mkdir(%s)", a)
			gotErr, wantErr = u.Mkdir(a, 0o755), os.Mkdir(hp(a), 0o755)
		case 3:
			op = fmt.Sprintf("Remove(%s)", a)
			gotErr, wantErr = u.Remove(a), os.Remove(hp(a))
		case 4:
			op = fmt.Sprintf("RemoveAll(%s)", a)
			gotErr, wantErr = u.RemoveAll(a), os.RemoveAll(hp(a))
		case 5, 6:
			op = fmt.Sprintf("Rename(%s, %s)", a, b)
			gotErr, wantErr = u.Rename(a, b), os.Rename(hp(a), hp(b))
		case 7:
			tgt := names.target(r, a)
			op = fmt.Sprintf("Symlink(%s, %s)", tgt, a)
			gotErr, wantErr = u.Symlink(tgt, a), os.Symlink(tgt, hp(a))
		case 8:
			mode := fs.FileMode(0o700 | r.IntN(0o100))
			op = fmt.Sprintf("Chmod(%s, %v)", a, mode)
			gotErr, wantErr = u.Chmod(a, mode), os.Chmod(hp(a), mode)
		case 9:
			op = fmt.Sprintf("MkdirAll(%s)", a)
			gotErr, wantErr = u.MkdirAll(a, 0o755), os.MkdirAll(hp(a), 0o755)
		}
		log = append(log, fmt.Sprintf("%d: %s = %v", step, op, gotErr))
		if g, w := probeErr(gotErr), probeErr(wantErr); g != w {
			fail("%s: union %s, os %s", op, g, w)
		}
		// Reads around the change: its names, their directories, a few
		// hot directories (to push others out of the cache) and random
		// names.
		for _, n := range []string{a, b, path.Dir(a), path.Dir(b), names.pick(r), names.pick(r)} {
			check(n)
		}
		for range 3 {
			check(fmt.Sprintf("h%d/x", r.IntN(hot)))
		}
		if step%50 == 49 {
			snap, err := u.Snapshot()
			mustDo(t, err)
			for _, n := range names.tops {
				for _, s := range []string{"", "/x", "/y", "/z", "/s", "/x/p", "/y/q"} {
					check(n + s)
					if got, want := probeRead(snap, n+s), probeRead(u, n+s); got != want {
						fail("snapshot %s:\n got %s\nwant %s", n+s, got, want)
					}
				}
			}
		}
	}
	got, want := probeTree(t, u), probeTree(t, hostFS)
	if !slices.Equal(got, want) {
		fail("final trees differ:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// probeTree lists fsys: each name with its type and, for a file, its
// contents; for a symlink, its target.
func probeTree(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", p, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			tgt, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			line += " -> " + tgt
		case fi.Mode().IsRegular():
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %q", data)
		}
		out = append(out, line)
		return nil
	})
	mustDo(t, err)
	return out
}

// TestIssue19ProbeUnionLinearReads: a writer replaces X at the root, in a
// merged directory and in a directory only the lower holds, by a file, a
// directory and a symlink to a directory in turn, each holding the step
// number, and publishes the step after each replacement. A reader that
// loaded step s before its read must never see a number below s (a stale
// cached directory would show one), whether it reads the union or a
// snapshot it took after loading s; and a snapshot read again later gives
// the same answer.
func TestIssue19ProbeUnionLinearReads(t *testing.T) {
	const hot = 70
	low := mem.New()
	mustDo(t, low.Mkdir("m", 0o755))
	mustDo(t, low.Mkdir("p", 0o755))
	for i := range hot {
		mustDo(t, low.Mkdir(fmt.Sprintf("h%d", i), 0o755))
		mustDo(t, low.WriteFile(fmt.Sprintf("h%d/f", i), []byte("h"), 0o644))
	}
	t.Run("union", func(t *testing.T) {
		u := packfs.New(mem.New(), low.Snapshot())
		mustDo(t, u.WriteFile("m/up", []byte("u"), 0o644)) // m merges
		probeLinearReads(t, u, hot)
	})
	t.Run("store", func(t *testing.T) {
		s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS(), Sync: packfs.SyncNone, CheckpointBytes: 256 << 10})
		mustDo(t, err)
		defer s.Close()
		copyTree(t, s, low.Snapshot())
		mustDo(t, s.Checkpoint())
		mustDo(t, s.WriteFile("m/up", []byte("u"), 0o644)) // m merges
		probeLinearReads(t, s, hot)
	})
}

// linearFS is what probeLinearReads writes through: a union or a store.
type linearFS interface {
	fs.FS
	probeWriter
	Snapshot() (*packfs.FS, error)
}

func probeLinearReads(t *testing.T, u linearFS, hot int) {
	steps := 600
	if testsize.Short() {
		steps = 200
	}
	dirs := []string{".", "m", "p"}
	join := func(d, n string) string {
		if d == "." {
			return n
		}
		return d + "/" + n
	}
	var seq atomicInt
	done := make(chan struct{})
	errs := make(chan error, 3)
	number := func(fsys fs.FS, name string) (int, bool, error) {
		for _, n := range []string{name, name + "/k"} {
			data, err := fs.ReadFile(fsys, n)
			if err == nil {
				var v int
				if _, err := fmt.Sscanf(string(data), "%d", &v); err != nil {
					return 0, false, fmt.Errorf("ReadFile(%s) = %q", n, data)
				}
				return v, true, nil
			}
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.EISDIR) && !errors.Is(err, syscall.ENOTDIR) {
				return 0, false, fmt.Errorf("ReadFile(%s): %v", n, err)
			}
		}
		return 0, false, nil
	}
	for g := range 3 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				s := seq.Load()
				d := dirs[r.IntN(len(dirs))]
				name := join(d, "X")
				var fsys fs.FS = u
				var snap *packfs.FS
				if r.IntN(4) == 0 {
					var err error
					if snap, err = u.Snapshot(); err != nil {
						errs <- err
						return
					}
					fsys = snap
				}
				v, ok, err := number(fsys, name)
				if err != nil {
					errs <- err
					return
				}
				if ok && v < s {
					errs <- fmt.Errorf("%s reads %d after step %d was published (snapshot %v)", name, v, s, snap != nil)
					return
				}
				if snap != nil {
					fs.ReadFile(u, fmt.Sprintf("h%d/f", r.IntN(hot)))
					v2, ok2, err := number(snap, name)
					if err != nil || ok2 != ok || v2 != v {
						errs <- fmt.Errorf("snapshot's %s read %d %v, then %d %v %v", name, v, ok, v2, ok2, err)
						return
					}
				}
				fs.ReadFile(u, fmt.Sprintf("h%d/f", r.IntN(hot)))
				fs.Stat(u, join(d, "X/k"))
			}
		}()
	}
	for i := 1; i <= steps; i++ {
		for _, d := range dirs {
			x, tmp := join(d, "X"), join(d, "tmp")
			mustDo(t, u.RemoveAll(x))
			switch i % 3 {
			case 0:
				mustDo(t, u.WriteFile(tmp, []byte(fmt.Sprint(i)), 0o644))
			case 1:
				mustDo(t, u.Mkdir(tmp, 0o755))
				mustDo(t, u.WriteFile(tmp+"/k", []byte(fmt.Sprint(i)), 0o644))
			case 2:
				sd := fmt.Sprintf("S%d", i)
				mustDo(t, u.Mkdir(join(d, sd), 0o755))
				mustDo(t, u.WriteFile(join(d, sd+"/k"), []byte(fmt.Sprint(i)), 0o644))
				mustDo(t, u.Symlink(sd, tmp))
				if i > 6 {
					mustDo(t, u.RemoveAll(join(d, fmt.Sprintf("S%d", i-6))))
				}
			}
			mustDo(t, u.Rename(tmp, x))
			if v, ok, err := number(u, x); err != nil || !ok || v != i {
				t.Fatalf("step %d: the writer reads %s = %d %v %v", i, x, v, ok, err)
			}
		}
		seq.Store(i)
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

type atomicInt struct{ v atomic.Int64 }

func (a *atomicInt) Load() int   { return int(a.v.Load()) }
func (a *atomicInt) Store(i int) { a.v.Store(int64(i)) }

// TestIssue19ProbeSymlinkSwap: a reader of X, while a writer renames a
// symlink and a file over it in turn, sees one or the other: never
// EINVAL, which a union gave when its walk found a symlink and read the
// target by name from the directory as it is now, where a file had
// replaced it. At the root and in a merged directory, through the union
// and through the afero adapter over it.
func TestIssue19ProbeSymlinkSwap(t *testing.T) {
	swaps := 4000
	if testsize.Short() {
		swaps = 1000
	}
	for _, dir := range []string{"", "m/"} {
		low := mem.New()
		mustDo(t, low.Mkdir("m", 0o755))
		mustDo(t, low.WriteFile("m/low", nil, 0o644))
		u := packfs.New(mem.New(), low.Snapshot())
		mustDo(t, u.MkdirAll(dir+"d", 0o755))
		mustDo(t, u.WriteFile(dir+"d/k", []byte("1"), 0o644))
		mustDo(t, u.WriteFile(dir+"X", []byte("1"), 0o644))
		af := aferoadapter.New(u)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range swaps {
				if i%2 == 0 {
					mustDo(t, u.Symlink("d", dir+"tmp"))
				} else {
					mustDo(t, u.WriteFile(dir+"tmp", []byte("1"), 0o644))
				}
				mustDo(t, u.Rename(dir+"tmp", dir+"X"))
			}
		}()
		ok := func(err error) bool {
			return err == nil || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTDIR)
		}
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
			}
			for _, name := range []string{dir + "X", dir + "X/k"} {
				if _, err := fs.ReadFile(u, name); !ok(err) {
					t.Fatalf("ReadFile(%s): %v", name, err)
				}
				if _, err := u.Stat(name); err != nil && !errors.Is(err, syscall.ENOTDIR) {
					t.Fatalf("Stat(%s): %v", name, err)
				}
				if _, err := af.Stat("/" + name + "/."); !ok(err) {
					t.Fatalf("afero Stat(/%s/.): %v", name, err)
				}
			}
		}
	}
}

// TestIssue19ProbeOpenBesideCopyUp: a read-only open of a lower file that
// runs beside the copy-up of that file (a writer's open for writing, which
// then writes) gives a handle that reads the write once it is done,
// whichever of the two opens came first: the handle follows the copy-up,
// or it was opened on the copy.
func TestIssue19ProbeOpenBesideCopyUp(t *testing.T) {
	files := 3000
	if testsize.Short() || raceEnabled {
		files = 600
	}
	low := mem.New()
	mustDo(t, low.Mkdir("m", 0o755))
	for i := range files {
		mustDo(t, low.WriteFile(fmt.Sprintf("m/f%d", i), []byte("lower"), 0o644))
	}
	u := packfs.New(mem.New(), low.Snapshot())
	mustDo(t, u.WriteFile("m/up", nil, 0o644))
	stale := 0
	for i := range files {
		name := fmt.Sprintf("m/f%d", i)
		opened := make(chan fs.File)
		go func() {
			f, err := u.Open(name)
			if err != nil {
				t.Error(err)
			}
			opened <- f
		}()
		w, err := u.OpenFile(name, os.O_WRONLY, 0)
		mustDo(t, err)
		_, err = w.WriteAt([]byte("UPPER"), 0)
		mustDo(t, err)
		mustDo(t, w.Close())
		f := <-opened
		if f == nil {
			t.FailNow()
		}
		buf := make([]byte, 5)
		_, err = f.(io.ReaderAt).ReadAt(buf, 0)
		mustDo(t, err)
		f.Close()
		if string(buf) != "UPPER" {
			stale++
		}
	}
	if stale > 0 {
		t.Fatalf("%d of %d handles opened beside a copy-up read the lower file after the write", stale, files)
	}
}
