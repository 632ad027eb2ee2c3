package conformance

import (
	"fmt"
	"io/fs"
	"os"
	"testing"
	"time"
)

// The tests of this file check the error of each operation in the cases
// where Linux gives a distinct one, as package os reports it: the class of
// the wrapped error, the Op and the paths.

var (
	_ = register("MkdirExist", testMkdirExist)
	_ = register("MkdirNoParent", testMkdirNoParent)
	_ = register("MkdirNotDir", testMkdirNotDir)
	_ = register("MkdirAll", testMkdirAll)
	_ = register("RemoveNotEmpty", testRemoveNotEmpty)
	_ = register("RemoveMissing", testRemoveMissing)
	_ = register("Remove", testRemove)
	_ = register("RemoveAll", testRemoveAll)
	_ = register("RenameOntoDir", testRenameOntoDir)
	_ = register("RenameDirOntoFile", testRenameDirOntoFile)
	_ = register("RenameIntoSelf", testRenameIntoSelf)
	_ = register("RenameReplace", testRenameReplace)
	_ = register("RenameDir", testRenameDir)
	_ = register("OpenExcl", testOpenExcl)
	_ = register("OpenDirWrite", testOpenDirWrite)
	_ = register("OpenCreate", testOpenCreate)
	_ = register("InvalidPaths", testInvalidPaths)
	_ = register("ReadlinkNotLink", testReadlinkNotLink)
	_ = register("ReadDirNotDir", testReadDirNotDir)
	_ = register("Chmod", testChmod)
	_ = register("Chtimes", testChtimes)
	_ = register("Chown", testChown)
)

func testMkdirExist(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	must(t, "Mkdir(d)", fsys.Mkdir("d", 0o755))
	wantPathErr(t, "Mkdir(d) again", fsys.Mkdir("d", 0o755), classExist, "mkdir", "d")
	writeFile(t, fsys, "f", "x")
	wantPathErr(t, "Mkdir(f) on a file", fsys.Mkdir("f", 0o755), classExist, "mkdir", "f")
	symlink(t, fsys, "missing", "dangling")
	wantPathErr(t, "Mkdir on a dangling symlink", fsys.Mkdir("dangling", 0o755), classExist, "mkdir", "dangling")
	wantMissing(t, fsys, "missing")
	wantPathErr(t, `Mkdir(".")`, fsys.Mkdir(".", 0o755), classExist, "mkdir", ".")
	wantContent(t, fsys, "f", "x")
}

func testMkdirNoParent(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	wantPathErr(t, "Mkdir(x/y)", fsys.Mkdir("x/y", 0o755), classNotExist, "mkdir", "x/y")
	wantMissing(t, fsys, "x")
	symlink(t, fsys, "missing", "dangling")
	wantPathErr(t, "Mkdir through a dangling symlink", fsys.Mkdir("dangling/y", 0o755), classNotExist, "mkdir", "dangling/y")
	wantMissing(t, fsys, "missing")
}

func testMkdirNotDir(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	wantPathErr(t, "Mkdir(f/y)", fsys.Mkdir("f/y", 0o755), classNotDir, "mkdir", "f/y")
	wantPathErr(t, "Mkdir(f/y/z)", fsys.Mkdir("f/y/z", 0o755), classNotDir, "mkdir", "f/y/z")
	symlink(t, fsys, "f", "lf")
	wantPathErr(t, "Mkdir(lf/y) through a symlink to a file", fsys.Mkdir("lf/y", 0o755), classNotDir, "mkdir", "lf/y")
	wantContent(t, fsys, "f", "x")
}

func testMkdirAll(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	must(t, "MkdirAll(a/b/c)", fsys.MkdirAll("a/b/c", 0o750))
	for _, name := range []string{"a", "a/b", "a/b/c"} {
		wantMode(t, fsys, name, fs.ModeDir|0o750)
	}
	must(t, "MkdirAll(a/b/c) again", fsys.MkdirAll("a/b/c", 0o700))
	wantMode(t, fsys, "a/b/c", fs.ModeDir|0o750)
	must(t, "MkdirAll(.)", fsys.MkdirAll(".", 0o755))
	writeFile(t, fsys, "f", "x")
	wantPathErr(t, "MkdirAll(f)", fsys.MkdirAll("f", 0o755), classNotDir, "mkdir", "f")
	wantPathErr(t, "MkdirAll(f/x/y)", fsys.MkdirAll("f/x/y", 0o755), classNotDir, "mkdir", "f")
	symlink(t, fsys, "a", "la")
	must(t, "MkdirAll(la) on a symlink to a directory", fsys.MkdirAll("la", 0o755))
	must(t, "MkdirAll(la/b/new) through a symlink", fsys.MkdirAll("la/b/new", 0o755))
	wantMode(t, fsys, "a/b/new", fs.ModeDir|0o755)
	symlink(t, fsys, "missing", "dangling")
	wantPathErr(t, "MkdirAll(dangling/x)", fsys.MkdirAll("dangling/x", 0o755), classExist, "mkdir", "dangling")
	wantMissing(t, fsys, "missing")
}

