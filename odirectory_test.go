package packfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestOpenDirectoryFlag: the union over a pack answers O_DIRECTORY and
// O_CREATE|O_DIRECTORY as Linux does, for names of either layer, and a
// refused open changes nothing (no copy-up of a lower file): O_CREATE with
// O_DIRECTORY is EINVAL whatever the name; O_DIRECTORY on anything but a
// directory, a final symlink under O_NOFOLLOW included, is ENOTDIR; on a
// directory it opens for reading and is EISDIR for writing.
func TestOpenDirectoryFlag(t *testing.T) {
	low := mem.New()
	must(t, low.Mkdir("ld", 0o755))
	must(t, low.WriteFile("lf", []byte("lower"), 0o644))
	must(t, low.Symlink("lf", "ll"))
	p := filepath.Join(t.TempDir(), "l.pack")
	must(t, packwriter.WriteFile(p, low.Snapshot()))
	r, err := packreader.Open(p)
	must(t, err)
	defer r.Close()
	up := mem.New()
	u := packfs.New(up, r)
	must(t, u.Mkdir("ud", 0o755))
	must(t, u.WriteFile("uf", []byte("upper"), 0o644))
	const dir, nofollow = syscall.O_DIRECTORY, syscall.O_NOFOLLOW
	for _, c := range []struct {
		name string
		flag int
		want error // nil: opens
	}{
		{"ld", os.O_RDONLY | dir, nil},
		{"ud", os.O_RDONLY | dir, nil},
		{".", os.O_RDONLY | dir, nil},
		{"lf", os.O_RDONLY | dir, syscall.ENOTDIR},
		{"uf", os.O_RDONLY | dir, syscall.ENOTDIR},
		{"ll", os.O_RDONLY | dir, syscall.ENOTDIR},
		{"ll", os.O_RDONLY | dir | nofollow, syscall.ENOTDIR},
		{"lf", os.O_RDWR | dir, syscall.ENOTDIR},
		{"lf", os.O_WRONLY | os.O_TRUNC | dir, syscall.ENOTDIR},
		{"ll", os.O_RDWR | dir | nofollow, syscall.ENOTDIR},
		{"ld", os.O_RDWR | dir, syscall.EISDIR},
		{"missing", os.O_RDONLY | dir, syscall.ENOENT},
		{"ld", os.O_CREATE | dir, syscall.EINVAL},
		{"lf", os.O_CREATE | os.O_RDWR | dir, syscall.EINVAL},
		{"new", os.O_CREATE | os.O_EXCL | os.O_WRONLY | dir, syscall.EINVAL},
	} {
		f, err := u.OpenFile(c.name, c.flag, 0o644)
		if c.want == nil {
			if err != nil {
				t.Errorf("OpenFile(%q, %#o): %v", c.name, c.flag, err)
			} else {
				f.Close()
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("OpenFile(%q, %#o) = %v, want %v", c.name, c.flag, err, c.want)
		}
		if err == nil {
			f.Close()
		}
	}
	// Nothing was copied up or made.
	for _, name := range []string{"lf", "ll", "ld", "new"} {
		if _, err := up.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("upper layer holds %s after refused opens: %v", name, err)
		}
	}
}
