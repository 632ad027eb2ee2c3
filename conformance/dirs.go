package conformance

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"testing"
)

// The tests of this file check directory handles as fs.ReadDirFile
// specifies them and as Linux keeps them.

var (
	_ = register("ReadDirPaging", testReadDirPaging)
	_ = register("ReadDirModify", testReadDirModify)
	_ = register("ReadDirSorted", testReadDirSorted)
)

func testReadDirPaging(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	want := map[string]fs.FileMode{}
	for i := range 25 {
		name := fmt.Sprintf("e%02d", i)
		switch i % 3 {
		case 0:
			writeFile(t, fsys, "d/"+name, name)
			want[name] = 0
		case 1:
			mkdir(t, fsys, "d/"+name)
			want[name] = fs.ModeDir
		case 2:
			symlink(t, fsys, "e00", "d/"+name)
			want[name] = fs.ModeSymlink
		}
	}
	for _, n := range []int{1, 7, 10, 25, 100} {
		d := openFile(t, fsys, "d", os.O_RDONLY, 0)
		seen := map[string]bool{}
		for page := 0; ; page++ {
			list, err := d.ReadDir(n)
			if len(list) > n {
				t.Fatalf("ReadDir(%d) returned %d entries", n, len(list))
			}
			for _, e := range list {
				if seen[e.Name()] {
					t.Errorf("ReadDir(%d) returned %s twice", n, e.Name())
				}
				seen[e.Name()] = true
				checkDirEntry(t, fsys, "d", e, want)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("ReadDir(%d): %v", n, err)
			}
			if len(list) == 0 {
				t.Fatalf("ReadDir(%d) returned no entries and no error", n)
			}
			if page > 100 {
				t.Fatalf("ReadDir(%d) does not reach io.EOF", n)
			}
		}
		if len(seen) != len(want) {
			t.Errorf("ReadDir(%d) pages gave %d entries, want %d", n, len(seen), len(want))
		}
		if list, err := d.ReadDir(n); len(list) != 0 || err != io.EOF {
			t.Errorf("ReadDir(%d) at EOF again = %d entries, %v; want 0, io.EOF", n, len(list), err)
		}
		if list, err := d.ReadDir(-1); len(list) != 0 || err != nil {
			t.Errorf("ReadDir(-1) at EOF = %d entries, %v; want 0, nil", len(list), err)
		}
		must(t, "Close", d.Close())
	}
	// ReadDir(-1) and ReadDir(0) return everything that remains.
	for _, n := range []int{-1, 0} {
		d := openFile(t, fsys, "d", os.O_RDONLY, 0)
		first, err := d.ReadDir(5)
		must(t, "ReadDir(5)", err)
		rest, err := d.ReadDir(n)
		if err != nil || len(first)+len(rest) != len(want) {
			t.Errorf("ReadDir(%d) after ReadDir(5) = %d entries, %v; want %d, nil", n, len(rest), err, len(want)-5)
		}
		if list, err := d.ReadDir(n); len(list) != 0 || err != nil {
			t.Errorf("ReadDir(%d) at EOF = %d entries, %v; want 0, nil", n, len(list), err)
		}
	}
	empty := "empty"
	mkdir(t, fsys, empty)
	d := openFile(t, fsys, empty, os.O_RDONLY, 0)
	if list, err := d.ReadDir(1); len(list) != 0 || err != io.EOF {
		t.Errorf("ReadDir(1) of an empty directory = %d entries, %v; want 0, io.EOF", len(list), err)
	}
}

// checkDirEntry checks e, listed in dir, against Lstat and the expected
// types.
func checkDirEntry(t *testing.T, fsys fs.FS, dir string, e fs.DirEntry, want map[string]fs.FileMode) {
	t.Helper()
	typ, ok := want[e.Name()]
	if !ok {
		t.Errorf("ReadDir returned %q, which is not in the directory", e.Name())
		return
	}
	if e.Type() != typ || e.IsDir() != (typ == fs.ModeDir) {
		t.Errorf("%s: DirEntry.Type() = %v, IsDir() = %v; want %v", e.Name(), e.Type(), e.IsDir(), typ)
	}
	info, err := e.Info()
	if err != nil {
		t.Errorf("%s: Info: %v", e.Name(), err)
		return
	}
	fi, err := fs.Lstat(fsys, dir+"/"+e.Name())
	if err != nil {
		t.Errorf("Lstat: %v", err)
		return
	}
	if info.Name() != e.Name() || info.Mode() != fi.Mode() || info.Mode().Type() != typ ||
		(typ != fs.ModeDir && info.Size() != fi.Size()) {
		t.Errorf("%s: DirEntry.Info() = %s %v %d, Lstat = %s %v %d", e.Name(), info.Name(), info.Mode(), info.Size(), fi.Name(), fi.Mode(), fi.Size())
	}
}

// testReadDirModify changes a directory while a handle pages through it:
// entries present throughout come exactly once, none comes twice, and
// nothing panics.
func testReadDirModify(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	const n = 30
	for i := range n {
		writeFile(t, fsys, fmt.Sprintf("d/e%02d", i), "")
	}
	d := openFile(t, fsys, "d", os.O_RDONLY, 0)
	seen := map[string]int{}
	list, err := d.ReadDir(10)
	must(t, "ReadDir(10)", err)
	for _, e := range list {
		seen[e.Name()]++
	}
	removed := map[string]bool{}
	for i := 0; i < n; i += 3 {
		name := fmt.Sprintf("e%02d", i)
		must(t, "Remove", fsys.Remove("d/"+name))
		removed[name] = true
	}
	for i := range 10 {
		writeFile(t, fsys, fmt.Sprintf("d/new%02d", i), "")
	}
	must(t, "Rename", fsys.Rename("d/e01", "d/e01-renamed"))
	removed["e01"] = true
	for range 100 {
		list, err := d.ReadDir(7)
		for _, e := range list {
			seen[e.Name()]++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("ReadDir(7) during changes: %v", err)
		}
	}
	for name, count := range seen {
		if count > 1 {
			t.Errorf("%s listed %d times", name, count)
		}
	}
	for i := range n {
		name := fmt.Sprintf("e%02d", i)
		if !removed[name] && seen[name] != 1 {
			t.Errorf("%s, present throughout, was listed %d times, want once", name, seen[name])
		}
	}
	// A fresh listing shows the new state.
	names := readDirNames(t, fsys, "d")
	if len(names) != n-len(removed)+10+1 || !slices.Contains(names, "e01-renamed") || slices.Contains(names, "e00") {
		t.Errorf("after the changes, ReadDir(d) = %v", names)
	}
}

func readDirNames(t *testing.T, fsys fs.FS, dir string) []string {
	t.Helper()
	list, err := fs.ReadDir(fsys, dir)
	if !ok(t, fmt.Sprintf("ReadDir(%q)", dir), err) {
		return nil
	}
	names := make([]string, len(list))
	for i, e := range list {
		names[i] = e.Name()
	}
	return names
}

func testReadDirSorted(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	var want []string
	for _, name := range []string{"b", "a", "C", "é", "e", "_", "0", "aa", "a.b", "Z"} {
		writeFile(t, fsys, "d/"+name, "")
		want = append(want, name)
	}
	slices.Sort(want)
	if got := readDirNames(t, fsys, "d"); !slices.Equal(got, want) {
		t.Errorf("ReadDir = %q, want %q (sorted by name)", got, want)
	}
	if got := readDirNames(t, fsys, "."); !slices.Equal(got, []string{"d"}) {
		t.Errorf(`ReadDir(".") = %q, want [d]`, got)
	}
}
