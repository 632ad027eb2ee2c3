package fusebench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/fusefs"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

var (
	setupOnce sync.Once
	setupErr  error
	scratch   string // on tmpfs: the images, stores and mountpoints
	packFile  string // the pack of the tree
	squashImg string // its squashfs image, "" if mksquashfs is missing
)

func TestMain(m *testing.M) {
	code := m.Run()
	if scratch != "" {
		os.RemoveAll(scratch)
	}
	os.Exit(code)
}

// source returns the Go source tree, found with go env GOROOT.
func source() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return filepath.Join(os.Getenv("GOROOT"), "src")
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src")
}

// install installs the Debian packages the alternatives need, if missing.
func install() {
	need := map[string]string{"squashfuse": "squashfuse", "mksquashfs": "squashfs-tools", "fuse-overlayfs": "fuse-overlayfs", "fusermount3": "fuse3"}
	var pkgs []string
	for prog, pkg := range need {
		if _, err := exec.LookPath(prog); err != nil {
			pkgs = append(pkgs, pkg)
		}
	}
	if len(pkgs) == 0 || os.Geteuid() != 0 {
		return
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return
	}
	exec.Command("apt-get", "update", "-qq").Run()
	exec.Command("apt-get", append([]string{"install", "-y", "-qq"}, pkgs...)...).Run()
}

// setup makes the scratch directory, the pack and the squashfs image.
func setup(b *testing.B) {
	b.Helper()
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		b.Skipf("FUSE unavailable: %v", err)
	} else {
		f.Close()
	}
	setupOnce.Do(func() {
		install()
		base := ""
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			base = "/dev/shm"
		}
		if scratch, setupErr = os.MkdirTemp(base, "fusebench"); setupErr != nil {
			return
		}
		packFile = filepath.Join(scratch, "src.pack")
		var f *os.File
		if f, setupErr = os.Create(packFile); setupErr != nil {
			return
		}
		if setupErr = packwriter.Write(f, os.DirFS(source())); setupErr != nil {
			return
		}
		if setupErr = f.Close(); setupErr != nil {
			return
		}
		if _, err := exec.LookPath("mksquashfs"); err == nil {
			img := filepath.Join(scratch, "src.sqfs")
			if out, err := exec.Command("mksquashfs", source(), img, "-noappend", "-quiet", "-no-progress").CombinedOutput(); err != nil {
				setupErr = fmt.Errorf("mksquashfs: %v\n%s", err, out)
				return
			}
			squashImg = img
		}
	})
	if setupErr != nil {
		b.Fatal(setupErr)
	}
}

// mountpoint returns a new empty directory to mount on.
func mountpoint(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp(scratch, "mnt")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// isMounted reports whether dir is a mountpoint.
func isMounted(dir string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// system mounts one tree and unmounts it.
type system struct {
	name  string
	need  []string
	mount func(b *testing.B) (dir string, unmount func())
}

// external runs a FUSE server as a foreground process and waits for its
// mount.
func external(b *testing.B, dir string, name string, args ...string) func() {
	b.Helper()
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	serverPid.Store(int64(cmd.Process.Pid))
	deadline := time.Now().Add(20 * time.Second)
	for !isMounted(dir) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatalf("%s did not mount: %s", name, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() {
		if err := exec.Command("fusermount3", "-u", dir).Run(); err != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		serverPid.Store(0)
		os.Remove(dir)
	}
}

// serverPid is the process of the external FUSE server mounted now, 0
// when there is none.
var serverPid atomic.Int64

// cpuTime is the CPU time (user and system) this process and the
// external server, if any, have spent: with an in-process server, the
// program's and the server's work together, as for the others. On a
// loaded machine it shows the work a row costs when its elapsed time
// is mostly waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if pid := serverPid.Load(); pid != 0 {
		// /proc/PID/stat: utime and stime are fields 14 and 15, in
		// clock ticks (100 a second on Linux), after the command in
		// parentheses.
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if i := bytes.LastIndexByte(data, ')'); err == nil && i > 0 {
			if f := strings.Fields(string(data[i+1:])); len(f) > 13 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				t += time.Duration(u+st) * 10 * time.Millisecond
			}
		}
	}
	return t
}

// serve mounts fsys with fusefs in this process.
func serve(b *testing.B, dir string, fsys fs.FS, opts *fusefs.Options) func() {
	b.Helper()
	srv, err := fusefs.Mount(dir, fsys, opts)
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		if err := srv.Unmount(); err != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		srv.Wait()
		os.Remove(dir)
	}
}

