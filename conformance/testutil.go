package conformance

import (
	"bytes"
	"fmt"
	"io/fs"
	"testing"

	"github.com/packfs/packfs/layer"
)

// writeFile writes data to name with mode 0o644, failing the test at once
// on error.
func writeFile(t *testing.T, fsys layer.FS, name, data string) {
	t.Helper()
	must(t, fmt.Sprintf("WriteFile(%q)", name), fsys.WriteFile(name, []byte(data), 0o644))
}

// mkdir creates the directory name with mode 0o755.
func mkdir(t *testing.T, fsys layer.FS, name string) {
	t.Helper()
	must(t, fmt.Sprintf("Mkdir(%q)", name), fsys.Mkdir(name, 0o755))
}

// symlink creates name as a symlink to target.
func symlink(t *testing.T, fsys layer.FS, target, name string) {
	t.Helper()
	must(t, fmt.Sprintf("Symlink(%q, %q)", target, name), fsys.Symlink(target, name))
}

// wantContent reports unless name reads as want.
func wantContent(t *testing.T, fsys fs.FS, name, want string) {
	t.Helper()
	got, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Errorf("ReadFile(%q): %v", name, err)
		return
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("ReadFile(%q) = %q, want %q", name, got, want)
	}
}

// wantMissing reports unless Lstat of name gives fs.ErrNotExist.
func wantMissing(t *testing.T, fsys fs.FS, name string) {
	t.Helper()
	if _, err := fs.Lstat(fsys, name); errClass(err) != classNotExist {
		t.Errorf("Lstat(%q) = %v, want it missing (fs.ErrNotExist)", name, err)
	}
}

// wantMode reports unless Lstat of name gives mode.
func wantMode(t *testing.T, fsys fs.FS, name string, mode fs.FileMode) {
	t.Helper()
	fi, err := fs.Lstat(fsys, name)
	if err != nil {
		t.Errorf("Lstat(%q): %v", name, err)
		return
	}
	if fi.Mode() != mode {
		t.Errorf("Lstat(%q).Mode() = %v, want %v", name, fi.Mode(), mode)
	}
}

// openFile opens name, failing the test at once on error, and closes it
// when the test ends.
func openFile(t *testing.T, fsys layer.FS, name string, flag int, perm fs.FileMode) layer.File {
	t.Helper()
	f, err := fsys.OpenFile(name, flag, perm)
	must(t, fmt.Sprintf("OpenFile(%q, %#o)", name, flag), err)
	t.Cleanup(func() { f.Close() })
	return f
}
