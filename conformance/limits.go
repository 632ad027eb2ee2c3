package conformance

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The tests of this file check Linux's limits: on names (NAME_MAX,
// PATH_MAX, NUL), on offsets (the largest file size), and the rules of
// inherited mode bits.

var (
	_ = register("NameLimits", testNameLimits)
	_ = register("SymlinkEmptyTarget", testSymlinkEmptyTarget)
	_ = register("SetgidMkdir", testSetgidMkdir)
	_ = register("OffsetsPastMax", testOffsetsPastMax)
	_ = register("NegativeOffsets", testNegativeOffsets)
	_ = register("ReadDirBatchesSorted", testReadDirBatchesSorted)
	_ = register("ReadDirRenamedHandle", testReadDirRenamedHandle)
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

	// A name that is not an io/fs path is fs.ErrInvalid first, as always.
	wantClass(t, "Mkdir(NUL/)", fsys.Mkdir(nul+"/", 0o755), classInvalid)
	wantClass(t, `Symlink("", x/)`, fsys.Symlink("", "x/"), classInvalid)
	wantClass(t, "Symlink(NUL, /x)", fsys.Symlink(nul, "/x"), classInvalid)
	wantClass(t, "Rename(f, NUL/)", fsys.Rename("f", nul+"/"), classInvalid)

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

// testSetgidMkdir is issue 13, item 2: a directory made in a setgid
// directory is setgid, as on Linux; a file is not, and Chmod sets exactly
// the bits it is given.
func testSetgidMkdir(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "g")
	must(t, "Chmod(g, setgid)", fsys.Chmod("g", fs.ModeSetgid|0o755))
	wantMode(t, fsys, "g", fs.ModeDir|fs.ModeSetgid|0o755)
	must(t, "Mkdir(g/c)", fsys.Mkdir("g/c", 0o700))
	wantMode(t, fsys, "g/c", fs.ModeDir|fs.ModeSetgid|0o700)
	must(t, "MkdirAll(g/x/y)", fsys.MkdirAll("g/x/y", 0o750))
	wantMode(t, fsys, "g/x", fs.ModeDir|fs.ModeSetgid|0o750)
	wantMode(t, fsys, "g/x/y", fs.ModeDir|fs.ModeSetgid|0o750)
	symlink(t, fsys, "g", "lg")
	must(t, "Mkdir(lg/v) through a symlink", fsys.Mkdir("lg/v", 0o755))
	wantMode(t, fsys, "g/v", fs.ModeDir|fs.ModeSetgid|0o755)
	writeFile(t, fsys, "g/f", "x")
	wantMode(t, fsys, "g/f", 0o644)
	f := openFile(t, fsys, "g/f2", os.O_RDWR|os.O_CREATE, 0o600)
	must(t, "Close", f.Close())
	wantMode(t, fsys, "g/f2", 0o600)

	// Without a setgid parent, mkdir drops the bit from perm.
	must(t, "Mkdir(plain, setgid)", fsys.Mkdir("plain", fs.ModeSetgid|fs.ModeSticky|0o755))
	wantMode(t, fsys, "plain", fs.ModeDir|fs.ModeSticky|0o755)
	// Chmod sets exactly what it is given.
	must(t, "Chmod(g/c, 0700)", fsys.Chmod("g/c", 0o700))
	wantMode(t, fsys, "g/c", fs.ModeDir|0o700)
	// Rename keeps the mode: the bit is inherited at creation only.
	must(t, "Rename(g/x, out)", fsys.Rename("g/x", "out"))
	wantMode(t, fsys, "out", fs.ModeDir|fs.ModeSetgid|0o750)
	must(t, "Rename(plain, g/in)", fsys.Rename("plain", "g/in"))
	wantMode(t, fsys, "g/in", fs.ModeDir|fs.ModeSticky|0o755)
}