// mountPack mounts the pack with fusefs.
func mountPack(b *testing.B, opts *fusefs.Options) (string, func()) {
	r, err := packreader.Open(packFile)
	if err != nil {
		b.Fatal(err)
	}
	dir := mountpoint(b)
	unmount := serve(b, dir, r, opts)
	return dir, func() { unmount(); r.Close() }
}

func readers() []system {
	systems := []system{
		{name: "packfs", mount: func(b *testing.B) (string, func()) { return mountPack(b, nil) }},
		{name: "squashfuse", need: []string{"squashfuse"}, mount: func(b *testing.B) (string, func()) {
			dir := mountpoint(b)
			return dir, external(b, dir, "squashfuse", "-f", squashImg, dir)
		}},
		{name: "squashfuse_ll", need: []string{"squashfuse_ll"}, mount: func(b *testing.B) (string, func()) {
			dir := mountpoint(b)
			return dir, external(b, dir, "squashfuse_ll", "-f", squashImg, dir)
		}},
	}
	if os.Getenv("FUSEBENCH_NODEAPI") != "" {
		// The pack through go-fuse's node API, for comparing it with
		// the raw API fusefs chooses for immutable trees.
		systems = append(systems[:1], append([]system{{name: "packfs-nodeapi", mount: func(b *testing.B) (string, func()) {
			return mountPack(b, &fusefs.Options{Immutable: true, NodeAPI: true})
		}}}, systems[1:]...)...)
	}
	return systems
}

func writers() []system {
	return []system{
		{name: "packfs", mount: func(b *testing.B) (string, func()) {
			storeDir, err := os.MkdirTemp(scratch, "store")
			if err != nil {
				b.Fatal(err)
			}
			s, err := packfs.Open(storeDir, nil)
			if err != nil {
				b.Fatal(err)
			}
			dir := mountpoint(b)
			unmount := serve(b, dir, s, nil)
			return dir, func() { unmount(); s.Close(); os.RemoveAll(storeDir); released(b, storeDir) }
		}},
		{name: "fuse-overlayfs", need: []string{"fuse-overlayfs"}, mount: func(b *testing.B) (string, func()) {
			base, err := os.MkdirTemp(scratch, "overlay")
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range []string{"lower", "upper", "work"} {
				if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			dir := mountpoint(b)
			opts := fmt.Sprintf("lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work", base, base, base)
			unmount := external(b, dir, "fuse-overlayfs", "-f", "-o", opts, dir)
			return dir, func() { unmount(); os.RemoveAll(base) }
		}},
		{name: "tmpfs", mount: func(b *testing.B) (string, func()) {
			dir := mountpoint(b)
			return dir, func() { os.RemoveAll(dir) }
		}},
	}
}

func usable(b *testing.B, s system) {
	for _, p := range s.need {
		if _, err := exec.LookPath(p); err != nil {
			b.Skipf("%s is not installed: no %s column", p, s.name)
		}
	}
	if strings.HasPrefix(s.name, "squashfuse") && squashImg == "" {
		b.Skip("mksquashfs is not installed: no squashfs image")
	}
}

// released waits until no file of the removed store directory dir is
// mapped into this process. A store's log stays mapped (its large writes'
// pages) until the garbage collector drops the last view of it, and the
// unmap then frees the removed files' pages: without the wait that cost
// of one run's teardown falls into the next run's timed section, where
// another tool's teardown (RemoveAll of its directories) is untimed.
func released(b *testing.B, dir string) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil || !bytes.Contains(maps, []byte(dir+"/")) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("files of %s still mapped after 10 s", dir)
		}
		time.Sleep(time.Millisecond)
	}
}

// settle collects this process's garbage before a timed run, so that the
// garbage of building the images, or of the last run, is not collected
// during it by the in-process server (the other servers are processes of
// their own).
func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}

// eachSystem runs f for each system as a sub-benchmark, with a fresh
// mount per iteration (cold) or one mount warmed by an untimed pass.
func eachSystem(b *testing.B, systems []system, warm bool, f func(b *testing.B, dir string)) {
	setup(b)
	for _, s := range systems {
		b.Run(s.name, func(b *testing.B) {
			usable(b, s)
			if warm {
				dir, unmount := s.mount(b)
				defer unmount()
				f(b, dir)
				settle()
				b.ResetTimer()
				for b.Loop() {
					f(b, dir)
				}
				return
			}
			for b.Loop() {
				b.StopTimer()
				dir, unmount := s.mount(b)
				settle()
				b.StartTimer()
				f(b, dir)
				b.StopTimer()
				unmount()
				b.StartTimer()
			}
		})
	}
}

