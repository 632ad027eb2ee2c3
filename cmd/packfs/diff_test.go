package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer/mem"
	"golang.org/x/sys/unix"
)

// diffTree makes a tree with one of each kind under dir, every time diffT0.
func diffTree(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "d", "sub"), 0o755))
	for name, data := range map[string]string{
		"same": "unchanged\n", "grow": "short\n", "flip": "abcdef\n", "chmod": "x",
		"d/sub/deep": "deep\n", "totype": "file\n", "gone": "bye\n", "odd name\n": "odd\n",
	} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}
	must(t, os.Symlink("same", filepath.Join(dir, "ln")))
	must(t, os.Mkdir(filepath.Join(dir, "olddir"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "olddir", "f"), nil, 0o644))
	setTreeTimes(t, dir)
}

var diffT0 = time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)

// setTreeTimes sets every entry's mtime under dir to diffT0, symlinks' too.
func setTreeTimes(t *testing.T, dir string) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return setTimes(p, timeInfo{fi})
	})
	must(t, err)
}

type timeInfo struct{ os.FileInfo }

func (timeInfo) ModTime() time.Time { return diffT0 }

// TestIssue15Diff: diff lists every kind of difference between a pack
// and a directory, one line each, sorted by path, and exits as diff(1)
// does: 0 same, 1 different, 2 trouble.
func TestIssue15Diff(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	diffTree(t, a)
	diffTree(t, b)
	pack := filepath.Join(tmp, "a.pack")
	runOK(t, "pack", a, pack)

	for _, args := range [][]string{{pack, a}, {a, pack}, {pack, pack}, {a, b}} {
		if r := runChildWant(t, 0, append([]string{"diff"}, args...)...); r.stdout != "" || r.stderr != "" {
			t.Errorf("diff %q: stdout %q, stderr %q; want nothing", args, r.stdout, r.stderr)
		}
	}

	must(t, os.WriteFile(filepath.Join(b, "grow"), []byte("longer\n\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(b, "flip"), []byte("abcxef\n"), 0o644))
	must(t, os.Chmod(filepath.Join(b, "chmod"), 0o755))
	must(t, os.Remove(filepath.Join(b, "totype")))
	must(t, os.Mkdir(filepath.Join(b, "totype"), 0o755))
	must(t, os.WriteFile(filepath.Join(b, "totype", "in"), nil, 0o644))
	must(t, os.Remove(filepath.Join(b, "gone")))
	must(t, os.RemoveAll(filepath.Join(b, "olddir")))
	must(t, os.Remove(filepath.Join(b, "ln")))
	must(t, os.Symlink("grow", filepath.Join(b, "ln")))
	must(t, os.Mkdir(filepath.Join(b, "new"), 0o700))
	must(t, os.WriteFile(filepath.Join(b, "new", "n"), nil, 0o644))
	setTreeTimes(t, b)
	t1 := diffT0.Add(time.Second)
	must(t, os.Chtimes(filepath.Join(b, "same"), t1, t1))

	r := runChildWant(t, 1, "diff", pack, b)
	wantLines := []string{
		"mode chmod: -rw-r--r-- -> -rwxr-xr-x",
		"content flip",
		"removed gone",
		"size grow: 6 -> 8",
		"target ln: same -> grow",
		"added new",
		"added new/n",
		"removed olddir",
		"removed olddir/f",
		"mtime same: 2024-01-02 03:04:05.000000006 UTC -> 2024-01-02 03:04:06.000000006 UTC",
		"type totype: file -> directory",
		"added totype/in",
	}
	if got := strings.Join(strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"), "\n"); got != strings.Join(wantLines, "\n") {
		t.Errorf("diff PACK DIR:\n%s\nwant:\n%s", got, strings.Join(wantLines, "\n"))
	}
	if r.stderr != "" {
		t.Errorf("stderr %q", r.stderr)
	}
	// The other way round, added and removed swap; -ignore-times drops mtime.
	r = runChildWant(t, 1, "diff", "-ignore-times", b, pack)
	if !strings.Contains(r.stdout, "removed new\n") || !strings.Contains(r.stdout, "added gone\n") ||
		!strings.Contains(r.stdout, "type totype: directory -> file\n") || strings.Contains(r.stdout, "mtime") {
		t.Errorf("diff -ignore-times DIR PACK:\n%s", r.stdout)
	}
}

// TestIssue15DiffOddNames: a name with a newline or a space is quoted, so
// that each difference stays one line.
func TestIssue15DiffOddNames(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	must(t, os.Mkdir(a, 0o755))
	must(t, os.Mkdir(b, 0o755))
	must(t, os.WriteFile(filepath.Join(b, "two\nlines"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(b, "a space"), nil, 0o644))
	must(t, os.Chtimes(b, diffT0, diffT0))
	must(t, os.Chtimes(a, diffT0, diffT0))
	r := runChildWant(t, 1, "diff", a, b)
	if want := "added \"a space\"\nadded \"two\\nlines\"\n"; r.stdout != want {
		t.Errorf("diff = %q, want %q", r.stdout, want)
	}
}

// TestIssue15DiffTrouble: what stops the comparison exits 2 with a
// message, and prints no difference.
func TestIssue15DiffTrouble(t *testing.T) {
	tmp := t.TempDir()
	a := filepath.Join(tmp, "a")
	must(t, os.Mkdir(a, 0o755))
	must(t, os.WriteFile(filepath.Join(a, "f"), []byte(strings.Repeat("content ", 100)), 0o644))
	pack := filepath.Join(tmp, "a.pack")
	runOK(t, "pack", a, pack)
	data, err := os.ReadFile(pack)
	must(t, err)
	data[64+10] ^= 0xff // inside f's content: only a read finds it
	bad := filepath.Join(tmp, "bad.pack")
	must(t, os.WriteFile(bad, data, 0o644))
	fifo := filepath.Join(tmp, "fifo")
	must(t, unix.Mkfifo(fifo, 0o644))
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"diff", pack, filepath.Join(tmp, "absent")}, "no such file"},
		{[]string{"diff", bad, a}, "bad.pack: read f: packreader: corrupt pack"},
		{[]string{"diff", filepath.Join(tmp, "a", "f"), a}, "packreader"},
		{[]string{"diff", pack}, "wrong number of arguments"},
		{[]string{"diff", fifo, a}, "is a FIFO, not a pack file or a directory"}, // not a hang
	} {
		r := runChildWant(t, 2, tc.args...)
		if r.stdout != "" || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("packfs %q: stdout %q, stderr %q; want none and a message with %q", tc.args, r.stdout, r.stderr, tc.msg)
		}
	}
}