// testOffsetsPastMax is issue 13, item 5: a read or write whose end passes
// the largest offset is refused with EINVAL and changes nothing, whatever
// the file system's largest file (tmpfs: math.MaxInt64; ext4: 16 TiB, and
// Seek refuses offsets past it).
func testOffsetsPastMax(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	f := openFile(t, fsys, "f", os.O_RDWR|os.O_CREATE, 0o644)
	must(t, "WriteString", errOf(f.WriteString("0123456789")))
	n, err := f.WriteAt([]byte("xy"), math.MaxInt64-1)
	wantPathErr(t, "WriteAt(xy, MaxInt64-1)", err, classEINVAL, "write", "f")
	if n != 0 {
		t.Errorf("WriteAt(xy, MaxInt64-1) = %d bytes, want 0", n)
	}
	_, err = f.WriteAt([]byte("x"), math.MaxInt64)
	wantPathErr(t, "WriteAt(x, MaxInt64)", err, classEINVAL, "write", "f")
	_, err = f.ReadAt(make([]byte, 1), math.MaxInt64)
	wantPathErr(t, "ReadAt(1 byte, MaxInt64)", err, classEINVAL, "read", "f")
	_, err = f.ReadAt(make([]byte, 4), math.MaxInt64-2)
	wantPathErr(t, "ReadAt(4 bytes, MaxInt64-2)", err, classEINVAL, "read", "f")
	_, err = f.Seek(math.MaxInt64, io.SeekEnd)
	wantPathErr(t, "Seek(MaxInt64, io.SeekEnd)", err, classEINVAL, "seek", "f")
	if off, err := f.Seek(math.MaxInt64, io.SeekStart); err == nil {
		if off != math.MaxInt64 {
			t.Errorf("Seek(MaxInt64) = %d, want MaxInt64", off)
		}
		n, err := f.Write([]byte("xy"))
		wantPathErr(t, "Write(xy) at MaxInt64", err, classEINVAL, "write", "f")
		if n != 0 {
			t.Errorf("Write(xy) at MaxInt64 = %d bytes, want 0", n)
		}
		_, err = f.Read(make([]byte, 1))
		wantPathErr(t, "Read(1 byte) at MaxInt64", err, classEINVAL, "read", "f")
		_, err = f.Seek(1, io.SeekCurrent)
		wantPathErr(t, "Seek(1, io.SeekCurrent) at MaxInt64", err, classEINVAL, "seek", "f")
	} else {
		wantPathErr(t, "Seek(MaxInt64)", err, classEINVAL, "seek", "f")
	}
	fi, err := f.Stat()
	must(t, "Stat", err)
	if fi.Size() != 10 {
		t.Errorf("size after refused writes = %d, want 10", fi.Size())
	}
	wantContent(t, fsys, "f", "0123456789")
	// Truncate to the largest size: tmpfs allows it, ext4 gives EFBIG.
	switch err := f.Truncate(math.MaxInt64); {
	case err == nil:
		fi, err := f.Stat()
		must(t, "Stat", err)
		if fi.Size() != math.MaxInt64 {
			t.Errorf("size after Truncate(MaxInt64) = %d", fi.Size())
		}
		buf := []byte{'?'}
		if n, err := f.ReadAt(buf, math.MaxInt64-1); n != 1 || err != nil || buf[0] != 0 {
			t.Errorf("ReadAt(1 byte, MaxInt64-1) after Truncate(MaxInt64) = %d, %v, %q; want a zero byte", n, err, buf)
		}
		must(t, "Truncate(10)", f.Truncate(10))
	case !errors.Is(err, syscall.EFBIG):
		t.Errorf("Truncate(MaxInt64) = %v, want nil or EFBIG", err)
	}
	wantContent(t, fsys, "f", "0123456789")
}