func testRemoveNotEmpty(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	writeFile(t, fsys, "d/f", "x")
	wantPathErr(t, "Remove(d)", fsys.Remove("d"), classNotEmpty, "remove", "d")
	wantContent(t, fsys, "d/f", "x")
	mkdir(t, fsys, "e")
	mkdir(t, fsys, "e/sub")
	wantPathErr(t, "Remove(e)", fsys.Remove("e"), classNotEmpty, "remove", "e")
	wantMode(t, fsys, "e/sub", fs.ModeDir|0o755)
}

func testRemoveMissing(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	wantPathErr(t, "Remove(x)", fsys.Remove("x"), classNotExist, "remove", "x")
	wantPathErr(t, "Remove(x/y)", fsys.Remove("x/y"), classNotExist, "remove", "x/y")
	writeFile(t, fsys, "f", "x")
	wantPathErr(t, "Remove(f/y)", fsys.Remove("f/y"), classNotDir, "remove", "f/y")
	must(t, "Remove(f)", fsys.Remove("f"))
	wantPathErr(t, "Remove(f) again", fsys.Remove("f"), classNotExist, "remove", "f")
}

func testRemove(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mkdir(t, fsys, "d")
	writeFile(t, fsys, "d/inner", "y")
	mkdir(t, fsys, "empty")
	symlink(t, fsys, "d", "ld")
	symlink(t, fsys, "missing", "dangling")
	for _, name := range []string{"f", "empty", "ld", "dangling"} {
		must(t, fmt.Sprintf("Remove(%q)", name), fsys.Remove(name))
		wantMissing(t, fsys, name)
	}
	wantContent(t, fsys, "d/inner", "y")
	wantPathErr(t, `Remove(".")`, fsys.Remove("."), classEINVAL, "remove", ".")
	symlink(t, fsys, "d", "ld")
	must(t, "Remove(ld/inner) through a symlink", fsys.Remove("ld/inner"))
	wantMissing(t, fsys, "d/inner")
}

func testRemoveAll(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	must(t, "RemoveAll(missing)", fsys.RemoveAll("missing"))
	must(t, "RemoveAll(missing/x)", fsys.RemoveAll("missing/x"))
	must(t, "MkdirAll(d/a/b)", fsys.MkdirAll("d/a/b", 0o755))
	writeFile(t, fsys, "d/f", "x")
	writeFile(t, fsys, "d/a/b/g", "y")
	symlink(t, fsys, "../keep", "d/a/link")
	mkdir(t, fsys, "keep")
	writeFile(t, fsys, "keep/k", "k")
	must(t, "RemoveAll(d)", fsys.RemoveAll("d"))
	wantMissing(t, fsys, "d")
	wantContent(t, fsys, "keep/k", "k")
	symlink(t, fsys, "keep", "lk")
	must(t, "RemoveAll(lk) of a symlink to a directory", fsys.RemoveAll("lk"))
	wantMissing(t, fsys, "lk")
	wantContent(t, fsys, "keep/k", "k")
	writeFile(t, fsys, "f", "x")
	must(t, "RemoveAll(f)", fsys.RemoveAll("f"))
	wantMissing(t, fsys, "f")
	writeFile(t, fsys, "f", "x")
	// os reports the system call that failed ("unlinkat"): the Op is not
	// checked.
	wantClass(t, "RemoveAll(f/x)", fsys.RemoveAll("f/x"), classNotDir)
	wantClass(t, `RemoveAll(".")`, fsys.RemoveAll("."), classEINVAL)
	wantContent(t, fsys, "f", "x")
}

