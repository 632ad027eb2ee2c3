package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/packwriter"
	"golang.org/x/sys/unix"
)

// outsideEmpty fails the test if the directory dir holds anything.
func outsideEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	must(t, err)
	if len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("unpack wrote outside its directory: %s holds %q", dir, names)
	}
}

// TestIssue15ProbeUnpackSymlinkEscape: a symlink already in DIR, standing
// where a directory of the pack goes, is never followed out of DIR:
// neither above a subtree asked for (unpack PACK DIR d/e with DIR/d a
// symlink), nor in a whole unpack, nor after an earlier pack put it
// there; -force replaces it with the directory.
func TestIssue15ProbeUnpackSymlinkEscape(t *testing.T) {
	src := srcTree(t)
	must(t, os.WriteFile(filepath.Join(src, "d", "e", "deep.txt"), []byte("deep\n"), 0o644))
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", src, pack)
	outside := filepath.Join(tmp, "outside")
	must(t, os.Mkdir(outside, 0o755))

	for _, args := range [][]string{{"d/e"}, {"d/e/deep.txt"}, {}} {
		dst := filepath.Join(t.TempDir(), "dst")
		must(t, os.Mkdir(dst, 0o755))
		must(t, os.Symlink(outside, filepath.Join(dst, "d")))
		_, stderr, code := cliIn(t, tmp, append([]string{"unpack", pack, dst}, args...)...)
		if code != 1 || !strings.Contains(stderr, filepath.Join(dst, "d")) {
			t.Errorf("unpack %q over a symlink: exit %d, stderr %q", args, code, stderr)
		}
		outsideEmpty(t, outside)
	}

	// A pack that holds the symlink, then one that holds the directory.
	evil := filepath.Join(tmp, "evil")
	must(t, os.Mkdir(evil, 0o755))
	must(t, os.Symlink(outside, filepath.Join(evil, "d")))
	evilPack := filepath.Join(tmp, "evil.pack")
	runOK(t, "pack", evil, evilPack)
	dst := filepath.Join(t.TempDir(), "dst")
	runOK(t, "unpack", evilPack, dst)
	for _, args := range [][]string{{pack, dst, "d/e"}, {pack, dst}} {
		if _, stderr, code := cliIn(t, tmp, append([]string{"unpack"}, args...)...); code != 1 {
			t.Errorf("unpack %q: exit %d, stderr %q", args, code, stderr)
		}
		outsideEmpty(t, outside)
	}
	runOK(t, "unpack", "-force", pack, dst, "d/e")
	outsideEmpty(t, outside)
	if got, err := os.ReadFile(filepath.Join(dst, "d", "e", "deep.txt")); err != nil || string(got) != "deep\n" {
		t.Errorf("-force: d/e/deep.txt is %q, %v", got, err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "d")); err != nil || !fi.IsDir() {
		t.Errorf("-force: d is %v, %v; want the directory", fi, err)
	}
}

// TestIssue15ProbePackFileTurnsFIFO: a file that becomes a FIFO after it
// was listed and before it is read is reported and left out; opening it
// blocked the pack forever, waiting for a writer. The swap happens in
// the filter, which packwriter calls between Lstat and Open; a source
// that blocks makes this test hang.
func TestIssue15ProbePackFileTurnsFIFO(t *testing.T) {
	for _, size := range []int{10, 2 << 20} { // read whole, and streamed
		src := srcTree(t)
		victim := filepath.Join(src, "victim")
		must(t, os.WriteFile(victim, make([]byte, size), 0o644))
		var skipped []string
		err := packwriter.Write(io.Discard, packSource(src),
			packwriter.WithFilter(func(p string, _ fs.FileInfo) bool {
				if p == "victim" {
					must(t, os.Remove(victim))
					must(t, unix.Mkfifo(victim, 0o644))
				}
				return true
			}),
			packwriter.WithSkip(func(p string, err error) error {
				skipped = append(skipped, p)
				if !errors.Is(err, errNotRegular) {
					t.Errorf("%s: %v, want errNotRegular", p, err)
				}
				return nil
			}))
		must(t, err)
		if !equalStrings(skipped, []string{"victim"}) {
			t.Errorf("size %d: skipped %q, want victim", size, skipped)
		}
	}
}

