package conformance

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
)

var (
	_ = register("Symlink", testSymlink)
	_ = register("SymlinkLoop", testSymlinkLoop)
	_ = register("SymlinkChain", testSymlinkChain)
	_ = register("SymlinkThrough", testSymlinkThrough)
)

func testSymlink(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "dir")
	writeFile(t, fsys, "file", "content")
	targets := map[string]string{
		"l1":       "file",
		"dir/up":   "../file",
		"l-dot":    "./dir/../file",
		"l-slash":  "dir/",
		"dangling": "no/such/../thing",
		"l-empty":  "x",
	}
	for name, target := range targets {
		symlink(t, fsys, target, name)
	}
	for name, target := range targets {
		got, err := fsys.Readlink(name)
		if ok(t, "Readlink", err) && got != target {
			t.Errorf("Readlink(%q) = %q, want %q verbatim", name, got, target)
		}
		got, err = fsys.ReadLink(name)
		if ok(t, "ReadLink", err) && got != target {
			t.Errorf("ReadLink(%q) = %q, want %q verbatim", name, got, target)
		}
		fi, err := fsys.Lstat(name)
		if ok(t, "Lstat", err) {
			base := name[strings.LastIndex(name, "/")+1:]
			if fi.Mode() != fs.ModeSymlink|0o777 || fi.Size() != int64(len(target)) || fi.Name() != base {
				t.Errorf("Lstat(%q) = %s %v size %d, want %s %v size %d (as Linux)", name, fi.Name(), fi.Mode(), fi.Size(), base, fs.ModeSymlink|0o777, len(target))
			}
		}
	}
	wantContent(t, fsys, "l1", "content")
	wantContent(t, fsys, "dir/up", "content")
	fi, err := fsys.Stat("l1")
	if ok(t, "Stat(l1)", err) && (fi.Mode() != 0o644 || fi.Name() != "l1" || fi.Size() != 7) {
		t.Errorf("Stat(l1) = %s %v size %d, want l1 -rw-r--r-- size 7 (the target's, under the link's name)", fi.Name(), fi.Mode(), fi.Size())
	}
	fi, err = fsys.Stat("l-slash")
	if ok(t, "Stat(l-slash)", err) && !fi.IsDir() {
		t.Errorf("Stat(l-slash) = %v, want a directory", fi.Mode())
	}
	_, err = fsys.Stat("dangling")
	wantPathErr(t, "Stat(dangling)", err, classNotExist, "stat", "dangling")
	_, err = fsys.Open("dangling")
	wantPathErr(t, "Open(dangling)", err, classNotExist, "open", "dangling")
	wantLinkErr(t, "Symlink onto an existing file", fsys.Symlink("x", "file"), classExist, "symlink", "x", "file")
	wantLinkErr(t, "Symlink onto an existing symlink", fsys.Symlink("x", "l1"), classExist, "symlink", "x", "l1")
	wantLinkErr(t, "Symlink onto a directory", fsys.Symlink("x", "dir"), classExist, "symlink", "x", "dir")
	wantLinkErr(t, "Symlink in a missing directory", fsys.Symlink("x", "nodir/l"), classNotExist, "symlink", "x", "nodir/l")
	wantLinkErr(t, "Symlink below a file", fsys.Symlink("x", "file/l"), classNotDir, "symlink", "x", "file/l")
	wantContent(t, fsys, "file", "content")
}

