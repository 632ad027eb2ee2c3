package packreader_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/testsize"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// entry is what a round trip must preserve of one entry.
type entry struct {
	Path    string
	Mode    fs.FileMode
	ModTime time.Time
	Data    string // a string, which go-cmp compares at once
	Target  string
}

// dump lists every entry of fsys, symlinks not followed.
func dump(t testing.TB, fsys fs.FS) []entry {
	t.Helper()
	var out []entry
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := fs.Lstat(fsys, p)
		if err != nil {
			return err
		}
		e := entry{Path: p, Mode: fi.Mode()}
		switch fi.Mode().Type() {
		case 0:
			e.ModTime = fi.ModTime().UTC()
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			e.Data = string(data)
		case fs.ModeDir:
			e.ModTime = fi.ModTime().UTC()
		case fs.ModeSymlink:
			if e.Target, err = fs.ReadLink(fsys, p); err != nil {
				return err
			}
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRoundTrip checks that a pack of each conformance tree holds exactly
// the tree it was written from, through Open and OpenReaderAt, and that
// Verify accepts it.
func TestRoundTrip(t *testing.T) {
	for _, tree := range conformance.Trees() {
		t.Run(tree.Name, func(t *testing.T) {
			skipLargeUnderRace(t, tree)
			r, snap := buildPack(t, tree)
			want := dump(t, snap)
			if diff := cmp.Diff(want, dump(t, r)); diff != "" {
				t.Errorf("pack differs from its source (-want +got):\n%s", diff)
			}
			if err := r.Verify(); err != nil {
				t.Errorf("Verify: %v", err)
			}
			var buf bytes.Buffer
			if err := packwriter.Write(&buf, snap); err != nil {
				t.Fatal(err)
			}
			ra, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			defer ra.Close()
			if diff := cmp.Diff(want, dump(t, ra)); diff != "" {
				t.Errorf("OpenReaderAt: pack differs from its source (-want +got):\n%s", diff)
			}
			if err := ra.Verify(); err != nil {
				t.Errorf("Verify (ReaderAt): %v", err)
			}
		})
	}
}

// TestDeterministic checks that packing the same tree twice gives the
// same bytes, and that packing a pack's own tree reproduces it exactly.
func TestDeterministic(t *testing.T) {
	for _, tree := range conformance.Trees() {
		t.Run(tree.Name, func(t *testing.T) {
			skipLargeUnderRace(t, tree)
			m := mem.New()
			if err := conformance.Populate(m, tree); err != nil {
				t.Fatal(err)
			}
			snap := m.Snapshot()
			a, b := packOf(t, snap), packOf(t, snap)
			if !bytes.Equal(a, b) {
				t.Fatal("two packs of the same snapshot differ")
			}
			r, err := packreader.OpenReaderAt(bytes.NewReader(a), int64(len(a)))
			must(t, err)
			if c := packOf(t, r); !bytes.Equal(a, c) {
				t.Fatal("the pack of a pack's tree differs from it")
			}
		})
	}
}

func packOf(t *testing.T, fsys fs.FS) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, fsys); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestWhiteouts checks that whiteouts and opaque markers survive a pack.
func TestWhiteouts(t *testing.T) {
	m := mem.New()
	must(t, m.MkdirAll("d/e", 0o755))
	must(t, m.WriteFile("d/f", []byte("x"), 0o644))
	must(t, m.Whiteout("gone"))
	must(t, layer.MarkOpaque(m, "d/e"))
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, m.Snapshot()))
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	must(t, err)
	fi, err := r.Lstat("gone")
	must(t, err)
	if !layer.IsWhiteout(fi.Mode()) {
		t.Errorf("gone: mode %v, want a whiteout", fi.Mode())
	}
	if !r.Opaque("d/e") || r.Opaque("d") || r.Opaque(".") {
		t.Errorf("Opaque: d/e %v, d %v, . %v; want true, false, false", r.Opaque("d/e"), r.Opaque("d"), r.Opaque("."))
	}
	if !layer.IsOpaque(r, "d/e") {
		t.Error("layer.IsOpaque(d/e) = false")
	}
	must(t, r.Verify())
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCloseWhileOpen checks that files report fs.ErrClosed after their
// Reader is closed, and never touch the unmapped region.
func TestCloseWhileOpen(t *testing.T) {
	m := mem.New()
	must(t, m.WriteFile("f", bytes.Repeat([]byte("ab"), 5000), 0o644))
	must(t, m.Mkdir("d", 0o755))
	name := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(name, m.Snapshot()))
	r, err := packreader.Open(name)
	must(t, err)
	f, err := r.Open("f")
	must(t, err)
	d, err := r.Open("d")
	must(t, err)
	var one [1]byte
	if _, err := f.Read(one[:]); err != nil {
		t.Fatal(err)
	}
	must(t, r.Close())
	if _, err := f.Read(one[:]); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Read after Close: %v, want fs.ErrClosed", err)
	}
	if _, err := f.(io.ReaderAt).ReadAt(one[:], 5); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("ReadAt after Close: %v, want fs.ErrClosed", err)
	}
	if _, err := d.(fs.ReadDirFile).ReadDir(-1); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("ReadDir after Close: %v, want fs.ErrClosed", err)
	}
	if _, err := r.Open("f"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Open after Close: %v, want fs.ErrClosed", err)
	}
	if _, err := r.Bytes("f"); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Bytes after Close: %v, want fs.ErrClosed", err)
	}
}