// testNegativeOffsets checks the errors os gives for negative offsets:
// ReadAt and WriteAt say "negative offset" (no errno), Seek and Truncate
// EINVAL; an O_APPEND file refuses WriteAt before looking at the offset.
func testNegativeOffsets(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	f := openFile(t, fsys, "f", os.O_RDWR|os.O_CREATE, 0o644)
	must(t, "WriteString", errOf(f.WriteString("abc")))
	for _, p := range [][]byte{nil, []byte("x")} {
		_, err := f.WriteAt(p, -1)
		wantPathErr(t, fmt.Sprintf("WriteAt(%d bytes, -1)", len(p)), err, classOther, "writeat", "f")
		_, err = f.ReadAt(p, -1)
		wantPathErr(t, fmt.Sprintf("ReadAt(%d bytes, -1)", len(p)), err, classOther, "readat", "f")
	}
	_, err := f.Seek(math.MinInt64, io.SeekCurrent)
	wantPathErr(t, "Seek(MinInt64, io.SeekCurrent)", err, classEINVAL, "seek", "f")
	wantPathErr(t, "Truncate(-1)", f.Truncate(-1), classEINVAL, "truncate", "f")
	if off, err := f.Seek(0, io.SeekCurrent); off != 3 || err != nil {
		t.Errorf("offset after refused calls = %d, %v; want 3", off, err)
	}
	a := openFile(t, fsys, "f", os.O_RDWR|os.O_APPEND, 0)
	if _, err := a.WriteAt([]byte("x"), -1); err == nil || errClass(err) != classOther {
		t.Errorf("WriteAt(x, -1) on an O_APPEND file = %v, want os's refusal of WriteAt in append mode", err)
	}
	wantContent(t, fsys, "f", "abc")
}

// testReadDirBatchesSorted is issue 13, item 6: every backend lists a
// directory handle's batches in name order, as ReadDir of the FS does.
func testReadDirBatchesSorted(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	var want []string
	for i := range 60 {
		// Created out of order, so that no creation order is sorted.
		name := fmt.Sprintf("e%02d", (i*37)%60)
		writeFile(t, fsys, "d/"+name, name)
		want = append(want, name)
	}
	slices.Sort(want)
	d := openFile(t, fsys, "d", os.O_RDONLY, 0)
	var got []string
	for {
		list, err := d.ReadDir(7)
		for _, e := range list {
			got = append(got, e.Name())
		}
		if err == io.EOF {
			break
		}
		must(t, "ReadDir(7)", err)
		if len(list) == 0 {
			t.Fatal("ReadDir(7) returned nothing and no error")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReadDir(7) batches = %v, want %v", got, want)
	}
	if _, err := d.Seek(0, io.SeekStart); err != nil {
		t.Fatalf("Seek(0) of a directory: %v", err)
	}
	list, err := d.ReadDir(-1)
	must(t, "ReadDir(-1) after rewinding", err)
	got = got[:0]
	for _, e := range list {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReadDir(-1) after rewinding = %v, want %v", got, want)
	}
	// A closed handle lists nothing more of what it had read.
	d2, err := fsys.OpenFile("d", os.O_RDONLY, 0)
	must(t, "OpenFile(d)", err)
	if _, err := d2.ReadDir(7); err != nil {
		t.Fatalf("ReadDir(7): %v", err)
	}
	must(t, "Close", d2.Close())
	_, err = d2.ReadDir(7)
	wantClass(t, "ReadDir(7) after Close", err, classClosed)
}

// testReadDirRenamedHandle is issue 13, item 6: the entries a directory
// handle lists describe themselves relative to the open directory, as
// os.File.Readdir's do, even once the directory has moved.
func testReadDirRenamedHandle(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	writeFile(t, fsys, "d/a", "1")
	writeFile(t, fsys, "d/b", "22")
	d := openFile(t, fsys, "d", os.O_RDONLY, 0)
	must(t, "Rename(d, e)", fsys.Rename("d", "e"))
	first, err := d.ReadDir(1)
	must(t, "ReadDir(1)", err)
	rest, err := d.ReadDir(-1)
	must(t, "ReadDir(-1)", err)
	list := append(first, rest...)
	if len(list) != 2 {
		t.Fatalf("ReadDir of the renamed directory = %v, want a and b", list)
	}
	for i, want := range []struct {
		name string
		size int64
	}{{"a", 1}, {"b", 2}} {
		fi, err := list[i].Info()
		if err != nil {
			t.Errorf("Info of %s after the rename: %v", want.name, err)
			continue
		}
		if fi.Name() != want.name || fi.Size() != want.size {
			t.Errorf("Info of %s = %s, %d bytes; want %s, %d bytes", want.name, fi.Name(), fi.Size(), want.name, want.size)
		}
	}
}
