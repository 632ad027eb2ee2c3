package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"golang.org/x/sys/unix"
)

// srcTree makes a small source directory and returns its path.
func srcTree(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "d", "e"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "a.txt"), []byte("alpha\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "b.txt"), []byte("bravo\n"), 0o644))
	must(t, os.Symlink("d/a.txt", filepath.Join(src, "ln")))
	return src
}

// packed returns the sorted entry paths of the pack at p, checking it.
func packed(t *testing.T, p string) []string {
	t.Helper()
	r, err := packreader.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
	var names []string
	must(t, fs.WalkDir(r, ".", func(p string, _ fs.DirEntry, err error) error {
		names = append(names, p)
		return err
	}))
	return names
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (mknod of devices)")
	}
}

// TestIssue15PackOutputDevice: pack over a character device (a /dev/null
// of the test's own, in a temporary directory) refuses and leaves it a
// device.
func TestIssue15PackOutputDevice(t *testing.T) {
	needRoot(t)
	src := srcTree(t)
	null := filepath.Join(t.TempDir(), "null")
	must(t, unix.Mknod(null, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	_, stderr, code := cliIn(t, src, "pack", src, null)
	if code != 1 || !strings.Contains(stderr, "character device") {
		t.Errorf("pack over a device: exit %d, stderr %q", code, stderr)
	}
	fi, err := os.Lstat(null)
	if err != nil || fi.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
		t.Fatalf("the device is now %v, %v", fi.Mode(), err)
	}
}

// TestIssue15PackOutputKinds: a directory and a dangling symlink are
// refused, a symlink to a file is written through, "-" and a FIFO stream.
func TestIssue15PackOutputKinds(t *testing.T) {
	src := srcTree(t)
	tmp := t.TempDir()
	want := packed(t, func() string {
		p := filepath.Join(tmp, "ref.pack")
		runOK(t, "pack", src, p)
		return p
	}())

	if _, stderr, code := cliIn(t, tmp, "pack", src, tmp); code != 1 || !strings.Contains(stderr, "is a directory") {
		t.Errorf("pack over a directory: exit %d, stderr %q", code, stderr)
	}
	dangling := filepath.Join(tmp, "dangling")
	must(t, os.Symlink("nowhere", dangling))
	if _, stderr, code := cliIn(t, tmp, "pack", src, dangling); code != 1 || !strings.Contains(stderr, "symlink to nothing") {
		t.Errorf("pack over a dangling symlink: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Lstat(filepath.Join(tmp, "nowhere")); err == nil {
		t.Error("a dangling symlink's target was created")
	}

	target := filepath.Join(tmp, "real.pack")
	must(t, os.WriteFile(target, []byte("old"), 0o644))
	link := filepath.Join(tmp, "link.pack")
	must(t, os.Symlink("real.pack", link))
	runOK(t, "pack", src, link)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi, err)
	}
	if got := packed(t, target); !equalStrings(got, want) {
		t.Errorf("through the symlink: %q, want %q", got, want)
	}

	stdout, stderr, code := cliIn(t, tmp, "pack", src, "-")
	if code != 0 {
		t.Fatalf("pack to -: exit %d, %s", code, stderr)
	}
	if _, err := os.Lstat(filepath.Join(tmp, "-")); err == nil {
		t.Error("pack - made a file named -")
	}
	streamed := filepath.Join(tmp, "streamed.pack")
	must(t, os.WriteFile(streamed, []byte(stdout), 0o644))
	if got := packed(t, streamed); !equalStrings(got, want) {
		t.Errorf("streamed: %q, want %q", got, want)
	}

	fifo := filepath.Join(tmp, "fifo")
	must(t, unix.Mkfifo(fifo, 0o644))
	got := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- b
	}()
	if _, stderr, code := cliIn(t, tmp, "pack", src, fifo); code != 0 {
		t.Fatalf("pack to a FIFO: exit %d, %s", code, stderr)
	}
	fromFifo := filepath.Join(tmp, "fifo.pack")
	must(t, os.WriteFile(fromFifo, <-got, 0o644))
	if got := packed(t, fromFifo); !equalStrings(got, want) {
		t.Errorf("through a FIFO: %q, want %q", got, want)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO is now %v %v", fi, err)
	}
}