// TestBytes checks the zero-copy accessor against ReadFile.
func TestBytes(t *testing.T) {
	m := mem.New()
	must(t, m.WriteFile("f", []byte("hello"), 0o644))
	name := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(name, m.Snapshot()))
	r, err := packreader.Open(name)
	must(t, err)
	defer r.Close()
	b, err := r.Bytes("f")
	must(t, err)
	if string(b) != "hello" {
		t.Errorf("Bytes = %q", b)
	}
	if _, err := r.Bytes("."); err == nil {
		t.Error("Bytes(.) succeeded on a directory")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "p.pack")
	must(t, os.WriteFile(name, []byte("old"), 0o644))
	bad := fstestBroken{}
	if err := packwriter.WriteFile(name, bad); err == nil {
		t.Fatal("WriteFile of a failing FS succeeded")
	}
	if b, _ := os.ReadFile(name); string(b) != "old" {
		t.Errorf("failed WriteFile changed the target: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("failed WriteFile left %d files, want 1", len(ents))
	}
}

// fstestBroken is an FS whose root cannot be read.
type fstestBroken struct{}

func (fstestBroken) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
}

// TestCloseConcurrent closes a Reader while goroutines read from it: each
// read succeeds or fails with fs.ErrClosed, and nothing faults.
func TestCloseConcurrent(t *testing.T) {
	m := mem.New()
	for i := range 50 {
		must(t, m.WriteFile(fmt.Sprintf("f%d", i), bytes.Repeat([]byte{byte(i)}, 5000+i), 0o644))
	}
	name := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(name, m.Snapshot()))
	for range 20 {
		r, err := packreader.Open(name)
		must(t, err)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 200 {
					p := fmt.Sprintf("f%d", (i+g)%50)
					_, err := r.ReadFile(p)
					if err == nil {
						var f fs.File
						if f, err = r.Open(p); err == nil {
							_, err = io.ReadAll(f)
							f.Close()
						}
					}
					if err != nil && !errors.Is(err, fs.ErrClosed) {
						t.Errorf("%s: %v", p, err)
						return
					}
				}
			}()
		}
		runtime.Gosched()
		must(t, r.Close())
		wg.Wait()
	}
}

// skipLargeUnderRace skips the 20,000-entry and 64 MB trees in -race
// builds, where the conformance suite alone covers them.
func skipLargeUnderRace(t *testing.T, tree conformance.Tree) {
	if raceEnabled && (tree.Name == "wide" || tree.Name == "sizes") && !testsize.Short() {
		t.Skip("large tree: covered by TestConformanceReadOnly under -race")
	}
}

// TestIssue14ConcurrentFirstChecks: goroutines that read the same
// contents of a fresh Reader at once check each once between them; a
// healthy pack is never reported as holding overlapping contents.
func TestIssue14ConcurrentFirstChecks(t *testing.T) {
	m := mem.New()
	for i := range 8 {
		must(t, m.WriteFile(fmt.Sprintf("f%d", i), bytes.Repeat([]byte{byte(i)}, 64<<10+i), 0o644))
	}
	name := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(name, m.Snapshot()))
	for round := range 100 {
		r, err := packreader.Open(name)
		must(t, err)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 8 {
					if _, err := r.ReadFile(fmt.Sprintf("f%d", i)); err != nil {
						t.Errorf("round %d: %v", round, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		must(t, r.Close())
		if t.Failed() {
			return
		}
	}
}
