package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/fusefs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// longCache has the kernel trust what it cached for an hour: a change
// made beside the mount that shows through it within a test shows
// because the mount told the kernel.
var longCache = &fusefs.Options{EntryTimeout: time.Hour, AttrTimeout: time.Hour, NegativeTimeout: time.Hour}

// eventually retries check until it returns nil. The notifications go out
// from a goroutine of their own, so a change shows a moment after the
// call that made it returns; the bound only keeps a lost notification
// from hanging the test.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// besideTrees are the trees a change can be made beside a mount of: the
// in-memory layer, a union over a lower, and a durable store.
func besideTrees(t *testing.T) map[string]layer.FS {
	lower := mem.New()
	if err := lower.WriteFile("lower", []byte("from below"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := packfs.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return map[string]layer.FS{
		"mem":   mem.New(),
		"union": packfs.New(mem.New(), lower.Snapshot()),
		"store": s,
	}
}

// TestIssue17ChangesBeside changes a tree beside its mount, the kernel's
// timeouts an hour long, and sees each change through the mount at once:
// content, a create over a name found missing, a remove, a rename, a
// chmod, a listing, and an open file that follows a rename.
func TestIssue17ChangesBeside(t *testing.T) {
	for name, fsys := range besideTrees(t) {
		t.Run(name, func(t *testing.T) {
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(fsys.MkdirAll("d/e", 0o755))
			for _, f := range []string{"f", "gone", "old", "d/e/deep", "s", "c"} {
				must(fsys.WriteFile(f, []byte("first "+f), 0o644))
			}
			dir, _ := mountT(t, fsys, longCache)
			at := func(p string) string { return filepath.Join(dir, p) }
			// content checks the size the kernel has for p, then what
			// reading it gives.
			content := func(p, want string) func() error {
				return func() error {
					fi, err := os.Stat(at(p))
					if err != nil {
						return err
					}
					if fi.Size() != int64(len(want)) {
						return fmt.Errorf("%s has size %d, want %d", p, fi.Size(), len(want))
					}
					b, err := os.ReadFile(at(p))
					if err != nil {
						return err
					}
					if string(b) != want {
						return fmt.Errorf("%s reads %q, want %q", p, b, want)
					}
					return nil
				}
			}
			missing := func(p string) func() error {
				return func() error {
					if _, err := os.Lstat(at(p)); !errors.Is(err, fs.ErrNotExist) {
						return fmt.Errorf("lstat %s: %v, want ENOENT", p, err)
					}
					return nil
				}
			}
			// Fill the kernel's caches: names, attributes, pages, and
			// names found missing.
			for _, p := range []string{"f", "gone", "old", "d/e/deep"} {
				must(content(p, "first "+p)())
			}
			for _, p := range []string{"new", "renamed", "d/e/made", "d/e/via"} {
				must(missing(p)())
			}
			// s and c are only ever stat'ed through the mount.
			statOf := func(p string, size int64, perm fs.FileMode) func() error {
				return func() error {
					fi, err := os.Lstat(at(p))
					if err == nil && (fi.Size() != size || fi.Mode().Perm() != perm) {
						err = fmt.Errorf("%s: size %d, mode %v; want %d, %v", p, fi.Size(), fi.Mode(), size, perm)
					}
					return err
				}
			}
			must(statOf("s", 7, 0o644)())
			must(statOf("c", 7, 0o644)())
			if name == "union" {
				must(content("lower", "from below")())
			}
			list0, err := os.ReadDir(dir)
			must(err)

			// Content, longer than before, and what a file open all
			// along reads.
			open, err := os.Open(at("f"))
			must(err)
			defer open.Close()
			buf := make([]byte, 64)
			_, err = open.ReadAt(buf, 0)
			must(ignoreEOF(err))
			must(fsys.WriteFile("f", []byte("second, longer"), 0o644))
			eventually(t, "content", content("f", "second, longer"))
			eventually(t, "content through an open file", func() error {
				n, err := open.ReadAt(buf, 0)
				if err = ignoreEOF(err); err == nil && string(buf[:n]) != "second, longer" {
					err = fmt.Errorf("the open file reads %q", buf[:n])
				}
				return err
			})
			// A create where the kernel found nothing.
			must(fsys.WriteFile("new", []byte("made beside"), 0o644))
			eventually(t, "create", content("new", "made beside"))
			must(fsys.Mkdir("d/e/made", 0o700))
			eventually(t, "mkdir", func() error {
				fi, err := os.Stat(at("d/e/made"))
				if err == nil && (!fi.IsDir() || fi.Mode().Perm() != 0o700) {
					err = fmt.Errorf("d/e/made is %v", fi.Mode())
				}
				return err
			})
			// A change through a symlink names its target, and a
			// rename onto itself changes nothing.
			must(fsys.Symlink("d/e", "ln"))
			must(fsys.WriteFile("ln/via", []byte("through a link"), 0o644))
			eventually(t, "create through a symlink", content("d/e/via", "through a link"))
			must(fsys.Rename("f", "f"))
			must(content("f", "second, longer")())
			// A remove.
			must(fsys.Remove("gone"))
			eventually(t, "remove", missing("gone"))
			// A rename onto a name the kernel found missing.
			must(fsys.Rename("old", "renamed"))
			eventually(t, "rename: old name", missing("old"))
			eventually(t, "rename: new name", content("renamed", "first old"))
			// The size of a file written beside, and a chmod.
			must(fsys.WriteFile("s", []byte("a longer content"), 0o644))
			eventually(t, "size", statOf("s", 16, 0o644))
			must(fsys.Chmod("c", 0o600))
			eventually(t, "chmod", statOf("c", 7, 0o600))
			// A change of a lower file, copied up.
			if name == "union" {
				must(fsys.Chmod("lower", 0o640))
				eventually(t, "chmod of a lower file", func() error {
					fi, err := os.Stat(at("lower"))
					if err == nil && fi.Mode().Perm() != 0o640 {
						err = fmt.Errorf("lower has mode %v", fi.Mode())
					}
					return err
				})
			}
			// The listing.
			eventually(t, "listing", func() error {
				list, err := os.ReadDir(dir)
				if err != nil {
					return err
				}
				var names []string
				for _, e := range list {
					names = append(names, e.Name())
				}
				if !slices.Contains(names, "new") || !slices.Contains(names, "renamed") || slices.Contains(names, "gone") || slices.Contains(names, "old") {
					return fmt.Errorf("listing %v (before: %d entries)", names, len(list0))
				}
				return nil
			})
			// A directory renamed beside the mount: a file open inside it
			// writes where the file now is, and names below it follow.
			h, err := os.OpenFile(at("d/e/deep"), os.O_RDWR, 0)
			must(err)
			defer h.Close()
			must(fsys.Rename("d", "moved"))
			eventually(t, "directory rename", content("moved/e/deep", "first d/e/deep"))
			eventually(t, "directory rename: old name", missing("d"))
			_, err = h.WriteAt([]byte("FIRST"), 0)
			must(err)
			must(h.Sync())
			if b, err := fsys.ReadFile("moved/e/deep"); err != nil || string(b) != "FIRST d/e/deep" {
				t.Fatalf("the open file wrote %q, %v to the tree", b, err)
			}
			if _, err := fsys.Stat("d"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("the open file's write made d again: %v", err)
			}
		})
	}
}

// TestIssue17ChangesBesideReaders runs programs that read and write
// through the mount while a writer changes the tree beside it, with long
// kernel timeouts: nothing deadlocks, every call through the mount
// succeeds or fails as a race allows, and once all stop the mount shows
// exactly the tree.
func TestIssue17ChangesBesideReaders(t *testing.T) {
	for name, fsys := range besideTrees(t) {
		t.Run(name, func(t *testing.T) {
			if err := fsys.Mkdir("shared", 0o755); err != nil {
				t.Fatal(err)
			}
			dir, _ := mountT(t, fsys, longCache)
			const rounds = 150
			var wg sync.WaitGroup
			errs := make(chan error, 100)
			report := func(err error) {
				select {
				case errs <- err:
				default:
				}
			}
			wg.Go(func() { // beside the mount
				for i := range rounds {
					p := fmt.Sprintf("shared/b%d", i%10)
					if err := fsys.WriteFile(p, bytes.Repeat([]byte{byte(i)}, 1+i%7*100), 0o644); err != nil {
						report(err)
						return
					}
					switch i % 5 {
					case 1:
						if err := fsys.Rename(p, fmt.Sprintf("shared/r%d", i%10)); err != nil {
							report(err)
							return
						}
					case 3:
						if err := fsys.Remove(p); err != nil {
							report(err)
							return
						}
					case 4:
						if err := fsys.Chmod(p, fs.FileMode(0o600+i%2*0o44)); err != nil {
							report(err)
							return
						}
					}
				}
			})
			wg.Go(func() { // a program writing through the mount
				for i := range rounds {
					p := filepath.Join(dir, "shared", fmt.Sprintf("m%d", i%10))
					f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
					if err != nil {
						report(err)
						return
					}
					_, err = f.Write([]byte{byte(i)})
					if cerr := f.Close(); err == nil {
						err = cerr
					}
					if err != nil {
						report(err)
						return
					}
					if i%4 == 0 {
						if err := os.Rename(p, p+"-moved"); err != nil {
							report(err)
							return
						}
					}
				}
			})
			done := make(chan struct{})
			var readers sync.WaitGroup
			for range 2 { // programs reading through the mount
				readers.Go(func() {
					for {
						select {
						case <-done:
							return
						default:
						}
						entries, err := os.ReadDir(filepath.Join(dir, "shared"))
						if err != nil {
							report(err)
							return
						}
						for _, e := range entries {
							// One read(2), as two can see two contents, on
							// Linux too.
							b, err := readOnce(filepath.Join(dir, "shared", e.Name()))
							if err != nil && !errors.Is(err, fs.ErrNotExist) {
								report(err)
								return
							}
							// Every file beside is written whole, of one byte.
							// A read may also give an older content padded with
							// zeros to a newer size: the kernel's race between a
							// read in flight and a size learned meanwhile (see
							// the package doc); any other mix is a fault.
							if e.Name()[0] == 'b' && len(b) > 0 && !oneByteThenZeros(b) {
								report(fmt.Errorf("%s: mixed bytes (%d bytes: %s)", e.Name(), len(b), byteRuns(b)))
								return
							}
						}
					}
				})
			}
			wg.Wait()
			close(done)
			readers.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			eventually(t, "the mount shows the tree", func() error { return sameTree(fsys, filepath.Join(dir, "shared"), "shared") })
		})
	}
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// sameTree compares the directory name of fsys with its view through the
// mount at dir: names, modes, sizes and contents.
func sameTree(fsys fs.FS, dir, name string) error {
	want, err := fs.ReadDir(fsys, name)
	if err != nil {
		return err
	}
	// Each name by lookup first: a listing through the mount would
	// refresh the attributes the kernel holds (READDIRPLUS).
	for _, w := range want {
		wi, err := fs.Stat(fsys, name+"/"+w.Name())
		if err != nil {
			return err
		}
		gi, err := os.Stat(filepath.Join(dir, w.Name()))
		if err != nil {
			return err
		}
		if gi.Mode() != wi.Mode() || gi.Size() != wi.Size() {
			return fmt.Errorf("%s: %v %d through the mount, %v %d in the tree", w.Name(), gi.Mode(), gi.Size(), wi.Mode(), wi.Size())
		}
	}
	for _, gone := range []string{"b0", "b1", "b3", "r1", "m0"} {
		if _, err := fs.Stat(fsys, name+"/"+gone); errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %v through the mount, missing in the tree", gone, err)
			}
		}
	}
	got, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d entries through the mount, %d in the tree", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name() != w.Name() {
			return fmt.Errorf("entry %d: %s through the mount, %s in the tree", i, g.Name(), w.Name())
		}
		wi, err := fs.Stat(fsys, name+"/"+w.Name())
		if err != nil {
			return err
		}
		gi, err := os.Stat(filepath.Join(dir, g.Name()))
		if err != nil {
			return err
		}
		if gi.Mode() != wi.Mode() || gi.Size() != wi.Size() {
			return fmt.Errorf("%s: %v %d through the mount, %v %d in the tree", w.Name(), gi.Mode(), gi.Size(), wi.Mode(), wi.Size())
		}
		wb, err := fs.ReadFile(fsys, name+"/"+w.Name())
		if err != nil {
			return err
		}
		gb, err := os.ReadFile(filepath.Join(dir, g.Name()))
		if err != nil {
			return err
		}
		if !bytes.Equal(gb, wb) {
			return fmt.Errorf("%s: contents differ", w.Name())
		}
	}
	return nil
}

// oneByteThenZeros reports whether b is one byte repeated, then zeros.
func oneByteThenZeros(b []byte) bool {
	i := 1
	for i < len(b) && b[i] == b[0] {
		i++
	}
	return len(bytes.Trim(b[i:], "\x00")) == 0
}

// byteRuns describes b as runs of equal bytes ("201×142 400×0").
func byteRuns(b []byte) string {
	var out []string
	for start, i := 0, 1; i <= len(b); i++ {
		if i == len(b) || b[i] != b[start] {
			out = append(out, fmt.Sprintf("%d×%d", i-start, b[start]))
			start = i
		}
	}
	return strings.Join(out, " ")
}

// readOnce returns what one read(2) of up to 64 KiB from the start of
// name gives.
func readOnce(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 64<<10)
	n, err := f.Read(b)
	if err == io.EOF {
		err = nil
	}
	return b[:n], err
}