// TestIssue15CharDeviceIsNotWhiteout: only a 0/0 character device is a
// whiteout; any other is a device, left out with a warning.
func TestIssue15CharDeviceIsNotWhiteout(t *testing.T) {
	needRoot(t)
	src := srcTree(t)
	must(t, unix.Mknod(filepath.Join(src, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	must(t, unix.Mknod(filepath.Join(src, "wh"), unix.S_IFCHR, 0))
	out := filepath.Join(t.TempDir(), "p.pack")
	_, stderr, code := cliIn(t, src, "pack", src, out)
	if code != 1 || !strings.Contains(stderr, "null") || !strings.Contains(stderr, "a character device") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	r, err := packreader.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Lstat("null"); err == nil {
		t.Error("a 1/3 character device was packed (as a whiteout)")
	}
	if fi, err := r.Lstat("wh"); err != nil || !layer.IsWhiteout(fi.Mode()) {
		t.Errorf("the 0/0 device: %v, %v; want a whiteout", fi, err)
	}
}

// TestIssue15PackIntoSource: the output inside the source directory is
// not packed, neither its temporary file nor, the next time, itself.
func TestIssue15PackIntoSource(t *testing.T) {
	src := srcTree(t)
	out := filepath.Join(src, "self.pack")
	runOK(t, "pack", src, out)
	first, err := os.Stat(out)
	must(t, err)
	names := packed(t, out)
	runOK(t, "pack", src, out)
	second, err := os.Stat(out)
	must(t, err)
	// Only the root's mtime changed (the rename into it).
	if first.Size() != second.Size() || !equalStrings(names, packed(t, out)) {
		t.Errorf("the second pack differs (%d bytes, then %d): it packed the first", first.Size(), second.Size())
	}
	for _, p := range names {
		if strings.Contains(p, "self.pack") {
			t.Errorf("the pack holds %s", p)
		}
	}
}

// TestIssue15PackSkipsWhatItCannotHold: sockets, FIFOs, block devices,
// names io/fs cannot hold and paths past PATH_MAX are reported by kind
// and left out; the rest is packed and the exit status is 1. With
// -strict the first stops the pack and nothing is written.
func TestIssue15PackSkipsWhatItCannotHold(t *testing.T) {
	src := srcTree(t)
	must(t, unix.Mknod(filepath.Join(src, "sock"), unix.S_IFSOCK|0o644, 0))
	must(t, unix.Mkfifo(filepath.Join(src, "fifo"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "bad\xffname"), []byte("x"), 0o644))
	kinds := []string{"sock: a socket", "fifo: a FIFO", "not valid UTF-8"}
	if os.Geteuid() == 0 {
		must(t, unix.Mknod(filepath.Join(src, "blk"), unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0))))
		kinds = append(kinds, "blk: a block device")
	}
	deepDir(t, filepath.Join(src, "deep"), 17) // 17 × 256 bytes > PATH_MAX
	kinds = append(kinds, "file name too long")

	out := filepath.Join(t.TempDir(), "p.pack")
	_, stderr, code := cliIn(t, src, "pack", src, out)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, k := range kinds {
		if !strings.Contains(stderr, k) {
			t.Errorf("stderr does not say %q:\n%s", k, stderr)
		}
	}
	if strings.Count(stderr, "packwriter") > 0 || strings.Contains(stderr, ".tmp") {
		t.Errorf("stderr names internals:\n%s", stderr)
	}
	got := packed(t, out)
	for _, want := range []string{"b.txt", "d/a.txt", "ln", "deep"} {
		if !contains(got, want) {
			t.Errorf("the pack lacks %s: %q", want, got)
		}
	}

	strict := filepath.Join(t.TempDir(), "strict.pack")
	if _, stderr, code := cliIn(t, src, "pack", "-strict", src, strict); code != 1 || stderr == "" {
		t.Errorf("-strict: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Lstat(strict); err == nil {
		t.Error("-strict wrote a pack")
	}
	if ents, _ := os.ReadDir(filepath.Dir(strict)); len(ents) != 0 {
		t.Errorf("-strict left %v", ents)
	}
}

// deepDir makes a chain of n directories of 255-byte names below dir,
// relative to each other, so that the path is longer than PATH_MAX.
func deepDir(t *testing.T, dir string, n int) {
	t.Helper()
	must(t, os.Mkdir(dir, 0o755))
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	must(t, err)
	name := strings.Repeat("n", 255)
	for range n {
		must(t, unix.Mkdirat(fd, name, 0o755))
		next, err := unix.Openat(fd, name, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		must(t, err)
		unix.Close(fd)
		fd = next
	}
	unix.Close(fd)
}

// TestIssue15UnpackDamaged: a damaged content is reported, nothing of it
// is left, the rest is extracted, and every directory gets its mode and
// time back.
func TestIssue15UnpackDamaged(t *testing.T) {
	src := srcTree(t)
	marker := strings.Repeat("damaged-content-", 64)
	must(t, os.WriteFile(filepath.Join(src, "d", "bad.txt"), []byte(marker), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "z.txt"), []byte("zulu\n"), 0o644))
	must(t, os.Chmod(filepath.Join(src, "d", "e"), 0o751))
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", src, pack)
	data, err := os.ReadFile(pack)
	must(t, err)
	i := bytes.Index(data, []byte(marker))
	if i < 0 {
		t.Fatal("content not found in the pack")
	}
	data[i+100] ^= 0xff
	must(t, os.WriteFile(pack, data, 0o644))

	dst := filepath.Join(tmp, "dst")
	_, stderr, code := cliIn(t, tmp, "unpack", pack, dst)
	if code != 1 || !strings.Contains(stderr, "bad.txt") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Lstat(filepath.Join(dst, "d", "bad.txt")); err == nil {
		t.Error("the damaged file was left in place")
	}
	for _, f := range []string{"b.txt", "d/a.txt", "z.txt", "ln"} {
		if _, err := os.Lstat(filepath.Join(dst, f)); err != nil {
			t.Errorf("%s not extracted: %v", f, err)
		}
	}
	for dir, mode := range map[string]fs.FileMode{"d": 0o755, "d/e": 0o751} {
		fi, err := os.Stat(filepath.Join(dst, dir))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", dir, fi.Mode(), err, mode)
		}
		sfi, _ := os.Stat(filepath.Join(src, dir))
		if err == nil && !fi.ModTime().Equal(sfi.ModTime()) {
			t.Errorf("%s: mtime %v, want %v", dir, fi.ModTime(), sfi.ModTime())
		}
	}
}

// TestIssue15UnpackDropsSetuid: where ownership is not restored (not
// root, or a format-2 pack), setuid and setgid bits do not come back on
// files; as root, from a format-3 pack, they come back with the owner.
func TestIssue15UnpackDropsSetuid(t *testing.T) {
	for _, format := range []string{"2", "3"} {
		t.Run(format, func(t *testing.T) { testUnpackSetuid(t, format) })
	}
}

func testUnpackSetuid(t *testing.T, format string) {
	src := srcTree(t)
	p := filepath.Join(src, "suid")
	must(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	must(t, os.Chmod(p, 0o755|fs.ModeSetuid|fs.ModeSetgid))
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "p.pack")
	if format == "2" {
		// Format 2 records no owners: write it through the library.
		must(t, packwriter.WriteFile(pack, os.DirFS(src), packwriter.WithFormat(2)))
	} else {
		runOK(t, "pack", src, pack)
	}
	dst := filepath.Join(tmp, "dst")
	runOK(t, "unpack", pack, dst)
	fi, err := os.Stat(filepath.Join(dst, "suid"))
	must(t, err)
	if os.Geteuid() == 0 && format == "3" {
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != fs.ModeSetuid|fs.ModeSetgid {
			t.Errorf("unpacked as root with owners: mode %v, want -rwsr-sr-x", fi.Mode())
		}
		return
	}
	if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("unpacked mode %v, want -rwxr-xr-x", fi.Mode())
	}
}