// findStat is find(1) printing each entry's size, mode and mtime: an
// lstat of every entry.
func findStat(b *testing.B, dir string) {
	out, err := exec.Command("find", dir, "-printf", "%s %m %T@\n").Output()
	if err != nil {
		b.Fatal(err)
	}
	if bytes.Count(out, []byte("\n")) < 1000 {
		b.Fatalf("find saw %d entries", bytes.Count(out, []byte("\n")))
	}
}

// readAll reads every regular file.
func readAll(b *testing.B, dir string) {
	buf := make([]byte, 1<<20)
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		n, err := io.CopyBuffer(io.Discard, f, buf)
		f.Close()
		total += n
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(total)
}

// grepR searches every file for a string that is nowhere.
func grepR(b *testing.B, dir string) {
	err := exec.Command("grep", "-r", "-F", "zq-no-such-string-qz", dir).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		b.Fatalf("grep -r: %v, want exit 1 (no match)", err)
	}
}

func BenchmarkFindStat(b *testing.B) {
	b.Run("cold", func(b *testing.B) { eachSystem(b, readers(), false, findStat) })
	b.Run("warm", func(b *testing.B) { eachSystem(b, readers(), true, findStat) })
}

func BenchmarkReadAll(b *testing.B) {
	b.Run("cold", func(b *testing.B) { eachSystem(b, readers(), false, readAll) })
	b.Run("warm", func(b *testing.B) { eachSystem(b, readers(), true, readAll) })
}

func BenchmarkGrep(b *testing.B) {
	eachSystem(b, readers(), false, grepR)
}

const (
	smallFiles = 20000
	smallDirs  = 20
)

func smallName(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("d%02d/f%05d", i%smallDirs, i))
}

func createSmall(b *testing.B, dir string) {
	data := bytes.Repeat([]byte("x"), 100)
	for d := range smallDirs {
		if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("d%02d", d)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for i := range smallFiles {
		if err := os.WriteFile(smallName(dir, i), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func removeSmall(b *testing.B, dir string) {
	for i := range smallFiles {
		if err := os.Remove(smallName(dir, i)); err != nil {
			b.Fatal(err)
		}
	}
	for d := range smallDirs {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("d%02d", d))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSmallFiles creates and writes 20,000 files of 100 bytes in 20
// directories, then removes them, each on a fresh mount.
func BenchmarkSmallFiles(b *testing.B) {
	setup(b)
	for _, op := range []string{"create", "remove"} {
		b.Run(op, func(b *testing.B) {
			for _, s := range writers() {
				b.Run(s.name, func(b *testing.B) {
					usable(b, s)
					var cpu time.Duration
					for b.Loop() {
						b.StopTimer()
						dir, unmount := s.mount(b)
						if op == "remove" {
							createSmall(b, dir)
						}
						settle()
						at := cpuTime()
						b.StartTimer()
						if op == "create" {
							createSmall(b, dir)
						} else {
							removeSmall(b, dir)
						}
						b.StopTimer()
						cpu += cpuTime() - at
						unmount()
						b.StartTimer()
					}
					reportCPU(b, cpu)
				})
			}
		})
	}
}

// BenchmarkWrite64MiB writes one 64 MiB file in 1 MiB writes and closes
// it, on a fresh mount.
func BenchmarkWrite64MiB(b *testing.B) {
	setup(b)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	for _, s := range writers() {
		b.Run(s.name, func(b *testing.B) {
			usable(b, s)
			b.SetBytes(64 << 20)
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				dir, unmount := s.mount(b)
				settle()
				at := cpuTime()
				b.StartTimer()
				f, err := os.Create(filepath.Join(dir, "big"))
				if err != nil {
					b.Fatal(err)
				}
				for range 64 {
					if _, err := f.Write(chunk); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += cpuTime() - at
				unmount()
				b.StartTimer()
			}
			reportCPU(b, cpu)
		})
	}
}

// reportCPU reports the CPU time of the timed sections, per iteration
// (cpuTime; tmpfs's is the program's alone).
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}
