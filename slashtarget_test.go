package packfs_test

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// TestIssue13SymlinkSlashTarget: a final symlink whose target ends in a
// slash names a directory, as on Linux: Stat through it is ENOTDIR for a
// file, a symlink there is followed, and an open with O_CREAT is EISDIR
// whatever is there (nothing is created). Over mem, a pack and the union.
func TestIssue13SymlinkSlashTarget(t *testing.T) {
	build := func(t *testing.T) *mem.FS {
		m := mem.New()
		for _, err := range []error{
			m.WriteFile("f", []byte("x"), 0o644),
			m.Mkdir("d", 0o755),
			m.Symlink("f/", "lf"),
			m.Symlink("d/", "ld"),
			m.Symlink("x/", "lx"),
			m.Symlink("e/", "e"),
			m.Symlink("d", "l1"),
			m.Symlink("l1/", "l2"),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	type writable interface {
		fs.StatFS
		OpenFile(string, int, fs.FileMode) (layer.File, error)
	}
	stacks := map[string]func(t *testing.T) fs.StatFS{
		"mem":   func(t *testing.T) fs.StatFS { return build(t) },
		"pack":  func(t *testing.T) fs.StatFS { return packOf(t, build(t).Snapshot()) },
		"union": func(t *testing.T) fs.StatFS { return packfs.New(mem.New(), packOf(t, build(t).Snapshot())) },
	}
	for name, mk := range stacks {
		t.Run(name, func(t *testing.T) {
			fsys := mk(t)
			for _, c := range []struct {
				name string
				want error // nil: a directory
			}{
				{"lf", syscall.ENOTDIR}, {"ld", nil}, {"lx", fs.ErrNotExist}, {"e", syscall.ELOOP}, {"l2", nil},
			} {
				fi, err := fsys.Stat(c.name)
				switch {
				case c.want == nil && (err != nil || !fi.IsDir()):
					t.Errorf("Stat(%s) = %v, %v; want a directory", c.name, fi, err)
				case c.want != nil && !errors.Is(err, c.want):
					t.Errorf("Stat(%s) = %v, %v; want %v", c.name, fi, err, c.want)
				}
			}
			w, ok := fsys.(writable)
			if !ok {
				return
			}
			for _, n := range []string{"lf", "ld", "lx", "e"} {
				if f, err := w.OpenFile(n, os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, syscall.EISDIR) {
					if f != nil {
						f.Close()
					}
					t.Errorf("OpenFile(%s, O_CREATE) = %v; want EISDIR", n, err)
				}
			}
			if _, err := fsys.Stat("x"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("x was created: %v", err)
			}
		})
	}
}