// TestIssue15ProbePackOutputNamed: an output that cannot be created is
// named as given, relative to the working directory; it was taken for a
// source entry and named under DIR ("create src/nodir/x.pack").
func TestIssue15ProbePackOutputNamed(t *testing.T) {
	src := srcTree(t)
	work := filepath.Dir(src)
	_, stderr, code := cliIn(t, work, "pack", "src", filepath.Join("nodir", "x.pack"))
	if code != 1 || !strings.Contains(stderr, "create nodir/x.pack: no such file or directory") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestIssue15ProbeMessages: a file that changed as it was read is said so
// without packwriter's prefix, and one entry is "1 entry".
func TestIssue15ProbeMessages(t *testing.T) {
	err := hostPathError(&fs.PathError{Op: "read", Path: "d/big", Err: packwriter.ErrChanged}, "src")
	if msg := err.Error(); strings.Contains(msg, "packwriter") || msg != "read src/d/big: file changed as it was read" {
		t.Errorf("message %q", msg)
	}
	if !errors.Is(err, packwriter.ErrChanged) {
		t.Errorf("%v does not wrap ErrChanged", err)
	}
	src := srcTree(t)
	must(t, unix.Mkfifo(filepath.Join(src, "fifo"), 0o644))
	_, stderr, code := cliIn(t, src, "pack", src, filepath.Join(t.TempDir(), "p.pack"))
	if code != 1 || !strings.Contains(stderr, "1 entry could not be packed") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestIssue15ProbePackIsFIFO: every command that reads a pack refuses a
// FIFO named as the pack; unpack, ls, cat, verify and info blocked on it
// forever (this test then hangs), waiting for a writer.
func TestIssue15ProbePackIsFIFO(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "p.pack")
	must(t, unix.Mkfifo(fifo, 0o644))
	for _, args := range [][]string{
		{"unpack", fifo, filepath.Join(tmp, "dst")},
		{"ls", fifo}, {"cat", fifo, "b.txt"}, {"verify", fifo}, {"info", fifo},
	} {
		_, stderr, code := cliIn(t, tmp, args...)
		if code != 1 || !strings.Contains(stderr, "is a FIFO") {
			t.Errorf("packfs %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
		}
	}
	if _, stderr, code := cliIn(t, tmp, "verify", tmp); code != 1 || !strings.Contains(stderr, "is a directory") {
		t.Errorf("verify DIR: exit %d, stderr %q", code, stderr)
	}
}

// TestIssue15ProbeStoreBusy: a store command on a store another writer
// holds says so plainly; it read "packfs store: packfs: store DIR is open
// for writing elsewhere: lock LOCK: vfs: locked by another holder".
func TestIssue15ProbeStoreBusy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := packfs.Open(dir, nil)
	must(t, err)
	defer s.Close()
	must(t, s.WriteFile("keep", []byte("kept\n"), 0o644))
	must(t, s.Sync())
	for _, args := range [][]string{
		{"store", "checkpoint", dir}, {"store", "flatten", dir},
		{"store", "import", dir, srcTree(t), "sub"},
	} {
		_, stderr, code := cliIn(t, dir, args...)
		if code != 1 || !strings.Contains(stderr, "open for writing elsewhere") ||
			strings.Contains(stderr, "vfs:") || strings.Contains(stderr, "packfs:") {
			t.Errorf("packfs %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
		}
	}
	if b, err := fs.ReadFile(s, "keep"); err != nil || string(b) != "kept\n" {
		t.Errorf("keep: %q, %v", b, err)
	}
}

// TestIssue15ProbeTrailingSlashOnFile: a path with a trailing slash names
// a directory, as in the kernel: on a file, ls, cat and unpack say
// ENOTDIR; they took "b.txt/" for b.txt.
func TestIssue15ProbeTrailingSlashOnFile(t *testing.T) {
	src := srcTree(t)
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", src, pack)
	dst := filepath.Join(tmp, "dst")
	for _, args := range [][]string{
		{"cat", pack, "b.txt/"}, {"ls", pack, "d/a.txt/"}, {"ls", pack, "b.txt/."}, {"unpack", pack, dst, "b.txt/"},
	} {
		stdout, stderr, code := cliIn(t, tmp, args...)
		if code != 1 || !strings.Contains(stderr, "not a directory") || stdout != "" {
			t.Errorf("packfs %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "b.txt")); err == nil {
		t.Error("unpack b.txt/ extracted b.txt")
	}
	// A directory with the slash is listed as before.
	if got := runOK(t, "ls", pack, "d/"); got != "a.txt\ne\n" {
		t.Errorf("ls d/ = %q", got)
	}
}

// TestIssue15ProbeControlBytesInMessages: names holding control bytes
// reach standard error escaped, so a file name cannot drive the terminal
// (an ESC sequence setting its title, say); they were printed raw.
func TestIssue15ProbeControlBytesInMessages(t *testing.T) {
	src := srcTree(t)
	evil := "evil\x1b]0;owned\x07\r"
	must(t, unix.Mkfifo(filepath.Join(src, evil), 0o644))
	tmp := t.TempDir()
	pack := filepath.Join(tmp, "p.pack")
	_, stderr, code := cliIn(t, tmp, "pack", src, pack)
	if code != 1 || strings.ContainsAny(stderr, "\x1b\x07\r") || !strings.Contains(stderr, `evil\x1b]0;owned\a\r`) {
		t.Errorf("pack: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = cliIn(t, tmp, "cat", pack, "no\x1b[2Jthing")
	if code != 1 || strings.Contains(stderr, "\x1b") || !strings.Contains(stderr, `no\x1b[2Jthing`) {
		t.Errorf("cat: exit %d, stderr %q", code, stderr)
	}
	if got := printable("a\nb\tc\xffd\u0085e✓"); got != "a\nb\tc\\xffd\\u0085e✓" {
		t.Errorf("printable = %q", got)
	}
}

// TestIssue15ProbePackSymlinkSwap: a file, or a directory above it,
// replaced by a symlink after it was listed is not followed out of the
// tree: pack (run as root on a hostile user's tree) read the file the
// symlink named and packed it under the listed name.
func TestIssue15ProbePackSymlinkSwap(t *testing.T) {
	secretDir := filepath.Join(t.TempDir(), "secret")
	must(t, os.MkdirAll(filepath.Join(secretDir, "d"), 0o700))
	secret := "top secret\n"
	must(t, os.WriteFile(filepath.Join(secretDir, "a.txt"), []byte(secret), 0o600))
	must(t, os.WriteFile(filepath.Join(secretDir, "d", "a.txt"), []byte(secret), 0o600))
	for _, tc := range []struct{ entry, swap, to string }{
		{"d/a.txt", "d/a.txt", filepath.Join(secretDir, "a.txt")}, // the file itself
		{"d/a.txt", "d", secretDir},                               // the directory above it
		{"d/a.txt", "d", filepath.Join(secretDir, "d", "..")},
	} {
		src := srcTree(t)
		var out bytes.Buffer
		var skipped []string
		err := packwriter.Write(&out, packSource(src),
			packwriter.WithFilter(func(p string, _ fs.FileInfo) bool {
				if p == tc.entry {
					swapped := filepath.Join(src, filepath.FromSlash(tc.swap))
					must(t, os.Rename(swapped, swapped+".old"))
					must(t, os.Symlink(tc.to, swapped))
				}
				return true
			}),
			packwriter.WithSkip(func(p string, err error) error {
				// Entries listed after the swap may be gone too.
				if p == tc.entry {
					skipped = append(skipped, p)
					if !errors.Is(err, errSymlinked) {
						t.Errorf("%s: %v, want errSymlinked", p, err)
					}
				}
				return nil
			}))
		must(t, err)
		if bytes.Contains(out.Bytes(), []byte(secret)) {
			t.Errorf("swap %s for a symlink to %s: the pack holds the secret", tc.swap, tc.to)
		}
		if len(skipped) != 1 {
			t.Errorf("swap %s: %s was not skipped", tc.swap, tc.entry)
		}
	}
}

// openPty returns the two ends of a new pseudo-terminal.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	must(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	must(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestIssue15ProbeExportToTerminal: store export DIR - refuses a terminal
// as standard output, as pack DIR - does; it wrote the pack's bytes to it.
func TestIssue15ProbeExportToTerminal(t *testing.T) {
	tmp := t.TempDir()
	store := filepath.Join(tmp, "store")
	runOK(t, "store", "import", store, srcTree(t))
	_, tty := openPty(t)
	for _, args := range [][]string{{"store", "export", store, "-"}, {"pack", srcTree(t), "-"}} {
		cmd := childCommand(t, args...)
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = tty, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(errb.String(), "to a terminal") {
			t.Errorf("packfs %s to a terminal: %v, stderr %q", strings.Join(args, " "), err, errb.String())
		}
	}
}