// TestIssue15DiffNotUTF8: a host name that io/fs cannot hold is named,
// quoted, with the reason, and skipped; the rest is compared, and the
// exit status is 2. An import of it is refused whole.
func TestIssue15DiffNotUTF8(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	must(t, os.MkdirAll(filepath.Join(a, "sub"), 0o755))
	must(t, os.MkdirAll(filepath.Join(b, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(b, "bad\xff"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(b, "sub", "z\xfe"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(b, "sub", "zz"), nil, 0o644))
	must(t, os.MkdirAll(filepath.Join(b, "new", "d\xfd"), 0o755))
	must(t, os.WriteFile(filepath.Join(b, "new", "later"), nil, 0o644))
	setTreeTimes(t, a)
	setTreeTimes(t, b)
	r := runChildWant(t, 2, "diff", a, b)
	if want := "added new\nadded new/later\nadded sub/zz\n"; r.stdout != want {
		t.Errorf("diff = %q, want %q", r.stdout, want)
	}
	for _, name := range []string{`"bad\xff"`, `"sub/z\xfe"`, `"new/d\xfd"`} {
		if !strings.Contains(r.stderr, name+": name is not valid UTF-8") {
			t.Errorf("stderr %q does not name %s", r.stderr, name)
		}
	}
	dir := filepath.Join(tmp, "store")
	r = runChildWant(t, 1, "store", "import", dir, b)
	if !strings.Contains(r.stderr, "not valid UTF-8") {
		t.Errorf("import: %q", r.stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused import left a store: %v", err)
	}
}

// TestIssue15DiffRoundTrip: a tree, its pack and the pack unpacked are
// the same to diff, for each conformance tree: no false difference of
// times, modes or symlinks.
func TestIssue15DiffRoundTrip(t *testing.T) {
	for _, tree := range conformance.Trees() {
		if tree.Name == "wide" || tree.Name == "sizes" {
			continue // large: the small trees hold every kind, and TestRoundTrip packs these
		}
		t.Run(tree.Name, func(t *testing.T) {
			m := mem.New()
			must(t, conformance.Populate(m, tree))
			tmp := t.TempDir()
			src, dst, pack := filepath.Join(tmp, "src"), filepath.Join(tmp, "dst"), filepath.Join(tmp, "t.pack")
			must(t, unpack(m.Snapshot(), src, unpackOptions{}))
			runOK(t, "pack", src, pack)
			runOK(t, "unpack", pack, dst)
			for _, args := range [][]string{{src, pack}, {pack, dst}, {src, dst}} {
				// In process, as TestRoundTrip runs pack and unpack: the
				// subprocess tests above cover exit codes and output.
				var out, errb bytes.Buffer
				if code := run(append([]string{"diff"}, args...), &out, &errb); code != 0 || out.Len() != 0 {
					t.Errorf("diff %s %s: exit %d\n%s%s", filepath.Base(args[0]), filepath.Base(args[1]), code, out.String(), errb.String())
				}
			}
		})
	}
}