func testRenameOntoDir(t *testing.T, newFS NewFS, _ *config) {
	// os.Rename refuses an existing directory as the new name with EEXIST
	// before asking the kernel, whatever the old name is.
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mkdir(t, fsys, "empty")
	mkdir(t, fsys, "full")
	writeFile(t, fsys, "full/g", "y")
	mkdir(t, fsys, "d")
	wantLinkErr(t, "Rename(f, empty)", fsys.Rename("f", "empty"), classExist, "rename", "f", "empty")
	wantLinkErr(t, "Rename(d, empty)", fsys.Rename("d", "empty"), classExist, "rename", "d", "empty")
	wantLinkErr(t, "Rename(d, full)", fsys.Rename("d", "full"), classExist, "rename", "d", "full")
	wantLinkErr(t, "Rename(d, d)", fsys.Rename("d", "d"), classExist, "rename", "d", "d")
	wantLinkErr(t, "Rename(missing, d)", fsys.Rename("missing", "d"), classNotExist, "rename", "missing", "d")
	wantContent(t, fsys, "f", "x")
	wantContent(t, fsys, "full/g", "y")
	wantMode(t, fsys, "d", fs.ModeDir|0o755)
}

func testRenameDirOntoFile(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	writeFile(t, fsys, "f", "x")
	wantLinkErr(t, "Rename(d, f)", fsys.Rename("d", "f"), classNotDir, "rename", "d", "f")
	symlink(t, fsys, "f", "lf")
	wantLinkErr(t, "Rename(d, lf)", fsys.Rename("d", "lf"), classNotDir, "rename", "d", "lf")
	wantLinkErr(t, "Rename(d, f/x)", fsys.Rename("d", "f/x"), classNotDir, "rename", "d", "f/x")
	wantContent(t, fsys, "f", "x")
	wantMode(t, fsys, "d", fs.ModeDir|0o755)
}

func testRenameIntoSelf(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	must(t, "MkdirAll(d/e)", fsys.MkdirAll("d/e", 0o755))
	wantLinkErr(t, "Rename(d, d/sub)", fsys.Rename("d", "d/sub"), classEINVAL, "rename", "d", "d/sub")
	wantLinkErr(t, "Rename(d, d/e/f)", fsys.Rename("d", "d/e/f"), classEINVAL, "rename", "d", "d/e/f")
	wantLinkErr(t, "Rename(d, d/x/y)", fsys.Rename("d", "d/x/y"), classNotExist, "rename", "d", "d/x/y")
	wantMode(t, fsys, "d/e", fs.ModeDir|0o755)
	wantMissing(t, fsys, "d/sub")
}

func testRenameReplace(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "a", "a")
	writeFile(t, fsys, "b", "b")
	must(t, "Rename(a, b)", fsys.Rename("a", "b"))
	wantMissing(t, fsys, "a")
	wantContent(t, fsys, "b", "a")
	must(t, "Rename(b, b)", fsys.Rename("b", "b"))
	wantContent(t, fsys, "b", "a")
	writeFile(t, fsys, "target", "t")
	symlink(t, fsys, "target", "link")
	must(t, "Rename(b, link) onto a symlink", fsys.Rename("b", "link"))
	wantContent(t, fsys, "link", "a")
	wantMode(t, fsys, "link", 0o644)
	wantContent(t, fsys, "target", "t")
	mkdir(t, fsys, "d")
	symlink(t, fsys, "d", "ld")
	writeFile(t, fsys, "c", "c")
	must(t, "Rename(c, ld) onto a symlink to a directory", fsys.Rename("c", "ld"))
	wantContent(t, fsys, "ld", "c")
	wantMode(t, fsys, "d", fs.ModeDir|0o755)
	wantLinkErr(t, "Rename(missing, x)", fsys.Rename("missing", "x"), classNotExist, "rename", "missing", "x")
	wantLinkErr(t, "Rename(ld, nodir/x)", fsys.Rename("ld", "nodir/x"), classNotExist, "rename", "ld", "nodir/x")
	wantLinkErr(t, "Rename(ld, target/x)", fsys.Rename("ld", "target/x"), classNotDir, "rename", "ld", "target/x")
	symlink(t, fsys, "d", "ld2")
	writeFile(t, fsys, "e", "e")
	must(t, "Rename(e, ld2/e) through a symlink", fsys.Rename("e", "ld2/e"))
	wantContent(t, fsys, "d/e", "e")
}

