package packfs_test

import (
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

// TestStatNameIsLastElement: Stat, Lstat and a file's own Stat name the
// result by the last element the caller used, as os does: through
// symlinks to files and to directories, in the upper layer and in lower
// ones, and again once the fast paths have learned the directory (each
// name is looked at three times). Names of 255 bytes and paths of 4095
// bytes included.
func TestStatNameIsLastElement(t *testing.T) {
	long := strings.Repeat("n", 255)
	deepDir := strings.Repeat("d/", 2046) + "d"
	lower := fstest.MapFS{
		"lo/g":        {Data: []byte("g")},
		"lo/sub/h":    {Data: []byte("h")},
		"lo/" + long:  {Data: []byte("l")},
		"both/x":      {Data: []byte("x")},
		"lo/sub/deep": {Data: []byte("d")},
	}
	setup := func(t *testing.T, w interface {
		MkdirAll(string, fs.FileMode) error
		WriteFile(string, []byte, fs.FileMode) error
		Symlink(string, string) error
	}) {
		mustDo(t, w.MkdirAll(deepDir, 0o755))
		mustDo(t, w.MkdirAll("both", 0o755))
		for _, f := range []string{"f", "d/f", deepDir + "/f", "d/" + long, "both/y"} {
			mustDo(t, w.WriteFile(f, []byte("x"), 0o644))
		}
		for _, l := range [][2]string{{"d", "ld"}, {"d/f", "lf"}, {"lo", "llo"}, {"lo/g", "lg"}, {"../lo/sub", "d/lsub"}, {"both", "lboth"}} {
			mustDo(t, w.Symlink(l[0], l[1]))
		}
	}
	names := []string{
		"f", "d/f", "ld/f", "lf", "d/" + long, "ld/" + long, deepDir + "/f",
		"lo/g", "llo/g", "lg", "lo/sub/h", "llo/sub/h", "d/lsub/h", "ld/lsub/h", "lo/" + long, "llo/" + long,
		"both/x", "both/y", "lboth/x", "lboth/y", "lo/sub", "llo/sub", "d/lsub", "lo", "llo",
	}
	type statter interface {
		Stat(string) (fs.FileInfo, error)
		Lstat(string) (fs.FileInfo, error)
		Open(string) (fs.File, error)
	}
	check := func(t *testing.T, s statter) {
		for range 3 {
			for _, n := range names {
				want := path.Base(n)
				fi, err := s.Stat(n)
				if err != nil {
					t.Fatalf("Stat(%q): %v", n, err)
				}
				if fi.Name() != want {
					t.Errorf("Stat(%q).Name() = %q, want %q", n, fi.Name(), want)
				}
				if fi, err = s.Lstat(n); err != nil || fi.Name() != want {
					t.Errorf("Lstat(%q): %v, %v; want the name %q", n, fi, err, want)
				}
				f, err := s.Open(n)
				if err != nil {
					t.Fatalf("Open(%q): %v", n, err)
				}
				fi, err = f.Stat()
				f.Close()
				if err != nil || fi.Name() != want {
					t.Errorf("Open(%q).Stat(): %v, %v; want the name %q", n, fi, err, want)
				}
			}
		}
	}
	t.Run("union", func(t *testing.T) {
		u := packfs.New(mem.New(), lower)
		setup(t, u)
		check(t, u)
	})
	t.Run("union, no writes since", func(t *testing.T) {
		top := mem.New()
		setup(t, top)
		u := packfs.New(mem.New(), top, lower)
		check(t, u)
	})
	t.Run("store", func(t *testing.T) {
		s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1, Lowers: []fs.FS{lower}})
		mustDo(t, err)
		defer s.Close()
		setup(t, s)
		check(t, s)
		mustDo(t, s.Checkpoint())
		check(t, s)
	})
}