func testSymlinkLoop(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	symlink(t, fsys, "self", "self")
	symlink(t, fsys, "b", "a")
	symlink(t, fsys, "a", "b")
	mkdir(t, fsys, "d")
	symlink(t, fsys, "../d/loop", "d/loop")
	for _, name := range []string{"self", "a", "d/loop"} {
		_, err := fsys.Open(name)
		wantPathErr(t, fmt.Sprintf("Open(%q)", name), err, classLoop, "open", name)
		_, err = fsys.Stat(name)
		wantPathErr(t, fmt.Sprintf("Stat(%q)", name), err, classLoop, "stat", name)
		_, err = fsys.ReadFile(name)
		wantPathErr(t, fmt.Sprintf("ReadFile(%q)", name), err, classLoop, "open", name)
		_, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		wantPathErr(t, fmt.Sprintf("OpenFile(%q, O_CREATE)", name), err, classLoop, "open", name)
		_, err = fsys.Lstat(name)
		ok(t, fmt.Sprintf("Lstat(%q)", name), err)
		p := name + "/x"
		_, err = fsys.Lstat(p)
		wantPathErr(t, fmt.Sprintf("Lstat(%q)", p), err, classLoop, "lstat", p)
		wantPathErr(t, fmt.Sprintf("Mkdir(%q)", p), fsys.Mkdir(p, 0o755), classLoop, "mkdir", p)
		wantPathErr(t, fmt.Sprintf("Chmod(%q)", name), fsys.Chmod(name, 0o644), classLoop, "chmod", name)
	}
	must(t, "Remove(self)", fsys.Remove("self"))
	wantMissing(t, fsys, "self")
}

// testSymlinkChain checks Linux's limit: a path may follow 40 symlinks;
// the 41st gives ELOOP.
func testSymlinkChain(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "file", "end")
	for _, n := range []int{40, 41} {
		dir := fmt.Sprintf("c%d", n)
		mkdir(t, fsys, dir)
		prev := "../file"
		for i := n - 1; i >= 0; i-- {
			name := fmt.Sprintf("%s/l%d", dir, i)
			symlink(t, fsys, prev, name)
			prev = fmt.Sprintf("l%d", i)
		}
	}
	wantContent(t, fsys, "c40/l0", "end")
	_, err := fsys.Stat("c41/l0")
	wantPathErr(t, "Stat of a chain of 41 symlinks", err, classLoop, "stat", "c41/l0")
	_, err = fsys.Open("c41/l0")
	wantPathErr(t, "Open of a chain of 41 symlinks", err, classLoop, "open", "c41/l0")
	wantContent(t, fsys, "c41/l1", "end")
}

// testSymlinkThrough checks operations on paths through a symlinked
// directory.
func testSymlinkThrough(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	must(t, "MkdirAll", fsys.MkdirAll("real/sub", 0o755))
	writeFile(t, fsys, "real/f", "f")
	symlink(t, fsys, "real", "ld")
	symlink(t, fsys, "../real/sub", "real/down")
	wantContent(t, fsys, "ld/f", "f")
	writeFile(t, fsys, "ld/new", "new")
	wantContent(t, fsys, "real/new", "new")
	must(t, "Mkdir(ld/dir)", fsys.Mkdir("ld/dir", 0o700))
	wantMode(t, fsys, "real/dir", fs.ModeDir|0o700)
	must(t, "Rename(ld/new, ld/sub/moved)", fsys.Rename("ld/new", "ld/sub/moved"))
	wantContent(t, fsys, "real/sub/moved", "new")
	wantContent(t, fsys, "ld/down/moved", "new")
	must(t, "Remove(ld/down/moved)", fsys.Remove("ld/down/moved"))
	wantMissing(t, fsys, "real/sub/moved")
	list, err := fsys.ReadDir("ld")
	if ok(t, "ReadDir(ld)", err) {
		var names []string
		for _, e := range list {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, " "); got != "dir down f sub" {
			t.Errorf("ReadDir(ld) = %s, want dir down f sub", got)
		}
	}
	fi, err := fsys.Lstat("ld/down")
	if ok(t, "Lstat(ld/down)", err) && fi.Mode().Type() != fs.ModeSymlink {
		t.Errorf("Lstat(ld/down) = %v, want a symlink", fi.Mode())
	}
	// A path ending in "..": the parent of the link's target, not of the
	// link.
	symlink(t, fsys, "real/sub", "lsub")
	writeFile(t, fsys, "real/sub/s", "s")
	symlink(t, fsys, "lsub/../f", "via-dotdot")
	wantContent(t, fsys, "via-dotdot", "f")
}