func testRenameDir(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	must(t, "MkdirAll(d/sub)", fsys.MkdirAll("d/sub", 0o700))
	writeFile(t, fsys, "d/f", "f")
	writeFile(t, fsys, "d/sub/g", "g")
	symlink(t, fsys, "../f", "d/sub/up")
	must(t, "Rename(d, e)", fsys.Rename("d", "e"))
	wantMissing(t, fsys, "d")
	wantContent(t, fsys, "e/f", "f")
	wantContent(t, fsys, "e/sub/g", "g")
	wantContent(t, fsys, "e/sub/up", "f")
	wantMode(t, fsys, "e/sub", fs.ModeDir|0o700)
	mkdir(t, fsys, "x")
	must(t, "Rename(e, x/e)", fsys.Rename("e", "x/e"))
	wantContent(t, fsys, "x/e/sub/g", "g")
	must(t, "Rename(x/e/sub, sub)", fsys.Rename("x/e/sub", "sub"))
	wantContent(t, fsys, "sub/g", "g")
	wantMissing(t, fsys, "x/e/sub")
	must(t, "Mkdir(d) again", fsys.Mkdir("d", 0o755))
	wantPathErr(t, "Stat(d/f)", statErr(fsys, "d/f"), classNotExist, "stat", "d/f")
}

func statErr(fsys fs.FS, name string) error {
	_, err := fs.Stat(fsys, name)
	return err
}

func testOpenExcl(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mkdir(t, fsys, "d")
	symlink(t, fsys, "missing", "dangling")
	excl := os.O_RDWR | os.O_CREATE | os.O_EXCL
	for _, name := range []string{"f", "d", "dangling"} {
		_, err := fsys.OpenFile(name, excl, 0o644)
		wantPathErr(t, fmt.Sprintf("OpenFile(%q, O_CREATE|O_EXCL)", name), err, classExist, "open", name)
	}
	wantMissing(t, fsys, "missing")
	wantContent(t, fsys, "f", "x")
	f, err := fsys.OpenFile("new", excl, 0o600)
	must(t, "OpenFile(new, O_CREATE|O_EXCL)", err)
	must(t, "Close", f.Close())
	wantMode(t, fsys, "new", 0o600)
}

func testOpenDirWrite(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	for _, flag := range []int{os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC, os.O_WRONLY | os.O_CREATE, os.O_RDWR | os.O_APPEND} {
		_, err := fsys.OpenFile("d", flag, 0o644)
		wantPathErr(t, fmt.Sprintf("OpenFile(d, %#o)", flag), err, classIsDir, "open", "d")
	}
	_, err := fsys.Create("d")
	wantPathErr(t, "Create(d)", err, classIsDir, "open", "d")
	wantPathErr(t, "WriteFile(d)", fsys.WriteFile("d", []byte("x"), 0o644), classIsDir, "open", "d")
	symlink(t, fsys, "d", "ld")
	_, err = fsys.OpenFile("ld", os.O_WRONLY, 0)
	wantPathErr(t, "OpenFile(ld, O_WRONLY)", err, classIsDir, "open", "ld")
	wantMode(t, fsys, "d", fs.ModeDir|0o755)
}

func testOpenCreate(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	f := openFile(t, fsys, "f", os.O_WRONLY|os.O_CREATE, 0o640)
	_, err := f.Write([]byte("hello"))
	must(t, "Write", err)
	must(t, "Close", f.Close())
	wantMode(t, fsys, "f", 0o640)
	f = openFile(t, fsys, "f", os.O_RDWR|os.O_CREATE, 0o600)
	must(t, "Close", f.Close())
	wantMode(t, fsys, "f", 0o640)
	wantContent(t, fsys, "f", "hello")
	_, err = fsys.OpenFile("missing", os.O_RDONLY, 0)
	wantPathErr(t, "OpenFile(missing)", err, classNotExist, "open", "missing")
	_, err = fsys.OpenFile("nodir/f", os.O_RDWR|os.O_CREATE, 0o644)
	wantPathErr(t, "OpenFile(nodir/f, O_CREATE)", err, classNotExist, "open", "nodir/f")
	_, err = fsys.OpenFile("f/x", os.O_RDWR|os.O_CREATE, 0o644)
	wantPathErr(t, "OpenFile(f/x, O_CREATE)", err, classNotDir, "open", "f/x")
	_, err = fsys.Open("f/x")
	wantPathErr(t, "Open(f/x)", err, classNotDir, "open", "f/x")
	mkdir(t, fsys, "d")
	symlink(t, fsys, "d/target", "dangling")
	f = openFile(t, fsys, "dangling", os.O_WRONLY|os.O_CREATE, 0o604)
	_, err = f.Write([]byte("through"))
	must(t, "Write", err)
	must(t, "Close", f.Close())
	wantContent(t, fsys, "d/target", "through")
	wantMode(t, fsys, "d/target", 0o604)
	wantMode(t, fsys, "dangling", fs.ModeSymlink|0o777)
	f = openFile(t, fsys, "g", os.O_RDONLY|os.O_CREATE, 0o644)
	must(t, "Close", f.Close())
	wantContent(t, fsys, "g", "")
}

