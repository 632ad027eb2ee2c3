package aferoadapter_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/internal/testsize"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// bothOver returns the OS and the adapter over a union whose lower holds
// what setup made; the OS side runs setup too.
func bothOver(t *testing.T, setup func(afero.Fs)) (host, back afero.Fs) {
	t.Helper()
	host = osFs(t)
	setup(host)
	return host, unionFs(t, setup)
}

// same fails t unless the OS and the adapter report the same, and end
// with the same tree.
func same(t *testing.T, host, back afero.Fs, run func(afero.Fs) []string) []string {
	t.Helper()
	want, got := run(host), run(back)
	h := tree(t, host)
	b, err := treeOf(back)
	if strings.Contains(fmt.Sprint(got, b), opaqueMarker) {
		t.Errorf("the union shows its opaque marker: %q %q", got, b)
	}
	if !slices.Equal(want, got) {
		t.Errorf("results differ\nOS:      %q\nadapter: %q", want, got)
	}
	if err != nil || !slices.Equal(h, b) {
		t.Errorf("trees differ\nOS:      %q\nadapter: %q %v", h, b, err)
	}
	return got
}

// opaqueMarker is the name under which the mem layer records that a
// directory is opaque; a union must never show it.
const opaqueMarker = ".wh..wh..opq"

// TestUnionCopyUp writes to a lower-only file through afero handles: in
// place, with WriteAt, Truncate, and with O_APPEND from two handles at
// once. The lower layer never changes.
func TestUnionCopyUp(t *testing.T) {
	var lower *mem.Snapshot
	setup := func(fsys afero.Fs) {
		fsys.MkdirAll("/d", 0o755)
		afero.WriteFile(fsys, "/d/f", []byte("lower data"), 0o640)
		afero.WriteFile(fsys, "/d/log", []byte("start\n"), 0o600)
	}
	host := osFs(t)
	setup(host)
	l := mem.New()
	setup(aferoadapter.New(l))
	lower = l.Snapshot()
	back := aferoadapter.New(packfs.New(mem.New(), lower))

	got := same(t, host, back, func(fsys afero.Fs) []string {
		var out []string
		note := func(what string, err error) { out = append(out, what+": "+class(err)) }
		r, err := fsys.Open("/d/f") // opened before the copy-up
		note("Open", err)
		f, err := fsys.OpenFile("/d/f", os.O_WRONLY, 0)
		note("OpenFile", err)
		_, err = f.WriteString("LOWER")
		note("WriteString", err)
		_, err = f.WriteAt([]byte("!"), 12)
		note("WriteAt", err)
		note("Close", f.Close())
		data, err := io.ReadAll(r)
		note("read through the earlier handle "+fmt.Sprintf("%q", data), err)
		r.Close()
		fi, err := fsys.Stat("/d/f")
		note(fmt.Sprint("Stat ", fi.Mode(), " ", fi.Size()), err)

		a, err := fsys.OpenFile("/d/log", os.O_WRONLY|os.O_APPEND, 0)
		note("open a", err)
		b, err := fsys.OpenFile("/d/log", os.O_WRONLY|os.O_APPEND, 0)
		note("open b", err)
		for i := range 3 {
			_, err = a.WriteString(fmt.Sprintf("a%d\n", i))
			note("a", err)
			_, err = b.WriteString(fmt.Sprintf("b%d\n", i))
			note("b", err)
		}
		a.Close()
		b.Close()
		data, err = afero.ReadFile(fsys, "/d/log")
		note(fmt.Sprintf("log %q", data), err)

		g, _ := fsys.OpenFile("/d/log", os.O_RDWR, 0)
		note("Truncate", g.Truncate(3))
		g.Close()
		data, err = afero.ReadFile(fsys, "/d/log")
		note(fmt.Sprintf("truncated %q", data), err)
		note("Chmod", fsys.Chmod("/d/f", 0o600))
		return out
	})
	if !slices.Contains(got, `log "start\na0\nb0\na1\nb1\na2\nb2\n": nil`) {
		t.Errorf("O_APPEND over a lower file: %q", got)
	}
	if data, err := fs.ReadFile(lower, "d/f"); err != nil || string(data) != "lower data" {
		t.Errorf("the lower layer changed: %q, %v", data, err)
	}
	if data, err := fs.ReadFile(lower, "d/log"); err != nil || string(data) != "start\n" {
		t.Errorf("the lower layer changed: %q, %v", data, err)
	}
}

