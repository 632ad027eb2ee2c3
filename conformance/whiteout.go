package conformance

import (
	"errors"
	"testing"

	"github.com/packfs/packfs/layer"
)

// The tests of this file check whiteouts and opaque directories (see
// layer.WhiteoutFS); they skip a backend whose Whiteout returns
// errors.ErrUnsupported.

var (
	_ = register("Whiteout", testWhiteout)
	_ = register("Opaque", testOpaque)
)

func skipWithoutWhiteouts(t *testing.T, fsys layer.FS) {
	t.Helper()
	if err := layer.Whiteout(fsys, "probe"); errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("the backend stores no whiteouts: %v", err)
	} else if err != nil {
		t.Fatalf("Whiteout(probe): %v", err)
	}
	must(t, "Remove(probe)", fsys.Remove("probe"))
}

func wantWhiteout(t *testing.T, fsys layer.FS, name string) {
	t.Helper()
	fi, err := fsys.Lstat(name)
	if err != nil {
		t.Errorf("Lstat(%q): %v", name, err)
		return
	}
	if !layer.IsWhiteout(fi.Mode()) {
		t.Errorf("Lstat(%q).Mode() = %v, want a whiteout (%v)", name, fi.Mode(), layer.ModeWhiteout)
	}
}

func testWhiteout(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	skipWithoutWhiteouts(t, fsys)
	writeFile(t, fsys, "file", "x")
	mkdir(t, fsys, "empty")
	mkdir(t, fsys, "full")
	writeFile(t, fsys, "full/f", "y")
	symlink(t, fsys, "file", "link")
	for _, name := range []string{"new", "file", "empty", "link", "new"} {
		must(t, "Whiteout("+name+")", fsys.Whiteout(name))
		wantWhiteout(t, fsys, name)
	}
	wantContent(t, fsys, "full/f", "y")
	wantPathErrClass(t, "Whiteout(full)", fsys.Whiteout("full"), classNotEmpty, "full")
	wantContent(t, fsys, "full/f", "y")
	wantPathErrClass(t, "Whiteout(nodir/x)", fsys.Whiteout("nodir/x"), classNotExist, "nodir/x")
	wantMissing(t, fsys, "nodir")
	writeFile(t, fsys, "f2", "z")
	wantPathErrClass(t, "Whiteout(f2/x)", fsys.Whiteout("f2/x"), classNotDir, "f2/x")
	must(t, "Whiteout(full/f)", fsys.Whiteout("full/f"))
	wantWhiteout(t, fsys, "full/f")
	list, err := fsys.ReadDir(".")
	must(t, "ReadDir", err)
	var whiteouts []string
	for _, e := range list {
		if layer.IsWhiteout(e.Type()) {
			whiteouts = append(whiteouts, e.Name())
		}
	}
	if len(whiteouts) != 4 {
		t.Errorf("ReadDir lists whiteouts %v, want empty, file, link, new", whiteouts)
	}
	must(t, "Remove(new)", fsys.Remove("new"))
	wantMissing(t, fsys, "new")
	// Writing over a whiteout may fail or replace it, but never drop the
	// data silently.
	if err := fsys.WriteFile("file", []byte("back"), 0o644); err == nil {
		wantContent(t, fsys, "file", "back")
	}
	must(t, "Remove(file)", fsys.Remove("file"))
	writeFile(t, fsys, "file", "again")
	wantContent(t, fsys, "file", "again")
	must(t, "Rename(full, moved)", fsys.Rename("full", "moved"))
	wantWhiteout(t, fsys, "moved/f")
}

// wantPathErrClass checks the class and path of a whiteout error; its Op
// is not specified.
func wantPathErrClass(t *testing.T, call string, err error, class, path string) {
	t.Helper()
	d := describeErr(err)
	if d.Class != class || d.Type != "PathError" || d.Path != path {
		t.Errorf("%s: got %v (%v), want an *fs.PathError for %s of class %s", call, d, err, path, class)
	}
}

func testOpaque(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	skipWithoutWhiteouts(t, fsys)
	mkdir(t, fsys, "d")
	writeFile(t, fsys, "d/f", "x")
	if layer.IsOpaque(fsys, "d") {
		t.Errorf("IsOpaque(d) before MarkOpaque")
	}
	if layer.IsOpaque(fsys, "missing") {
		t.Errorf("IsOpaque(missing)")
	}
	must(t, "MarkOpaque(d)", layer.MarkOpaque(fsys, "d"))
	if !layer.IsOpaque(fsys, "d") {
		t.Errorf("IsOpaque(d) after MarkOpaque is false")
	}
	wantWhiteout(t, fsys, "d/"+layer.OpaqueName)
	wantContent(t, fsys, "d/f", "x")
	must(t, "MarkOpaque(d) again", layer.MarkOpaque(fsys, "d"))
	must(t, "MarkOpaque(.)", layer.MarkOpaque(fsys, "."))
	if !layer.IsOpaque(fsys, ".") {
		t.Errorf(`IsOpaque(".") after MarkOpaque is false`)
	}
	if err := layer.MarkOpaque(fsys, "missing"); errClass(err) != classNotExist {
		t.Errorf("MarkOpaque(missing) = %v, want fs.ErrNotExist", err)
	}
	must(t, "Remove(opaque marker)", fsys.Remove("d/"+layer.OpaqueName))
	if layer.IsOpaque(fsys, "d") {
		t.Errorf("IsOpaque(d) after removing the marker")
	}
}