// TestIssue15PathsAndFlags: paths are normalised, flags work after
// positional arguments, "--" ends them, --help prints once, on stdout,
// and ls -l spells modes as ls does.
func TestIssue15PathsAndFlags(t *testing.T) {
	src := srcTree(t)
	must(t, os.WriteFile(filepath.Join(src, "-l"), []byte("dash\n"), 0o644))
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", src, pack)
	for _, p := range []string{"d", "d/", "./d", "/d", "d//", "d/e/.."} {
		if got := runOK(t, "ls", pack, p); got != "a.txt\ne\n" {
			t.Errorf("ls %q = %q", p, got)
		}
	}
	for _, p := range []string{"d/a.txt", "d//a.txt", "/d/a.txt", "./d/./a.txt"} {
		if got := runOK(t, "cat", pack, p); got != "alpha\n" {
			t.Errorf("cat %q = %q", p, got)
		}
	}
	// ".." stops at the pack's root, as at a file system's.
	if got := runOK(t, "cat", pack, "../b.txt"); got != "bravo\n" {
		t.Errorf("cat ../b.txt = %q", got)
	}
	if got := runOK(t, "ls", pack, "-l"); !strings.Contains(got, "lrwxrwxrwx") || !strings.Contains(got, "drwxr-xr-x") {
		t.Errorf("ls PACK -l = %q", got)
	}
	if got := runOK(t, "cat", pack, "--", "-l"); got != "dash\n" {
		t.Errorf("cat PACK -- -l = %q", got)
	}
	stdout, stderr, code := cliIn(t, tmp, "ls", "--help")
	if code != 0 || stderr != "" || strings.Count(stdout, "usage: packfs ls") != 1 {
		t.Errorf("ls --help: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	_, stderr, code = cliIn(t, tmp, "ls", "-bogus", pack)
	if code != 2 || strings.Count(stderr, "usage: packfs ls") != 1 || !strings.Contains(stderr, "bogus") {
		t.Errorf("ls -bogus: exit %d, stderr %q", code, stderr)
	}
}

// TestIssue15NoTemporaryNames: a pack that cannot be written names the
// output, not its temporary file.
func TestIssue15NoTemporaryNames(t *testing.T) {
	src := srcTree(t)
	out := filepath.Join(t.TempDir(), "missing-dir", "p.pack")
	_, stderr, code := cliIn(t, src, "pack", src, out)
	if code != 1 || !strings.Contains(stderr, out) || strings.Contains(stderr, ".tmp") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestIssue15Selection: unpack of subtrees, merging into an existing
// directory, -force, and -exclude on both sides.
func TestIssue15Selection(t *testing.T) {
	src := srcTree(t)
	must(t, os.WriteFile(filepath.Join(src, "d", "e", "deep.txt"), []byte("deep\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "d", "skip.o"), []byte("obj\n"), 0o644))
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", "-exclude", "*.o", src, pack)
	if got := packed(t, pack); contains(got, "d/skip.o") {
		t.Errorf("-exclude *.o packed %q", got)
	}

	dst := filepath.Join(tmp, "dst")
	runOK(t, "unpack", pack, dst, "d/e", "/b.txt")
	for _, f := range []string{"d/e/deep.txt", "b.txt"} {
		if _, err := os.Lstat(filepath.Join(dst, f)); err != nil {
			t.Errorf("%s not extracted: %v", f, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "d", "a.txt")); err == nil {
		t.Error("d/a.txt extracted, though only d/e was asked for")
	}
	// Merging into dst: directories merge, files in the way are errors.
	must(t, os.WriteFile(filepath.Join(dst, "b.txt"), []byte("local\n"), 0o644))
	_, stderr, code := cliIn(t, tmp, "unpack", pack, dst)
	if code != 1 || !strings.Contains(stderr, "b.txt") {
		t.Errorf("unpack over b.txt: exit %d, %q", code, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "b.txt")); string(got) != "local\n" {
		t.Errorf("b.txt replaced without -force: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "d", "a.txt")); string(got) != "alpha\n" {
		t.Errorf("the merge did not extract d/a.txt: %q", got)
	}
	runOK(t, "unpack", "-force", "-exclude", "e", pack, dst)
	if got, _ := os.ReadFile(filepath.Join(dst, "b.txt")); string(got) != "bravo\n" {
		t.Errorf("-force: b.txt is %q", got)
	}
}

// TestIssue15Listing: ls -R, -json, -0 and info -json.
func TestIssue15Listing(t *testing.T) {
	src := srcTree(t)
	must(t, os.WriteFile(filepath.Join(src, "new\nline"), []byte("n"), 0o644))
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", src, pack)
	if got := runOK(t, "ls", "-R", pack, "d"); got != "d/a.txt\nd/e\n" {
		t.Errorf("ls -R d = %q", got)
	}
	if got := runOK(t, "ls", "-0", pack); got != "b.txt\x00d\x00ln\x00new\nline\x00" {
		t.Errorf("ls -0 = %q", got)
	}
	var ents []map[string]any
	if err := json.Unmarshal([]byte(runOK(t, "ls", "-json", "-R", pack)), &ents); err != nil {
		t.Fatal(err)
	}
	byPath := map[string]map[string]any{}
	for _, e := range ents {
		byPath[e["path"].(string)] = e
	}
	if e := byPath["ln"]; e["type"] != "symlink" || e["target"] != "d/a.txt" {
		t.Errorf("ls -json: ln is %v", e)
	}
	if e := byPath["d/a.txt"]; e["type"] != "file" || e["size"] != 6.0 || e["perm"] != 420.0 {
		t.Errorf("ls -json: d/a.txt is %v", e)
	}
	var info map[string]any
	if err := json.Unmarshal([]byte(runOK(t, "info", "-json", pack)), &info); err != nil {
		t.Fatal(err)
	}
	if info["entries"] != 7.0 || info["symlinks"] != 1.0 {
		t.Errorf("info -json = %v", info)
	}
}

// cliIn runs the command line args in a child process in dir, and returns
// its standard output, standard error and exit status.
func cliIn(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := childCommand(t, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}
