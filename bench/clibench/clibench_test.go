package clibench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	packfsBin string
	buildErr  error
	scratch   string
)

// setup builds packfs and returns the scratch directory, on tmpfs where
// there is one.
func setup(b *testing.B) string {
	buildOnce.Do(func() {
		base := ""
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			base = "/dev/shm"
		}
		scratch, buildErr = os.MkdirTemp(base, "clibench")
		if buildErr != nil {
			return
		}
		packfsBin = filepath.Join(scratch, "packfs")
		// Built in the project's own module, with its own go.sum.
		build := exec.Command("go", "build", "-o", packfsBin, "./cmd/packfs")
		build.Dir = filepath.Join("..", "..")
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = &exec.Error{Name: "go build: " + string(out), Err: err}
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return scratch
}

func TestMain(m *testing.M) {
	code := m.Run()
	if scratch != "" {
		os.RemoveAll(scratch)
	}
	os.Exit(code)
}

func source(b *testing.B) string {
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip("no go env GOROOT:", err)
	}
	src := filepath.Join(strings.TrimSpace(string(root)), "src")
	if _, err := os.Stat(src); err != nil {
		b.Skip("no Go source tree:", err)
	}
	return src
}

// tool is one archiver: how it packs src into out and extracts out into
// dir.
type tool struct {
	name, ext    string
	need         []string // programs it needs
	pack, unpack func(src, out, dir string) *exec.Cmd
}

func tools() []tool {
	return []tool{
		{name: "packfs", ext: ".pack",
			pack:   func(src, out, _ string) *exec.Cmd { return exec.Command(packfsBin, "pack", "-q", src, out) },
			unpack: func(_, out, dir string) *exec.Cmd { return exec.Command(packfsBin, "unpack", out, dir) }},
		{name: "tar", ext: ".tar", need: []string{"tar"},
			pack:   func(src, out, _ string) *exec.Cmd { return exec.Command("tar", "-cf", out, "-C", src, ".") },
			unpack: func(_, out, dir string) *exec.Cmd { return exec.Command("tar", "-xf", out, "-C", dir) }},
		{name: "zip-0", ext: ".zip", need: []string{"zip", "unzip"},
			pack: func(src, out, _ string) *exec.Cmd {
				c := exec.Command("zip", "-0", "-r", "-q", "-y", out, ".")
				c.Dir = src
				return c
			},
			unpack: func(_, out, dir string) *exec.Cmd { return exec.Command("unzip", "-q", out, "-d", dir) }},
	}
}

func usable(b *testing.B, t tool) {
	for _, p := range t.need {
		if _, err := exec.LookPath(p); err != nil {
			b.Skip(p, "is not installed")
		}
	}
}

func run(b *testing.B, c *exec.Cmd) {
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%v: %v\n%s", c.Args, err, out)
	}
}

// BenchmarkPack times packing the Go source tree, per tree.
func BenchmarkPack(b *testing.B) {
	dir := setup(b)
	src := source(b)
	for _, t := range tools() {
		b.Run(t.name, func(b *testing.B) {
			usable(b, t)
			out := filepath.Join(dir, "out"+t.ext)
			for b.Loop() {
				os.Remove(out)
				run(b, t.pack(src, out, ""))
			}
			if fi, err := os.Stat(out); err == nil {
				b.ReportMetric(float64(fi.Size())/1e6, "MB")
			}
			os.Remove(out)
		})
	}
}

// BenchmarkUnpack times extracting the Go source tree, per tree.
func BenchmarkUnpack(b *testing.B) {
	dir := setup(b)
	src := source(b)
	for _, t := range tools() {
		b.Run(t.name, func(b *testing.B) {
			usable(b, t)
			out := filepath.Join(dir, "in"+t.ext)
			run(b, t.pack(src, out, ""))
			dst := filepath.Join(dir, "tree")
			for b.Loop() {
				b.StopTimer()
				if err := os.RemoveAll(dst); err != nil {
					b.Fatal(err)
				}
				if err := os.Mkdir(dst, 0o755); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				run(b, t.unpack("", out, dst))
			}
			b.StopTimer()
			os.RemoveAll(dst)
			os.Remove(out)
		})
	}
}