// TestUnionReaddirPaging pages through a listing merged from the upper and
// the lower layer, with whiteouts for removed lower names: os's io.EOF
// rules, and no whiteout ever shows.
func TestUnionReaddirPaging(t *testing.T) {
	host, back := bothOver(t, func(fsys afero.Fs) {
		fsys.Mkdir("/d", 0o755)
		for i := range 9 {
			afero.WriteFile(fsys, fmt.Sprintf("/d/f%d", i), []byte{byte(i)}, 0o644)
		}
		fsys.Mkdir("/d/sub", 0o755)
	})
	got := same(t, host, back, func(fsys afero.Fs) []string {
		fsys.Remove("/d/f1")
		fsys.Remove("/d/f4")
		fsys.RemoveAll("/d/sub")
		afero.WriteFile(fsys, "/d/f0", []byte("up"), 0o644) // copied up: listed once
		afero.WriteFile(fsys, "/d/g", nil, 0o644)
		fsys.Mkdir("/d/h", 0o755)
		var out []string
		for _, n := range []int{1, 2, 3, 4, 100, 0, -1} {
			f, _ := fsys.Open("/d")
			var names []string
			var pages []string
			for range 20 {
				var page []string
				var err error
				if n%2 == 0 {
					var list []os.FileInfo
					list, err = f.Readdir(n)
					for _, fi := range list {
						page = append(page, fi.Name()+" "+fi.Mode().String())
					}
				} else {
					page, err = f.Readdirnames(n)
				}
				names = append(names, page...)
				pages = append(pages, fmt.Sprint(len(page), class(err)))
				if err != nil || n <= 0 {
					break
				}
			}
			f.Close()
			slices.Sort(names)
			out = append(out, fmt.Sprint(n, ": ", strings.Join(pages, ","), " ", strings.Join(names, ",")))
		}
		return out
	})
	for _, line := range got {
		if strings.Contains(line, ".wh.") || strings.Contains(line, "f1") || strings.Contains(line, "sub") {
			t.Errorf("a whiteout or a removed name shows: %s", line)
		}
	}
}

// TestUnionRenameLowerDir renames a directory that only a lower layer
// holds, then makes a new one where it was.
func TestUnionRenameLowerDir(t *testing.T) {
	host, back := bothOver(t, func(fsys afero.Fs) {
		fsys.MkdirAll("/a/b/c", 0o750)
		afero.WriteFile(fsys, "/a/f", []byte("f"), 0o644)
		afero.WriteFile(fsys, "/a/b/c/g", []byte("g"), 0o600)
		fsys.(afero.Linker).SymlinkIfPossible("b/c/g", "/a/link")
	})
	same(t, host, back, func(fsys afero.Fs) []string {
		var out []string
		note := func(what string, err error) { out = append(out, what+": "+class(err)+" "+errOp(err)) }
		note("Rename into itself", fsys.Rename("/a", "/a/b/x"))
		note("Rename", fsys.Rename("/a", "/z"))
		_, err := fsys.Stat("/a")
		note("Stat old", err)
		data, err := afero.ReadFile(fsys, "/z/link")
		note("read through the moved link "+string(data), err)
		note("Mkdir old", fsys.Mkdir("/a", 0o755))
		names, err := afero.ReadDir(fsys, "/a")
		note(fmt.Sprint("ReadDir new ", len(names)), err)
		note("Rename back over the empty dir", fsys.Rename("/z/b", "/a"))
		data, err = afero.ReadFile(fsys, "/a/c/g")
		note("read "+string(data), err)
		return out
	})
}

