package conformance

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The tests of this file check Linux's limits on names: NAME_MAX,
// PATH_MAX, NUL, and the order in which symlink(2) checks them.

var (
	_ = register("NameLimits", testNameLimits)
	_ = register("SymlinkEmptyTarget", testSymlinkEmptyTarget)
)

// testNameLimits is issue 14, item 6: every writable layer refuses at
// creation the names Linux refuses, with Linux's errors, and creates
// nothing.
func testNameLimits(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	long := strings.Repeat("n", 256)
	nul := "a\x00b"
	deep := strings.Repeat("d/", 2047) + "dd" // 4,096 bytes: one past PATH_MAX-1
	for _, name := range []string{long, "f" + long[1:] + "x", deep} {
		check := func(call string, err error) {
			t.Helper()
			if got := errClass(err); got != classNameTooLong {
				t.Errorf("%s(%.20q..., %d bytes): got error of class %s (%.100s...), want ENAMETOOLONG", call, name, len(name), got, fmt.Sprint(err))
			}
		}
		_, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		check("OpenFile", err)
		_, err = fsys.Create(name)
		check("Create", err)
		check("WriteFile", fsys.WriteFile(name, []byte("x"), 0o644))
		check("Mkdir", fsys.Mkdir(name, 0o755))
		check("Symlink", fsys.Symlink("f", name))
		check("Rename to", fsys.Rename("f", name))
	}
	_, err := fsys.Create(long)
	wantPathErr(t, "Create(256 bytes)", err, classNameTooLong, "open", long)
	wantPathErr(t, "Mkdir(256 bytes)", fsys.Mkdir(long, 0o755), classNameTooLong, "mkdir", long)
	wantLinkErr(t, "Symlink(f, 256 bytes)", fsys.Symlink("f", long), classNameTooLong, "symlink", "f", long)
	wantLinkErr(t, "Rename(f, 256 bytes)", fsys.Rename("f", long), classNameTooLong, "rename", "f", long)
	// A missing parent or source is found first.
	wantPathErr(t, "Mkdir(missing/256 bytes)", fsys.Mkdir("missing/"+long, 0o755), classNotExist, "mkdir", "missing/"+long)
	wantLinkErr(t, "Rename(missing, 256 bytes)", fsys.Rename("missing", long), classNotExist, "rename", "missing", long)

	// A symlink target holds at most PATH_MAX-1 bytes.
	target := strings.Repeat("t", 4096)
	wantLinkErr(t, "Symlink(4,096-byte target, l)", fsys.Symlink(target, "l"), classNameTooLong, "symlink", target, "l")
	wantLinkErr(t, "Symlink(4,096-byte target, f)", fsys.Symlink(target, "f"), classNameTooLong, "symlink", target, "f")

	// NUL: os refuses it before any system call.
	_, err = fsys.Create(nul)
	wantPathErr(t, "Create(NUL)", err, classEINVAL, "open", nul)
	wantPathErr(t, "WriteFile(NUL)", fsys.WriteFile(nul, nil, 0o644), classEINVAL, "open", nul)
	wantPathErr(t, "Mkdir(NUL)", fsys.Mkdir(nul, 0o755), classEINVAL, "mkdir", nul)
	wantLinkErr(t, "Symlink(f, NUL)", fsys.Symlink("f", nul), classEINVAL, "symlink", "f", nul)
	wantLinkErr(t, "Symlink(NUL, l)", fsys.Symlink(nul, "l"), classEINVAL, "symlink", nul, "l")
	wantLinkErr(t, "Rename(f, NUL)", fsys.Rename("f", nul), classEINVAL, "rename", "f", nul)

	infos, err := readInfos(fsys)
	must(t, "reading the tree", err)
	if len(infos) != 1 || infos[0].Path != "f" {
		t.Errorf("after refused creations, the tree is %v, want f only", infos)
	}
	wantContent(t, fsys, "f", "x")

	// The limits themselves are allowed.
	ok255 := strings.Repeat("m", 255)
	if ok(t, "Mkdir(255 bytes)", fsys.Mkdir(ok255, 0o755)) {
		writeFile(t, fsys, ok255+"/"+ok255, "y")
		wantContent(t, fsys, ok255+"/"+ok255, "y")
	}
	target = target[:4095]
	if ok(t, "Symlink(4,095-byte target, l)", fsys.Symlink(target, "l")) {
		if got, err := fsys.Readlink("l"); got != target || err != nil {
			t.Errorf("Readlink(l) = %.20q... (%d bytes), %v; want the 4,095-byte target", got, len(got), err)
		}
	}
}

// testSymlinkEmptyTarget is issue 13, item 3: Linux refuses an empty
// target with ENOENT before it looks at the new name.
func testSymlinkEmptyTarget(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "a")
	writeFile(t, fsys, "a/c", "x")
	symlink(t, fsys, "loop", "loop")
	for _, name := range []string{"a/c", "a/new", "missing/c", "a/c/x", "loop/c", "a", "."} {
		wantLinkErr(t, fmt.Sprintf("Symlink(\"\", %q)", name), fsys.Symlink("", name), classNotExist, "symlink", "", name)
	}
	wantContent(t, fsys, "a/c", "x")
	wantMissing(t, fsys, "a/new")
}
