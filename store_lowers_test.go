package packfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// writePack writes fsys as a pack file name in dir and opens it mapped,
// as the command line opens its lowers.
func writePack(t testing.TB, dir, name string, fsys fs.FS) *packreader.Reader {
	t.Helper()
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, fsys); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// lowerTree is a small tree for a lower: files, a directory with contents,
// a nested one and a symlink.
func lowerTree(t testing.TB, files map[string]string) *mem.FS {
	t.Helper()
	m := mem.New()
	for name, data := range files {
		if strings.HasSuffix(name, "/") {
			mustDo(t, m.MkdirAll(strings.TrimSuffix(name, "/"), 0o755))
			continue
		}
		mustDo(t, m.MkdirAll(filepath.Dir(name), 0o755))
		if target, ok := strings.CutPrefix(data, "->"); ok {
			mustDo(t, m.Symlink(target, name))
			continue
		}
		mustDo(t, m.WriteFile(name, []byte(data), 0o644))
	}
	return m
}

// TestIssue17StoreLowers: a store over read-only lowers (a pack over a
// host directory) removes, renames over and away, and rmdirs names that
// live only in a lower, and replaces a lower directory (opaque); each of
// these survives a sync and reopen, a checkpoint, a flatten and reopens
// after them, and the lowers are never changed.
func TestIssue17StoreLowers(t *testing.T) {
	tmp := t.TempDir()
	top := writePack(t, tmp, "top.pack", lowerTree(t, map[string]string{
		"a":         "a from the pack",
		"b":         "b from the pack",
		"d/x":       "x",
		"d/sub/y":   "y",
		"keep/k":    "k",
		"link":      "->a",
		"gone/in/z": "z",
		"repl/old":  "old",
	}))
	host := filepath.Join(tmp, "host")
	mustDo(t, os.MkdirAll(filepath.Join(host, "h"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(host, "h/f"), []byte("host file"), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(host, "hostonly"), []byte("host only"), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(host, "a"), []byte("a from the host, hidden"), 0o644))
	bottom, err := dirfs.New(host, dirfs.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer bottom.Close()
	packBytesBefore, err := os.ReadFile(filepath.Join(tmp, "top.pack"))
	if err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(tmp, "store")
	opts := &packfs.Options{Lowers: []fs.FS{top, bottom}}
	s, err := packfs.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, s.Remove("a"))           // a lower file, in both lowers
	mustDo(t, s.Rename("b", "keep/k")) // a lower file over a lower file
	mustDo(t, s.Rename("d", "moved"))  // a lower directory away
	mustDo(t, s.RemoveAll("gone"))     // a lower subtree
	mustDo(t, s.Remove("h/f"))         // a host file
	mustDo(t, s.Remove("h"))           // then its directory: rmdir
	mustDo(t, s.RemoveAll("repl"))     // a lower directory replaced:
	mustDo(t, s.Mkdir("repl", 0o750))  // opaque
	mustDo(t, s.WriteFile("repl/new", []byte("new"), 0o600))
	mustDo(t, s.Rename("hostonly", "moved/sub/y")) // a host file over a pack file
	if err := s.Remove("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove of a removed lower name: %v, want ErrNotExist", err)
	}
	if err := s.Remove("moved"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("Remove of a lower directory with contents: %v, want ENOTEMPTY", err)
	}
	want := dump(t, s, true)
	for _, gone := range []string{"a", "b", "d", "gone", "h", "hostonly", "repl/old"} {
		if strings.Contains(want, "\n"+gone+" ") || strings.HasPrefix(want, gone+" ") {
			t.Fatalf("%s still shows:\n%s", gone, want)
		}
	}
	mustDo(t, s.Sync())
	check := func(when string) {
		t.Helper()
		if got := dump(t, s, true); got != want {
			t.Fatalf("%s:\n%s\nwant:\n%s", when, got, want)
		}
	}
	reopen := func(when string) {
		t.Helper()
		mustDo(t, s.Close())
		if s, err = packfs.Open(dir, opts); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		check(when)
	}
	reopen("reopened after sync")
	mustDo(t, s.Checkpoint())
	check("after a checkpoint")
	reopen("reopened after a checkpoint")
	mustDo(t, s.WriteFile("later", []byte("later"), 0o644))
	mustDo(t, s.Remove("keep/k"))
	want = dump(t, s, true)
	mustDo(t, s.Flatten())
	check("after a flatten")
	reopen("reopened after a flatten")
	mustDo(t, s.Close())

	after, err := os.ReadFile(filepath.Join(tmp, "top.pack"))
	if err != nil || !bytes.Equal(after, packBytesBefore) {
		t.Fatalf("the lower pack changed: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(host, "h/f")); err != nil || string(data) != "host file" {
		t.Fatalf("the host lower changed: %q, %v", data, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".pack") {
			r, err := packreader.Open(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			st, err := r.Stats()
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			if st.Whiteouts == 0 {
				t.Errorf("%s, flattened over lowers, holds no whiteouts", e.Name())
			}
			if _, err := fs.Stat(top, "d/sub/y"); err != nil {
				t.Fatal(err)
			}
			if st.Files > 4 {
				t.Errorf("%s holds %d files: the lowers' contents were copied in", e.Name(), st.Files)
			}
		}
	}
}

// TestIssue17StoreLowersDiffer: a store opened over other lowers than it
// was made over (none, more, fewer, another pack, a directory for a pack)
// fails with ErrLowers, and its files are left as they were; over the
// same lowers it opens again.
func TestIssue17StoreLowersDiffer(t *testing.T) {
	tmp := t.TempDir()
	p1 := writePack(t, tmp, "1.pack", lowerTree(t, map[string]string{"f": "one"}))
	p2 := writePack(t, tmp, "2.pack", lowerTree(t, map[string]string{"f": "two"}))
	host, err := dirfs.New(tmp, dirfs.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	dir := filepath.Join(tmp, "store")
	s, err := packfs.Open(dir, &packfs.Options{Lowers: []fs.FS{p1}})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, s.Remove("f"))
	mustDo(t, s.Close())
	manifest, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	for name, lowers := range map[string][]fs.FS{
		"none":             nil,
		"another pack":     {p2},
		"one more":         {p1, p2},
		"a directory":      {host},
		"the same, beside": {p2, p1},
	} {
		for _, ro := range []bool{false, true} {
			s, err := packfs.Open(dir, &packfs.Options{Lowers: lowers, ReadOnly: ro})
			if err == nil {
				s.Close()
				t.Fatalf("%s (read-only %v): opened", name, ro)
			}
			if !errors.Is(err, packfs.ErrLowers) {
				t.Fatalf("%s (read-only %v): %v, want ErrLowers", name, ro, err)
			}
		}
	}
	if now, err := os.ReadFile(filepath.Join(dir, "MANIFEST")); err != nil || !bytes.Equal(now, manifest) {
		t.Fatalf("a refused open changed the manifest: %v", err)
	}
	s, err = packfs.Open(dir, &packfs.Options{Lowers: []fs.FS{p1}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Stat("f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("f after reopen: %v, want ErrNotExist", err)
	}

	// A store made without lowers refuses them too.
	plain := filepath.Join(tmp, "plain")
	s2, err := packfs.Open(plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, s2.Close())
	if _, err := packfs.Open(plain, &packfs.Options{Lowers: []fs.FS{p1}}); !errors.Is(err, packfs.ErrLowers) {
		t.Fatalf("lowers given to a store made without: %v, want ErrLowers", err)
	}
	if _, err := packfs.Open(filepath.Join(tmp, "nil"), &packfs.Options{Lowers: []fs.FS{nil}}); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("a nil lower: %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "nil")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused open made its directory: %v", err)
	}
	// A Publisher is promised packs of the whole tree, which a store over
	// lowers does not have.
	pub := &packfs.Options{Lowers: []fs.FS{p1}, Publisher: nopPublisher{}}
	if _, err := packfs.Open(filepath.Join(tmp, "pub"), pub); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("a Publisher over lowers: %v, want ErrUnsupported", err)
	}
}

// rebasing is a store over lowers that, at each Settle, moves its whole
// state into lowers (a new store over a pack of its tree, or over its own
// packs stacked over its lowers), checkpoints, flattens or reopens. The differential test then removes, renames and replaces what
// the lowers hold, and compares with os.
type rebasing struct {
	*packfs.Store
	t    testing.TB
	tmp  string
	dir  string
	opts *packfs.Options
	n    int
}

var rebases atomic.Int64

func (r *rebasing) Settle() error {
	r.n++
	// A sequence settles a few times: the first moves the store into
	// its lowers, so that most sequences act on names of a lower.
	switch r.n % 5 {
	case 2:
		return r.Store.Checkpoint()
	case 4:
		return r.Store.Flatten()
	case 0:
		if err := r.Store.Close(); err != nil {
			return err
		}
		s, err := packfs.Open(r.dir, r.opts)
		r.Store = s
		return err
	}
	rebases.Add(1)
	root, err := r.Store.Stat(".")
	if err != nil {
		return err
	}
	var lowers []fs.FS
	if r.n%5 == 1 {
		snap, err := r.Store.Snapshot()
		if err != nil {
			return err
		}
		lowers = []fs.FS{writePack(r.t, r.tmp, fmt.Sprintf("rebase-%d.pack", r.n), snap)}
		if err := r.Store.Close(); err != nil {
			return err
		}
	} else {
		// The store's own packs, whiteouts and all, over its lowers.
		if err := r.Store.Checkpoint(); err != nil {
			return err
		}
		if err := r.Store.Close(); err != nil {
			return err
		}
		ents, err := os.ReadDir(r.dir)
		if err != nil {
			return err
		}
		for i := len(ents) - 1; i >= 0; i-- { // the newest pack on top
			if n := ents[i].Name(); strings.HasSuffix(n, ".pack") {
				p, err := packreader.Open(filepath.Join(r.dir, n))
				if err != nil {
					return err
				}
				r.t.Cleanup(func() { p.Close() })
				lowers = append(lowers, p)
			}
		}
		lowers = append(lowers, r.opts.Lowers...)
	}
	r.dir = filepath.Join(r.tmp, fmt.Sprintf("store-%d", r.n))
	r.opts = &packfs.Options{Sync: packfs.SyncNone, Lowers: lowers}
	s, err := packfs.Open(r.dir, r.opts)
	if err != nil {
		return err
	}
	r.Store = s
	// A new store's root is its own; the tree's root keeps its mode and
	// mtime.
	if err := s.Chmod(".", root.Mode()); err != nil {
		return err
	}
	return s.Chtimes(".", root.ModTime(), root.ModTime())
}

// TestIssue17ConformanceStoreOverLowers runs the suite over stores over
// lowers, whose state moves into the lowers at random points.
func TestIssue17ConformanceStoreOverLowers(t *testing.T) {
	opts := []conformance.Option{conformance.WithOwners()}
	switch {
	case raceEnabled:
		opts = append(opts, conformance.WithSeeds(40), conformance.WithQuickTrees())
	case testsize.Short():
		opts = append(opts, conformance.WithSeeds(30))
	default:
		opts = append(opts, conformance.WithSeeds(1000))
	}
	before := rebases.Load()
	conformance.Run(t, func(t *testing.T) layer.FS {
		tmp := t.TempDir()
		empty := writePack(t, tmp, "empty.pack", mem.New())
		r := &rebasing{t: t, tmp: tmp, dir: filepath.Join(tmp, "store")}
		r.opts = &packfs.Options{Sync: packfs.SyncNone, Lowers: []fs.FS{empty}}
		r.Store = openStore(t, r.dir, r.opts)
		t.Cleanup(func() { r.Store.Close() })
		return r
	}, opts...)
	if rebases.Load() == before && !testsize.Short() {
		t.Error("the differential test never moved a store into its lowers")
	}
	t.Logf("%d stores moved into their lowers", rebases.Load()-before)
}

// TestIssue17StoreLowersReaders: readers beside a writer that removes and
// renames names of a lower, and beside the checkpoints and flattens it
// runs meanwhile, see each name whole or gone: the lower's bytes or the
// writer's, never another error; a listing is sorted and unique; and a
// snapshot taken first keeps the tree it had.
func TestIssue17StoreLowersReaders(t *testing.T) {
	tmp := t.TempDir()
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("d/f%03d", i)] = fmt.Sprintf("lower %d", i)
		files[fmt.Sprintf("keep/k%03d", i)] = fmt.Sprintf("kept %d", i)
	}
	lower := writePack(t, tmp, "lower.pack", lowerTree(t, files))
	s := openStore(t, filepath.Join(tmp, "store"), &packfs.Options{Lowers: []fs.FS{lower}, CheckpointBytes: -1})
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	before := dump(t, snap, true)

	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; ; i = (i + 7) % 200 {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("keep/k%03d", i)
				if data, err := s.ReadFile(k); err != nil || string(data) != files[k] {
					errs <- fmt.Errorf("%s: %q, %v", k, data, err)
					return
				}
				f := fmt.Sprintf("d/f%03d", i)
				data, err := s.ReadFile(f)
				switch {
				case errors.Is(err, fs.ErrNotExist):
				case err != nil:
					errs <- fmt.Errorf("%s: %v", f, err)
					return
				case string(data) != files[f] && string(data) != "over "+f:
					errs <- fmt.Errorf("%s: %q", f, data)
					return
				}
				ents, err := s.ReadDir("d")
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs <- fmt.Errorf("readdir d: %v", err)
					return
				}
				for j := 1; j < len(ents); j++ {
					if ents[j-1].Name() >= ents[j].Name() {
						errs <- fmt.Errorf("readdir d: %s before %s", ents[j-1].Name(), ents[j].Name())
						return
					}
				}
			}
		}()
	}
	for i := range 200 {
		f := fmt.Sprintf("d/f%03d", i)
		switch i % 3 {
		case 0:
			mustDo(t, s.Remove(f))
		case 1:
			mustDo(t, s.Rename(f, fmt.Sprintf("moved%03d", i)))
		case 2:
			mustDo(t, s.WriteFile("tmp", []byte("over "+f), 0o644))
			mustDo(t, s.Rename("tmp", f))
		}
		switch i % 50 {
		case 10:
			mustDo(t, s.Checkpoint())
		case 40:
			mustDo(t, s.Flatten())
		}
		if i == 100 {
			if got := dump(t, snap, true); got != before {
				t.Errorf("the snapshot changed:\n%s\nwas:\n%s", got, before)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestIssue17StoreLowersHostChanged: a host directory below a store may
// change while the store is closed, as overlayfs lets a lowerdir change
// offline: Close writes the log out first, so that the next open does
// not replay changes over a directory they no longer fit, and shows the
// directory as it is then under the store's changes.
func TestIssue17StoreLowersHostChanged(t *testing.T) {
	tmp := t.TempDir()
	host := filepath.Join(tmp, "host")
	for name, data := range map[string]string{"a": "a", "b": "b", "dir/c": "c"} {
		mustDo(t, os.MkdirAll(filepath.Dir(filepath.Join(host, name)), 0o755))
		mustDo(t, os.WriteFile(filepath.Join(host, name), []byte(data), 0o644))
	}
	open := func() *packfs.Store {
		t.Helper()
		d, err := dirfs.New(host, dirfs.ReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		s, err := packfs.Open(filepath.Join(tmp, "store"), &packfs.Options{Lowers: []fs.FS{d}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	mustDo(t, s.Remove("a"))
	mustDo(t, s.Rename("b", "b2"))
	mustDo(t, s.WriteFile("dir/new", []byte("new"), 0o644))
	mustDo(t, s.Close())

	mustDo(t, os.Remove(filepath.Join(host, "a")))
	mustDo(t, os.Remove(filepath.Join(host, "b")))
	mustDo(t, os.WriteFile(filepath.Join(host, "z"), []byte("z"), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(host, "a"), []byte("a again"), 0o644))

	s = open()
	defer s.Close()
	for name, want := range map[string]string{"b2": "b", "dir/new": "new", "dir/c": "c", "z": "z"} {
		if got, err := s.ReadFile(name); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"a", "b"} {
		if _, err := s.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want ErrNotExist (removed in the store)", name, err)
		}
	}
}

type nopPublisher struct{}

func (nopPublisher) PublishCheckpoint(*packfs.Checkpoint) error { return nil }
