package dirfsbench

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/dirfs"
)

// nEntries is the size of the ReadDir workload, the C predecessor's.
const nEntries = 20_000

// contestant is one way of reaching files below a directory.
type contestant struct {
	name     string
	dir      string // the host directory all contestants share
	stat     func(name string) (fs.FileInfo, error)
	open     func(name string) (io.ReadCloser, error)
	create   func(name string) (io.Closer, error)
	readDir  func(name string) ([]fs.DirEntry, error)
	closeAll func()
}

func contestants(tb testing.TB, dir string) []contestant {
	root, err := os.OpenRoot(dir)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := dirfs.New(dir)
	if err != nil {
		tb.Fatal(err)
	}
	dr, err := dirfs.New(dir, dirfs.ForceRoot())
	if err != nil {
		tb.Fatal(err)
	}
	join := func(n string) string { return dir + "/" + n }
	cs := []contestant{
		{
			name:    "os",
			stat:    func(n string) (fs.FileInfo, error) { return os.Stat(join(n)) },
			open:    func(n string) (io.ReadCloser, error) { return os.Open(join(n)) },
			create:  func(n string) (io.Closer, error) { return os.Create(join(n)) },
			readDir: func(n string) ([]fs.DirEntry, error) { return os.ReadDir(join(n)) },
		},
		{
			name:   "osroot",
			stat:   root.Stat,
			open:   func(n string) (io.ReadCloser, error) { return root.Open(n) },
			create: func(n string) (io.Closer, error) { return root.Create(n) },
			readDir: func(n string) ([]fs.DirEntry, error) {
				return fs.ReadDir(root.FS(), n)
			},
			closeAll: func() { root.Close() },
		},
	}
	for _, x := range []struct {
		name string
		fsys *dirfs.FS
	}{{"dirfs", d}, {"dirfs-osroot", dr}} {
		fsys := x.fsys
		cs = append(cs, contestant{
			name:     x.name,
			stat:     fsys.Stat,
			open:     func(n string) (io.ReadCloser, error) { return fsys.Open(n) },
			create:   func(n string) (io.Closer, error) { return fsys.Create(n) },
			readDir:  fsys.ReadDir,
			closeAll: func() { fsys.Close() },
		})
	}
	for i := range cs {
		cs[i].dir = dir
	}
	return cs
}

// places are the file systems benchmarked: the default temporary directory
// (ext4 or whatever the host has) and tmpfs.
func places(b *testing.B) map[string]string {
	p := map[string]string{"tmp": os.TempDir()}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		p["shm"] = "/dev/shm"
	}
	return p
}

func tempDir(b *testing.B, parent string) string {
	dir, err := os.MkdirTemp(parent, "dirfsbench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// run runs body for each place and contestant, with a fresh tree made by
// setup in each place.
func run(b *testing.B, setup func(b *testing.B, dir string), body func(b *testing.B, c contestant)) {
	for _, place := range []string{"tmp", "shm"} {
		parent, ok := places(b)[place]
		if !ok {
			continue
		}
		b.Run(place, func(b *testing.B) {
			dir := tempDir(b, parent)
			setup(b, dir)
			for _, c := range contestants(b, dir) {
				b.Run(c.name, func(b *testing.B) { body(b, c) })
				if c.closeAll != nil {
					c.closeAll()
				}
			}
		})
	}
}

func smallTree(b *testing.B, dir string) {
	if err := os.MkdirAll(filepath.Join(dir, "dir", "sub"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dir", "sub", "file"), make([]byte, 128), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStat stats a file two directories down.
func BenchmarkStat(b *testing.B) {
	run(b, smallTree, func(b *testing.B, c contestant) {
		for b.Loop() {
			if _, err := c.stat("dir/sub/file"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOpenRead opens a 128-byte file two directories down, reads it
// and closes it.
func BenchmarkOpenRead(b *testing.B) {
	run(b, smallTree, func(b *testing.B, c contestant) {
		buf := make([]byte, 512)
		for b.Loop() {
			f, err := c.open("dir/sub/file")
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := f.Read(buf); n != 128 {
				b.Fatalf("read %d bytes", n)
			}
			f.Close()
		}
	})
}

// BenchmarkCreate creates (and closes) a new empty file per iteration in a
// directory of its own.
func BenchmarkCreate(b *testing.B) {
	run(b, smallTree, func(b *testing.B, c contestant) {
		sub := "dir/" + c.name
		if err := os.Mkdir(filepath.Join(c.dir, sub), 0o755); err != nil && !os.IsExist(err) {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			f, err := c.create(fmt.Sprintf("%s/f%d", sub, i))
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
			i++
		}
	})
}

// BenchmarkReadDir lists a directory of 20,000 empty files.
func BenchmarkReadDir(b *testing.B) {
	run(b, func(b *testing.B, dir string) {
		big := filepath.Join(dir, "big")
		if err := os.Mkdir(big, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range nEntries {
			f, err := os.Create(filepath.Join(big, fmt.Sprintf("entry-%05d", i)))
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}, func(b *testing.B, c contestant) {
		for b.Loop() {
			list, err := c.readDir("big")
			if err != nil || len(list) != nEntries {
				b.Fatalf("%d entries, %v", len(list), err)
			}
		}
	})
}

// BenchmarkStatTop stats a file directly under the root, where dirfs needs
// no parent descriptor (one fstatat against the root).
func BenchmarkStatTop(b *testing.B) {
	run(b, func(b *testing.B, dir string) {
		if err := os.WriteFile(filepath.Join(dir, "file"), make([]byte, 128), 0o644); err != nil {
			b.Fatal(err)
		}
	}, func(b *testing.B, c contestant) {
		for b.Loop() {
			if _, err := c.stat("file"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