// testInvalidPaths checks that every operation refuses a path that is not
// fs.ValidPath with fs.ErrInvalid, and creates nothing.
func testInvalidPaths(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mkdir(t, fsys, "d")
	names := append(invalidPaths, "f/", "d/", "./d", "d/.", "new/", "./new")
	now := time.Now()
	for _, name := range names {
		check := func(call string, err error) {
			t.Helper()
			wantClass(t, fmt.Sprintf("%s(%q)", call, name), err, classInvalid)
		}
		checkRemoveAll := func(err error) {
			t.Helper()
			// The fallback of layer.RemoveAll answers EINVAL, as os does
			// for ".": either is accepted.
			if c := errClass(err); c != classInvalid && c != classEINVAL {
				t.Errorf("RemoveAll(%q): got %v, want fs.ErrInvalid", name, err)
			}
		}
		_, err := fsys.Open(name)
		check("Open", err)
		_, err = fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		check("OpenFile", err)
		_, err = fsys.Create(name)
		check("Create", err)
		_, err = fsys.Stat(name)
		check("Stat", err)
		_, err = fsys.Lstat(name)
		check("Lstat", err)
		_, err = fsys.ReadFile(name)
		check("ReadFile", err)
		_, err = fsys.ReadDir(name)
		check("ReadDir", err)
		_, err = fsys.ReadLink(name)
		check("ReadLink", err)
		_, err = fsys.Readlink(name)
		check("Readlink", err)
		check("WriteFile", fsys.WriteFile(name, []byte("x"), 0o644))
		check("Mkdir", fsys.Mkdir(name, 0o755))
		check("MkdirAll", fsys.MkdirAll(name, 0o755))
		check("Remove", fsys.Remove(name))
		checkRemoveAll(fsys.RemoveAll(name))
		check("Rename from", fsys.Rename(name, "renamed"))
		check("Rename to", fsys.Rename("f", name))
		check("Chmod", fsys.Chmod(name, 0o600))
		check("Chown", fsys.Chown(name, -1, -1))
		check("Lchown", fsys.Lchown(name, -1, -1))
		check("Chtimes", fsys.Chtimes(name, now, now))
		check("Symlink", fsys.Symlink("f", name))
		if err := fsys.Whiteout(name); errClass(err) != classUnsupported {
			check("Whiteout", err)
		}
	}
	infos, err := readInfos(fsys)
	must(t, "reading the tree", err)
	if len(infos) != 2 || infos[0].Path != "d" || infos[1].Path != "f" {
		t.Errorf("after operations on invalid paths, the tree is %v, want d and f only", infos)
	}
	wantContent(t, fsys, "f", "x")
	wantMode(t, fsys, "f", 0o644)
	wantMode(t, fsys, "d", fs.ModeDir|0o755)
}

func testReadlinkNotLink(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mkdir(t, fsys, "d")
	for _, name := range []string{"f", "d", "."} {
		_, err := fsys.Readlink(name)
		wantPathErr(t, fmt.Sprintf("Readlink(%q)", name), err, classEINVAL, "readlink", name)
		_, err = fsys.ReadLink(name)
		wantPathErr(t, fmt.Sprintf("ReadLink(%q)", name), err, classEINVAL, "readlink", name)
	}
	_, err := fsys.Readlink("missing")
	wantPathErr(t, "Readlink(missing)", err, classNotExist, "readlink", "missing")
	_, err = fsys.ReadLink("f/x")
	wantPathErr(t, "ReadLink(f/x)", err, classNotDir, "readlink", "f/x")
}

