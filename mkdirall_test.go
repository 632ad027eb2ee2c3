package packfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

// errnoOf returns the errno an error wraps, and the path it names.
func errnoOf(err error, root string) (string, string) {
	if err == nil {
		return "nil", ""
	}
	var pe *fs.PathError
	p := ""
	if errors.As(err, &pe) {
		p = strings.TrimPrefix(strings.TrimPrefix(pe.Path, root), "/")
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error(), p
	}
	return err.Error(), p
}

// TestMkdirAllLikeOS: MkdirAll's one walk through the union, over
// a lower pack, gives what os.MkdirAll gives, error and path, for
// symlinks on the way, files, dangling links and loops; past PATH_MAX it
// fails as os does, but without making the parents that fit.
func TestMkdirAllLikeOS(t *testing.T) {
	build := func(mk func(string) error, wf func(string) error, sl func(string, string) error) {
		must(t, mk("a"))
		must(t, wf("f"))
		must(t, sl("a", "l"))
		must(t, sl("missing/x", "dl"))
		must(t, sl("loop", "loop"))
		must(t, sl("f", "lf"))
	}
	host := t.TempDir()
	build(func(p string) error { return os.Mkdir(filepath.Join(host, p), 0o755) },
		func(p string) error { return os.WriteFile(filepath.Join(host, p), nil, 0o644) },
		func(o, n string) error { return os.Symlink(o, filepath.Join(host, n)) })
	m := mem.New()
	build(func(p string) error { return m.Mkdir(p, 0o755) },
		func(p string) error { return m.WriteFile(p, nil, 0o644) },
		m.Symlink)
	lower := packFS(t, m.Snapshot())
	long := "a" + strings.Repeat("/d", 2050) // 4,101 bytes
	for _, name := range []string{
		"a", "a/b/c", "l/b2/c", "f", "f/x/y", "lf/x", "dl", "dl/x", "loop", "loop/x", "l", "l/b2", long,
	} {
		u := packfs.New(mem.New(), lower)
		got, gotPath := errnoOf(u.MkdirAll(name, 0o755), "")
		want, wantPath := "file name too long", gotPath
		if name == long {
			// Unlike os.MkdirAll, which makes the parents that fit, it
			// fails whole: a failed operation changes nothing.
			if gotPath != name {
				t.Errorf("MkdirAll of %d bytes fails at %d bytes", len(name), len(gotPath))
			}
			wantMissing(t, u, "a/d")
		} else {
			dir := t.TempDir()
			must(t, os.CopyFS(dir, os.DirFS(host)))
			want, wantPath = errnoOf(os.MkdirAll(filepath.Join(dir, name), 0o755), dir)
		}
		if got != want || gotPath != wantPath {
			t.Errorf("MkdirAll(%.20s): %s at %.20s; os: %s at %.20s", name, got, gotPath, want, wantPath)
		}
		if want == "nil" {
			if fi, err := u.Stat(name); err != nil || !fi.IsDir() {
				t.Errorf("Stat(%.20s) after MkdirAll: %v", name, err)
			}
		}
	}
}

// A directory made by MkdirAll where a lower one was removed is opaque,
// down the whole chain it makes.
func TestMkdirAllOverRemoved(t *testing.T) {
	m := mem.New()
	must(t, m.MkdirAll("a/b", 0o755))
	must(t, m.WriteFile("a/b/old", nil, 0o644))
	u := packfs.New(mem.New(), packFS(t, m.Snapshot()))
	must(t, u.RemoveAll("a"))
	must(t, u.MkdirAll("a/b/c", 0o700))
	wantMissing(t, u, "a/b/old")
	if got := names(t, u, "a/b"); len(got) != 1 || got[0] != "c" {
		t.Errorf("a/b lists %v", got)
	}
	if fi, err := u.Stat("a/b/c"); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		t.Errorf("Stat(a/b/c) = %v, %v", fi, err)
	}
}
