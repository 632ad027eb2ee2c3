package fusebench

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

var (
	lowerOnce sync.Once
	lowerErr  error
	lowerDir  string // 20,000 small files in 20 directories, a lowerdir
	lowerPack string // its pack
)

// setupLower makes the small files' lower: a host directory, and its pack.
func setupLower(b *testing.B) {
	b.Helper()
	setup(b)
	lowerOnce.Do(func() {
		lowerDir = filepath.Join(scratch, "lowersmall")
		if lowerErr = os.Mkdir(lowerDir, 0o755); lowerErr != nil {
			return
		}
		createSmall(b, lowerDir)
		lowerPack = filepath.Join(scratch, "lowersmall.pack")
		f, err := os.Create(lowerPack)
		if err != nil {
			lowerErr = err
			return
		}
		if lowerErr = packwriter.Write(f, os.DirFS(lowerDir)); lowerErr == nil {
			lowerErr = f.Close()
		}
	})
	if lowerErr != nil {
		b.Fatal(lowerErr)
	}
}

// overLowers are the writable trees whose files all start in a read-only
// lower: a store over the pack (packfs mount --upper), fuse-overlayfs over
// the host directory, and a copy on tmpfs.
func overLowers() []system {
	return []system{
		{name: "packfs", mount: func(b *testing.B) (string, func()) {
			r, err := packreader.Open(lowerPack)
			if err != nil {
				b.Fatal(err)
			}
			storeDir, err := os.MkdirTemp(scratch, "upper")
			if err != nil {
				b.Fatal(err)
			}
			s, err := packfs.Open(storeDir, &packfs.Options{Lowers: []fs.FS{r}})
			if err != nil {
				b.Fatal(err)
			}
			dir := mountpoint(b)
			unmount := serve(b, dir, s, nil)
			return dir, func() { unmount(); s.Close(); r.Close(); os.RemoveAll(storeDir); released(b, storeDir) }
		}},
		{name: "fuse-overlayfs", need: []string{"fuse-overlayfs"}, mount: func(b *testing.B) (string, func()) {
			base, err := os.MkdirTemp(scratch, "overlay")
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range []string{"upper", "work"} {
				if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			dir := mountpoint(b)
			opts := fmt.Sprintf("lowerdir=%s,upperdir=%s/upper,workdir=%s/work", lowerDir, base, base)
			unmount := external(b, dir, "fuse-overlayfs", "-f", "-o", opts, dir)
			return dir, func() { unmount(); os.RemoveAll(base) }
		}},
		{name: "tmpfs", mount: func(b *testing.B) (string, func()) {
			dir := mountpoint(b)
			createSmall(b, dir)
			return dir, func() { os.RemoveAll(dir) }
		}},
	}
}

// renameSmall renames every small file within its directory.
func renameSmall(b *testing.B, dir string) {
	for i := range smallFiles {
		if err := os.Rename(smallName(dir, i), smallName(dir, i)+".r"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLowerFiles removes (files, then their emptied directories)
// or renames 20,000 small files that live in a read-only lower, on a
// fresh mount each time: whiteouts, and for a rename a copy-up as well.
func BenchmarkLowerFiles(b *testing.B) {
	setupLower(b)
	for _, op := range []string{"remove", "rename"} {
		b.Run(op, func(b *testing.B) {
			for _, s := range overLowers() {
				b.Run(s.name, func(b *testing.B) {
					usable(b, s)
					for b.Loop() {
						b.StopTimer()
						dir, unmount := s.mount(b)
						b.StartTimer()
						if op == "remove" {
							removeSmall(b, dir)
						} else {
							renameSmall(b, dir)
						}
						b.StopTimer()
						unmount()
						b.StartTimer()
					}
				})
			}
		})
	}
}