func testReadDirNotDir(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mkdir(t, fsys, "d")
	_, err := fsys.ReadDir("f")
	wantPathErr(t, "ReadDir(f)", err, classNotDir, "open", "f")
	_, err = fsys.ReadDir("missing")
	wantPathErr(t, "ReadDir(missing)", err, classNotExist, "open", "missing")
	f := openFile(t, fsys, "f", os.O_RDONLY, 0)
	for _, n := range []int{-1, 0, 1} {
		_, err = f.ReadDir(n)
		wantPathErr(t, fmt.Sprintf("ReadDir(%d) on a file handle", n), err, classNotDir, "readdirent", "f")
	}
	_, err = fsys.ReadFile("d")
	wantPathErr(t, "ReadFile(d)", err, classIsDir, "read", "d")
	d := openFile(t, fsys, "d", os.O_RDONLY, 0)
	_, err = d.Read(make([]byte, 4))
	wantPathErr(t, "Read on a directory handle", err, classIsDir, "read", "d")
	_, err = d.ReadAt(make([]byte, 4), 0)
	wantPathErr(t, "ReadAt on a directory handle", err, classIsDir, "read", "d")
	_, err = d.Write([]byte("x"))
	wantPathErr(t, "Write on a directory handle", err, classBadFD, "write", "d")
}

func testChmod(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mkdir(t, fsys, "d")
	for _, perm := range []fs.FileMode{0o600, 0o777, 0o000, 0o444, 0o751, 0o644} {
		must(t, fmt.Sprintf("Chmod(f, %#o)", perm), fsys.Chmod("f", perm))
		wantMode(t, fsys, "f", perm)
	}
	for _, perm := range []fs.FileMode{0o700, 0o777, 0o751, 0o755} {
		must(t, fmt.Sprintf("Chmod(d, %#o)", perm), fsys.Chmod("d", perm))
		wantMode(t, fsys, "d", fs.ModeDir|perm)
	}
	symlink(t, fsys, "f", "lf")
	must(t, "Chmod(lf) follows the link", fsys.Chmod("lf", 0o640))
	wantMode(t, fsys, "f", 0o640)
	wantMode(t, fsys, "lf", fs.ModeSymlink|0o777)
	wantPathErr(t, "Chmod(missing)", fsys.Chmod("missing", 0o644), classNotExist, "chmod", "missing")
	symlink(t, fsys, "missing", "dangling")
	wantPathErr(t, "Chmod(dangling)", fsys.Chmod("dangling", 0o644), classNotExist, "chmod", "dangling")
	wantPathErr(t, "Chmod(f/x)", fsys.Chmod("f/x", 0o644), classNotDir, "chmod", "f/x")
}

func testChtimes(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mkdir(t, fsys, "d")
	t1 := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	t2 := time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC)
	wantTime := func(name string, want time.Time) {
		t.Helper()
		fi, err := fsys.Lstat(name)
		if ok(t, "Lstat", err) && !fi.ModTime().Equal(want) {
			t.Errorf("%s: ModTime = %v, want %v", name, fi.ModTime(), want)
		}
	}
	for _, name := range []string{"f", "d"} {
		must(t, "Chtimes", fsys.Chtimes(name, t1, t1))
		wantTime(name, t1)
		must(t, "Chtimes with a zero mtime", fsys.Chtimes(name, t2, time.Time{}))
		wantTime(name, t1)
		must(t, "Chtimes with a zero atime", fsys.Chtimes(name, time.Time{}, t2))
		wantTime(name, t2)
	}
	symlink(t, fsys, "f", "lf")
	must(t, "Chtimes(lf) follows the link", fsys.Chtimes("lf", t1, t1))
	wantTime("f", t1)
	wantPathErr(t, "Chtimes(missing)", fsys.Chtimes("missing", t1, t1), classNotExist, "chtimes", "missing")
	wantPathErr(t, "Chtimes(f/x)", fsys.Chtimes("f/x", t1, t1), classNotDir, "chtimes", "f/x")
}

func testChown(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	symlink(t, fsys, "f", "lf")
	ok(t, "Chown(f, -1, -1)", fsys.Chown("f", -1, -1))
	ok(t, "Lchown(lf, -1, -1)", fsys.Lchown("lf", -1, -1))
	ok(t, "Chown(lf, -1, -1)", fsys.Chown("lf", -1, -1))
	ok(t, "Chown(f, uid, gid)", fsys.Chown("f", os.Getuid(), os.Getgid()))
	wantPathErr(t, "Chown(missing)", fsys.Chown("missing", -1, -1), classNotExist, "chown", "missing")
	wantPathErr(t, "Lchown(missing)", fsys.Lchown("missing", -1, -1), classNotExist, "lchown", "missing")
	wantContent(t, fsys, "f", "x")
}