// TestUnionRemoveCreate removes a lower file and creates it again: the new
// file starts empty, with the new mode, and the old data never returns.
func TestUnionRemoveCreate(t *testing.T) {
	host, back := bothOver(t, func(fsys afero.Fs) {
		afero.WriteFile(fsys, "/f", []byte("old contents"), 0o600)
	})
	got := same(t, host, back, func(fsys afero.Fs) []string {
		var out []string
		note := func(what string, err error) { out = append(out, what+": "+class(err)) }
		note("Remove", fsys.Remove("/f"))
		_, err := fsys.Stat("/f")
		note("Stat", err)
		note("Remove again", fsys.Remove("/f"))
		f, err := fsys.Create("/f")
		note("Create", err)
		fi, _ := f.Stat()
		out = append(out, fmt.Sprint("size ", fi.Size(), " ", fi.Mode()))
		f.WriteString("new")
		f.Close()
		data, err := afero.ReadFile(fsys, "/f")
		note("ReadFile "+string(data), err)
		return out
	})
	if !slices.Contains(got, "ReadFile new: nil") {
		t.Errorf("%q", got)
	}
}

// TestUnionRemoveDirMkdir removes a lower directory and makes it again: the
// new directory is opaque, the lower contents stay hidden.
func TestUnionRemoveDirMkdir(t *testing.T) {
	host, back := bothOver(t, func(fsys afero.Fs) {
		fsys.MkdirAll("/d/sub", 0o755)
		afero.WriteFile(fsys, "/d/x", []byte("x"), 0o644)
		afero.WriteFile(fsys, "/d/sub/y", []byte("y"), 0o644)
		fsys.Mkdir("/e", 0o700)
		afero.WriteFile(fsys, "/e/z", []byte("z"), 0o644)
	})
	got := same(t, host, back, func(fsys afero.Fs) []string {
		var out []string
		note := func(what string, err error) { out = append(out, what+": "+class(err)) }
		note("Remove non-empty", fsys.Remove("/d"))
		note("RemoveAll", fsys.RemoveAll("/d"))
		note("Mkdir", fsys.Mkdir("/d", 0o700))
		empty, err := afero.IsEmpty(fsys, "/d")
		note(fmt.Sprint("IsEmpty ", empty), err)
		_, err = fsys.Stat("/d/sub/y")
		note("Stat old", err)
		note("Mkdir sub", fsys.Mkdir("/d/sub", 0o755))
		_, err = fsys.Stat("/d/sub/y")
		note("Stat old in new sub", err)
		// Remove the files one by one, then the directory.
		note("Remove z", fsys.Remove("/e/z"))
		note("Remove e", fsys.Remove("/e"))
		note("Mkdir e", fsys.Mkdir("/e", 0o755))
		f, _ := fsys.Open("/e")
		names, err := f.Readdirnames(-1)
		f.Close()
		note(fmt.Sprint("Readdirnames ", names), err)
		return out
	})
	if !slices.Contains(got, "IsEmpty true: nil") || !slices.Contains(got, "Readdirnames []: nil") {
		t.Errorf("old contents show: %q", got)
	}
}

