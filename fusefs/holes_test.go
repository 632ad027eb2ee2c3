package fusefs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"golang.org/x/sys/unix"
)

// TestMountedHoles checks that lseek(2)'s SEEK_DATA and SEEK_HOLE through
// a mount find the holes of a sparse file, in a mounted pack (the raw
// API) and in a mounted in-memory layer (the node API), so that cp and
// tar -S copy only its data; and that both fail with ENXIO at the end,
// as Linux's do (go-fuse's own answer gave the end for SEEK_HOLE there).
func TestMountedHoles(t *testing.T) {
	needFuse(t)
	sparse := func() *mem.FS {
		m := mem.New()
		f, err := m.OpenFile("s", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte("data"), 8<<20); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(16 << 20); err != nil {
			t.Fatal(err)
		}
		return m
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, sparse().Snapshot()); err != nil {
		t.Fatal(err)
	}
	pack, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fsys fs.FS
	}{{"pack", pack}, {"mem", sparse()}} {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := mountT(t, c.fsys, nil)
			f, err := os.Open(filepath.Join(dir, "s"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fd := int(f.Fd())
			if off, err := unix.Seek(fd, 0, unix.SEEK_HOLE); err != nil || off != 0 {
				t.Errorf("SEEK_HOLE from 0 = %d, %v; want 0", off, err)
			}
			d, err := unix.Seek(fd, 0, unix.SEEK_DATA)
			if err != nil || d > 8<<20 || d < 8<<20-64<<10 {
				t.Errorf("SEEK_DATA from 0 = %d, %v; want the block of byte %d", d, err, 8<<20)
			}
			if h, err := unix.Seek(fd, 8<<20, unix.SEEK_HOLE); err != nil || h <= 8<<20 || h > 9<<20 {
				t.Errorf("SEEK_HOLE from %d = %d, %v; want the end of its block", 8<<20, h, err)
			}
			for _, whence := range []int{unix.SEEK_DATA, unix.SEEK_HOLE} {
				if _, err := unix.Seek(fd, 16<<20, whence); !errors.Is(err, syscall.ENXIO) {
					t.Errorf("whence %d at the end = %v, want ENXIO", whence, err)
				}
			}
		})
	}
}
