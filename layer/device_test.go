package layer_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/layer"
	"golang.org/x/sys/unix"
)

// TestIssue15IsWhiteoutInfo: a host character device is a whiteout only
// when it is device 0/0.
func TestIssue15IsWhiteoutInfo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (mknod)")
	}
	dir := t.TempDir()
	for name, dev := range map[string]uint64{"wh": 0, "null": unix.Mkdev(1, 3), "tty": unix.Mkdev(5, 0)} {
		p := filepath.Join(dir, name)
		if err := unix.Mknod(p, unix.S_IFCHR|0o600, int(dev)); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !layer.IsWhiteout(fi.Mode()) {
			t.Fatalf("%s: mode %v is not a character device", name, fi.Mode())
		}
		if got := layer.IsWhiteoutInfo(fi); got != (dev == 0) {
			t.Errorf("IsWhiteoutInfo(%s, %d) = %v", name, dev, got)
		}
	}
	if !layer.IsWhiteoutInfo(fileInfo{}) {
		t.Error("an entry without a device number is not a whiteout")
	}
}

type fileInfo struct{ fs.FileInfo }

func (fileInfo) Mode() fs.FileMode { return layer.ModeWhiteout }
func (fileInfo) Sys() any          { return nil }