// TestUnionAferoLowers stacks afero backends, through Layer, as the lower
// layer of a union, and reads and writes through the adapter over it.
func TestUnionAferoLowers(t *testing.T) {
	for _, c := range []struct {
		name string
		fs   func(t *testing.T) afero.Fs
	}{
		{"MemMapFs", func(*testing.T) afero.Fs { return afero.NewMemMapFs() }},
		{"BasePathFs", func(t *testing.T) afero.Fs { return afero.NewBasePathFs(afero.NewOsFs(), tempDir(t)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := c.fs(t)
			a.MkdirAll("/etc/app", 0o755)
			afero.WriteFile(a, "/etc/app/config", []byte("debug: true\n"), 0o644)
			afero.WriteFile(a, "/etc/hosts", []byte("127.0.0.1 localhost\n"), 0o644)
			fsys := aferoadapter.New(packfs.New(mem.New(), aferoadapter.Layer(a)))

			data, err := afero.ReadFile(fsys, "/etc/app/config")
			if err != nil || string(data) != "debug: true\n" {
				t.Errorf("ReadFile = %q, %v", data, err)
			}
			fi, err := fsys.Stat("/etc/hosts")
			if err != nil || fi.Size() != 20 || fi.IsDir() {
				t.Errorf("Stat = %v, %v", fi, err)
			}
			list, err := afero.ReadDir(fsys, "/etc")
			var names []string
			for _, fi := range list {
				names = append(names, fi.Name())
			}
			if err != nil || !slices.Equal(names, []string{"app", "hosts"}) {
				t.Errorf("ReadDir = %v, %v", names, err)
			}
			var walked []string
			afero.Walk(fsys, "/", func(p string, _ os.FileInfo, err error) error {
				walked = append(walked, p)
				return err
			})
			if want := []string{"/", "/etc", "/etc/app", "/etc/app/config", "/etc/hosts"}; !slices.Equal(walked, want) {
				t.Errorf("Walk = %q, want %q", walked, want)
			}
			if ok, err := afero.FileContainsBytes(fsys, "/etc/app/config", []byte("debug")); !ok || err != nil {
				t.Errorf("FileContainsBytes = %v, %v", ok, err)
			}
			// Writes go to the upper layer: the afero backend is untouched.
			if err := afero.WriteFile(fsys, "/etc/app/config", []byte("debug: false\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := fsys.Remove("/etc/hosts"); err != nil {
				t.Fatal(err)
			}
			if data, _ := afero.ReadFile(fsys, "/etc/app/config"); string(data) != "debug: false\n" {
				t.Errorf("after write: %q", data)
			}
			if _, err := fsys.Stat("/etc/hosts"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after Remove: %v", err)
			}
			if data, _ := afero.ReadFile(a, "/etc/app/config"); string(data) != "debug: true\n" {
				t.Errorf("the lower afero backend changed: %q", data)
			}
			if _, err := a.Stat("/etc/hosts"); err != nil {
				t.Errorf("the lower afero backend changed: %v", err)
			}
		})
	}
}

// TestUnionIOFS checks afero.NewIOFS over the adapter over a union whose
// lower holds each conformance tree (without dangling symlinks), with
// fstest.TestFS: as it is, and after writes, removals and new names in
// the upper layer.
func TestUnionIOFS(t *testing.T) {
	for _, tree := range conformance.Trees() {
		switch tree.Name {
		case "symlinks":
			continue // dangling links fail fstest.TestFS on every fs.FS
		case "sizes":
			continue // 20 s: TestIOFS covers it over mem
		case "wide":
			if testsize.Short() || raceEnabled {
				continue // slow: see TestIOFS
			}
		}
		for _, mutate := range []bool{false, true} {
			t.Run(fmt.Sprint(tree.Name, "/mutated=", mutate), func(t *testing.T) {
				lower := mem.New()
				if err := conformance.Populate(lower, tree); err != nil {
					t.Fatal(err)
				}
				u := packfs.New(mem.New(), lower.Snapshot())
				if mutate {
					mutateUnion(t, aferoadapter.New(u))
				}
				var want []string
				fs.WalkDir(u, ".", func(p string, d fs.DirEntry, err error) error {
					if p != "." && len(want) < 200 {
						want = append(want, p)
					}
					return nil
				})
				if err := fstest.TestFS(afero.NewIOFS(aferoadapter.New(u)), want...); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// mutateUnion changes every few regular files of a union through afero:
// appends to one, removes the next (truncates it if the tree has symlinks,
// which must not dangle), and adds a directory and a file.
func mutateUnion(t *testing.T, fsys afero.Fs) {
	t.Helper()
	links := false
	afero.Walk(fsys, "/", func(p string, fi os.FileInfo, err error) error {
		links = links || err == nil && fi.Mode()&fs.ModeSymlink != 0
		return err
	})
	i := 0
	err := afero.Walk(fsys, "/", func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		switch i++; i % 3 {
		case 0:
			f, err := fsys.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				return err
			}
			f.WriteString("appended")
			return f.Close()
		case 1:
			if links {
				f, err := fsys.OpenFile(p, os.O_WRONLY, 0)
				if err != nil {
					return err
				}
				f.Truncate(1)
				return f.Close()
			}
			return fsys.Remove(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.MkdirAll("/new/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := afero.WriteFile(fsys, "/new/dir/file", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUnionHandleRegressions checks, one by one, the union's directory
// and read-only handle bugs (package packfs, not the adapter) that the
// union differential test found, so none comes back.
func TestUnionHandleRegressions(t *testing.T) {
	var bugs []string
	// 1. An opaque directory (made where a lower name was removed) lists
	// its opaque marker through its handle; fs.ReadDir on the union does
	// not. The same holds for a lower directory removed and made again.
	lower := mem.New()
	f, err := lower.OpenFile("b", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	u := packfs.New(mem.New(), lower.Snapshot())
	if err := u.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if err := u.Mkdir("b", 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := u.Open("b")
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.(fs.ReadDirFile).ReadDir(-1)
	d.Close()
	if err != nil || len(list) != 0 {
		bugs = append(bugs, fmt.Sprintf("Open(b).ReadDir(-1) = %v, %v; want [] (fs.ReadDir gives [])", list, err))
	}
	// 2. ReadAt at a negative offset on a merged directory's handle gives
	// EISDIR; os (and mem) report the negative offset.
	u = packfs.New(mem.New(), lower.Snapshot())
	d, err = u.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.(io.ReaderAt).ReadAt(make([]byte, 4), -1); errors.Is(err, syscall.EISDIR) {
		bugs = append(bugs, fmt.Sprintf("Open(.).ReadAt(p, -1) = %v; want os's negative offset error", err))
	}
	d.Close()
	// 3-5, through the adapter, on a directory of the lower layer.
	lower = mem.New()
	if err := lower.MkdirAll("d/x", 0o755); err != nil {
		t.Fatal(err)
	}
	fsys := aferoadapter.New(packfs.New(mem.New(), lower.Snapshot()))
	h, err := fsys.Open("/d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt(nil, 0); err != nil {
		bugs = append(bugs, fmt.Sprintf("Open(d).WriteAt(nil, 0) = %v; os: 0, nil", err))
	}
	if err := lower.WriteFile("f", []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := aferoadapter.New(packfs.New(mem.New(), lower.Snapshot())).Open("/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteAt(nil, 0); err != nil {
		bugs = append(bugs, fmt.Sprintf("Open(f).WriteAt(nil, 0) on a lower file = %v; os: 0, nil", err))
	}
	g.Close()
	if _, err := h.WriteAt(nil, -1); err == nil {
		bugs = append(bugs, "Open(d).WriteAt(nil, -1) = nil error; want os's negative offset error")
	}
	if _, err := h.WriteAt([]byte("x"), -1); errors.Is(err, syscall.EBADF) {
		bugs = append(bugs, fmt.Sprintf("Open(d).WriteAt(p, -1) = %v; want os's negative offset error", err))
	}
	if err := fsys.Mkdir("/d/new", 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := h.Readdirnames(-1)
	if slices.Sort(names); err != nil || !slices.Equal(names, []string{"new", "x"}) {
		bugs = append(bugs, fmt.Sprintf("Open(d); Mkdir(d/new); Readdirnames(-1) = %v, %v; os: [new x]", names, err))
	}
	if err := fsys.Chmod("/d", 0o700); err != nil {
		t.Fatal(err)
	}
	if fi, err := h.Stat(); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		bugs = append(bugs, fmt.Sprintf("Open(d); Chmod(d, 0o700); Stat() = %v, %v; os: drwx------", fi.Mode(), err))
	}
	if err := fsys.Chmod("/", 0o744); err != nil {
		t.Fatal(err)
	}
	if root, err := fsys.Open("/"); err == nil {
		fsys.Chmod("/", 0o755)
		if fi, err := root.Stat(); err != nil || fi.Mode() != fs.ModeDir|0o755 {
			bugs = append(bugs, fmt.Sprintf("Open(/); Chmod(/, 0o755); Stat() = %v, %v; os: drwxr-xr-x", fi.Mode(), err))
		}
		root.Close()
	}
	h.Close()
	h, err = fsys.Open("/d")
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.RemoveAll("/d"); err != nil {
		t.Fatal(err)
	}
	if names, err := h.Readdirnames(-1); !errors.Is(err, fs.ErrNotExist) {
		bugs = append(bugs, fmt.Sprintf("Open(d); RemoveAll(d); Readdirnames(-1) = %v, %v; os: ENOENT", names, err))
	}
	h.Close()
	for _, bug := range bugs {
		t.Error(bug)
	}
}
