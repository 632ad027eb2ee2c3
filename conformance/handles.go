package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/layer"
)

// The tests of this file check open files as Linux keeps them.

var (
	_ = register("ClosedFile", testClosedFile)
	_ = register("WriteReadOnly", testWriteReadOnly)
	_ = register("ReadWriteOnly", testReadWriteOnly)
	_ = register("RemoveWhileOpen", testRemoveWhileOpen)
	_ = register("RenameWhileOpen", testRenameWhileOpen)
	_ = register("Append", testAppend)
	_ = register("AppendConcurrent", testAppendConcurrent)
	_ = register("ReadAtWriteAt", testReadAtWriteAt)
	_ = register("ShortReadAt", testShortReadAt)
	_ = register("OpenTrunc", testOpenTrunc)
	_ = register("OpenDirectoryFlag", testOpenDirectoryFlag)
	_ = register("SeekHole", testSeekHole)
	_ = register("SeekDataHole", testSeekDataHole)
	_ = register("Seek", testSeek)
	_ = register("Truncate", testTruncate)
	_ = register("ModTime", testModTime)
	_ = register("Modes", testModes)
	_ = register("WriteFile", testWriteFile)
	_ = register("SharedFile", testSharedFile)
	_ = register("FileName", testFileName)
)

func testClosedFile(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "content")
	mkdir(t, fsys, "d")
	f, err := fsys.OpenFile("f", os.O_RDWR, 0)
	must(t, "OpenFile", err)
	must(t, "Close", f.Close())
	buf := make([]byte, 4)
	_, err = f.Read(buf)
	wantPathErr(t, "Read after Close", err, classClosed, "read", "f")
	_, err = f.ReadAt(buf, 0)
	wantPathErr(t, "ReadAt after Close", err, classClosed, "read", "f")
	_, err = f.Write(buf)
	wantPathErr(t, "Write after Close", err, classClosed, "write", "f")
	_, err = f.WriteAt(buf, 0)
	wantPathErr(t, "WriteAt after Close", err, classClosed, "write", "f")
	_, err = f.WriteString("x")
	wantPathErr(t, "WriteString after Close", err, classClosed, "write", "f")
	_, err = f.Seek(0, io.SeekStart)
	wantPathErr(t, "Seek after Close", err, classClosed, "seek", "f")
	_, err = f.Stat()
	wantPathErr(t, "Stat after Close", err, classClosed, "stat", "f")
	wantPathErr(t, "Truncate after Close", f.Truncate(0), classClosed, "truncate", "f")
	wantPathErr(t, "Sync after Close", f.Sync(), classClosed, "sync", "f")
	wantPathErr(t, "Close after Close", f.Close(), classClosed, "close", "f")
	d, err := fsys.OpenFile("d", os.O_RDONLY, 0)
	must(t, "OpenFile(d)", err)
	must(t, "Close", d.Close())
	_, err = d.ReadDir(-1)
	wantPathErr(t, "ReadDir after Close", err, classClosed, "readdirent", "d")
	wantContent(t, fsys, "f", "content")
}

func testWriteReadOnly(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "content")
	f := openFile(t, fsys, "f", os.O_RDONLY, 0)
	_, err := f.Write([]byte("x"))
	wantPathErr(t, "Write on O_RDONLY", err, classBadFD, "write", "f")
	_, err = f.WriteAt([]byte("x"), 0)
	wantPathErr(t, "WriteAt on O_RDONLY", err, classBadFD, "write", "f")
	_, err = f.WriteString("x")
	wantPathErr(t, "WriteString on O_RDONLY", err, classBadFD, "write", "f")
	wantPathErr(t, "Truncate on O_RDONLY", f.Truncate(0), classEINVAL, "truncate", "f")
	g, err := fsys.Open("f")
	must(t, "Open", err)
	defer g.Close()
	if w, ok := g.(io.Writer); ok {
		_, err = w.Write([]byte("x"))
		wantPathErr(t, "Write on a file of Open", err, classBadFD, "write", "f")
	}
	wantContent(t, fsys, "f", "content")
}

func testReadWriteOnly(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "content")
	f := openFile(t, fsys, "f", os.O_WRONLY, 0)
	_, err := f.Read(make([]byte, 4))
	wantPathErr(t, "Read on O_WRONLY", err, classBadFD, "read", "f")
	_, err = f.ReadAt(make([]byte, 4), 0)
	wantPathErr(t, "ReadAt on O_WRONLY", err, classBadFD, "read", "f")
	a := openFile(t, fsys, "f", os.O_WRONLY|os.O_APPEND, 0)
	_, err = a.Read(make([]byte, 4))
	wantPathErr(t, "Read on O_WRONLY|O_APPEND", err, classBadFD, "read", "f")
}

func testRemoveWhileOpen(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "hello")
	f := openFile(t, fsys, "f", os.O_RDWR, 0)
	must(t, "Remove", fsys.Remove("f"))
	wantMissing(t, fsys, "f")
	buf := make([]byte, 5)
	if n, err := f.Read(buf); n != 5 || err != nil || string(buf) != "hello" {
		t.Errorf("Read after Remove = %d, %v, %q; want 5, nil, hello", n, err, buf[:n])
	}
	if n, err := f.Write([]byte(" world")); n != 6 || err != nil {
		t.Errorf("Write after Remove = %d, %v", n, err)
	}
	if n, err := f.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "world" {
		t.Errorf("ReadAt after Remove = %d, %v, %q", n, err, buf[:n])
	}
	fi, err := f.Stat()
	if ok(t, "Stat after Remove", err) && fi.Size() != 11 {
		t.Errorf("Stat after Remove: size %d, want 11", fi.Size())
	}
	writeFile(t, fsys, "f", "new")
	if n, err := f.ReadAt(buf[:3], 0); n != 3 || err != nil || string(buf[:3]) != "hel" {
		t.Errorf("the removed file changed when a new one took its name: %d, %v, %q", n, err, buf[:n])
	}
	wantContent(t, fsys, "f", "new")
	ok(t, "Close", f.Close())
	// Reading a directory removed while open gives ENOENT, as Linux does.
	mkdir(t, fsys, "d")
	d := openFile(t, fsys, "d", os.O_RDONLY, 0)
	must(t, "Remove(d)", fsys.Remove("d"))
	list, err := d.ReadDir(-1)
	if len(list) != 0 {
		t.Errorf("ReadDir of a removed directory = %v, want no entries", list)
	}
	wantPathErr(t, "ReadDir of a removed directory", err, classNotExist, "readdirent", "d")
}

func testRenameWhileOpen(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	writeFile(t, fsys, "d/f", "hello")
	f := openFile(t, fsys, "d/f", os.O_RDWR, 0)
	must(t, "Rename(d/f, g)", fsys.Rename("d/f", "g"))
	must(t, "Rename(d, e)", fsys.Rename("d", "e"))
	if _, err := f.WriteAt([]byte("J"), 0); err != nil {
		t.Errorf("WriteAt after Rename: %v", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		t.Errorf("Seek after Rename: %v", err)
	}
	if _, err := f.WriteString("!"); err != nil {
		t.Errorf("Write after Rename: %v", err)
	}
	wantContent(t, fsys, "g", "Jello!")
	if f.Name() != "d/f" {
		t.Errorf("Name() after Rename = %q, want the name it was opened with, d/f", f.Name())
	}
	writeFile(t, fsys, "h", "other")
	must(t, "Rename(h, g) over the open file", fsys.Rename("h", "g"))
	buf := make([]byte, 6)
	if n, err := f.ReadAt(buf, 0); n != 6 || err != nil || string(buf) != "Jello!" {
		t.Errorf("ReadAt of a file replaced by Rename = %d, %v, %q; want the old content", n, err, buf[:n])
	}
	wantContent(t, fsys, "g", "other")
}

func testAppend(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "abc")
	a := openFile(t, fsys, "f", os.O_RDWR|os.O_APPEND, 0)
	b := openFile(t, fsys, "f", os.O_WRONLY|os.O_APPEND, 0)
	if _, err := a.Seek(0, io.SeekStart); err != nil {
		t.Errorf("Seek: %v", err)
	}
	write := func(f layer.File, s string, wantOff int64) {
		t.Helper()
		if _, err := f.Write([]byte(s)); err != nil {
			t.Errorf("Write(%q): %v", s, err)
		}
		if off, err := f.Seek(0, io.SeekCurrent); off != wantOff || err != nil {
			t.Errorf("after appending %q, offset = %d, %v; want %d", s, off, err, wantOff)
		}
	}
	write(a, "1", 4)
	write(b, "22", 6)
	write(a, "333", 9)
	wantContent(t, fsys, "f", "abc122333")
	_, err := a.WriteAt([]byte("x"), 0)
	if err == nil {
		t.Errorf("WriteAt on an O_APPEND handle succeeded; os refuses it")
	}
	// Read on an O_RDWR|O_APPEND handle reads from the offset.
	if _, err := a.Seek(1, io.SeekStart); err == nil {
		buf := make([]byte, 2)
		if n, err := a.Read(buf); n != 2 || err != nil || string(buf) != "bc" {
			t.Errorf("Read at offset 1 of an append handle = %d, %v, %q", n, err, buf[:n])
		}
	}
	wantContent(t, fsys, "f", "abc122333")
}

// testAppendConcurrent checks that O_APPEND writes from two handles in two
// goroutines land whole, each at the end.
func testAppendConcurrent(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "")
	const records, size = 200, 32
	var wg sync.WaitGroup
	for g := range 2 {
		f := openFile(t, fsys, "f", os.O_WRONLY|os.O_APPEND, 0)
		wg.Go(func() {
			for i := range records {
				rec := fmt.Appendf(nil, "%d:%04d:", g, i)
				rec = append(rec, bytes.Repeat([]byte{'a' + byte(g)}, size-len(rec)-1)...)
				rec = append(rec, '\n')
				if _, err := f.Write(rec); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, err := fsys.ReadFile("f")
	must(t, "ReadFile", err)
	if len(data) != 2*records*size {
		t.Fatalf("file has %d bytes, want %d", len(data), 2*records*size)
	}
	next := [2]int{}
	for off := 0; off < len(data); off += size {
		rec := data[off : off+size]
		var g, i int
		if _, err := fmt.Sscanf(string(rec), "%d:%d:", &g, &i); err != nil || g < 0 || g > 1 || i != next[g] ||
			!bytes.HasSuffix(rec, append(bytes.Repeat([]byte{'a' + byte(g)}, 4), '\n')) {
			t.Fatalf("torn or misplaced record at offset %d: %q", off, rec)
		}
		next[g]++
	}
}

func testReadAtWriteAt(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	f := openFile(t, fsys, "f", os.O_RDWR|os.O_CREATE, 0o644)
	if _, err := f.Write([]byte("abc")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if n, err := f.WriteAt([]byte("XY"), 0); n != 2 || err != nil {
		t.Errorf("WriteAt = %d, %v", n, err)
	}
	buf := make([]byte, 3)
	if n, err := f.ReadAt(buf, 0); n != 3 || err != nil || string(buf) != "XYc" {
		t.Errorf("ReadAt = %d, %v, %q; want 3, nil, XYc", n, err, buf[:n])
	}
	if off, err := f.Seek(0, io.SeekCurrent); off != 3 || err != nil {
		t.Errorf("offset after WriteAt and ReadAt = %d, %v; want 3 (unmoved)", off, err)
	}
	if n, err := f.WriteAt([]byte("Z"), 6); n != 1 || err != nil {
		t.Errorf("WriteAt past the end = %d, %v", n, err)
	}
	wantContent(t, fsys, "f", "XYc\x00\x00\x00Z")
	if _, err := f.Write([]byte("d")); err != nil {
		t.Errorf("Write: %v", err)
	}
	wantContent(t, fsys, "f", "XYcd\x00\x00Z")
}

func testShortReadAt(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "12345")
	f := openFile(t, fsys, "f", os.O_RDONLY, 0)
	buf := make([]byte, 10)
	if n, err := f.ReadAt(buf, 0); n != 5 || err != io.EOF {
		t.Errorf("short ReadAt = %d, %v; want 5, io.EOF", n, err)
	}
	if n, err := f.ReadAt(buf[:5], 0); n != 5 || err != nil {
		t.Errorf("ReadAt of exactly the file = %d, %v; want 5, nil", n, err)
	}
	if n, err := f.ReadAt(buf, 5); n != 0 || err != io.EOF {
		t.Errorf("ReadAt at the end = %d, %v; want 0, io.EOF", n, err)
	}
	if n, err := f.ReadAt(buf, 100); n != 0 || err != io.EOF {
		t.Errorf("ReadAt past the end = %d, %v; want 0, io.EOF", n, err)
	}
	if n, err := f.Read(buf[:0]); n != 0 || err != nil {
		t.Errorf("Read of 0 bytes = %d, %v; want 0, nil", n, err)
	}
}

func testOpenTrunc(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	must(t, "WriteFile", fsys.WriteFile("f", []byte("content"), 0o640))
	f := openFile(t, fsys, "f", os.O_WRONLY|os.O_TRUNC, 0o600)
	if fi, err := f.Stat(); ok(t, "Stat", err) && fi.Size() != 0 {
		t.Errorf("size after O_TRUNC = %d, want 0", fi.Size())
	}
	wantContent(t, fsys, "f", "")
	wantMode(t, fsys, "f", 0o640)
	// Linux truncates even on O_RDONLY|O_TRUNC.
	writeFile(t, fsys, "g", "content")
	openFile(t, fsys, "g", os.O_RDONLY|os.O_TRUNC, 0)
	wantContent(t, fsys, "g", "")
}

// testOpenDirectoryFlag: O_CREATE with O_DIRECTORY is EINVAL whatever the
// name (Linux checks the flags before the path, since 6.4); O_DIRECTORY on
// anything but a directory is ENOTDIR, a final symlink under O_NOFOLLOW
// included (the directory check comes before may_open's ELOOP); on a
// directory it opens for reading and is EISDIR for writing. A refused open
// changes nothing.
func testOpenDirectoryFlag(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "content")
	must(t, "Mkdir", fsys.Mkdir("d", 0o755))
	must(t, "Symlink", fsys.Symlink("f", "l"))
	must(t, "Symlink", fsys.Symlink("d", "ld"))
	const dir, nofollow = syscall.O_DIRECTORY, syscall.O_NOFOLLOW
	for _, c := range []struct {
		name  string
		flag  int
		class string
	}{
		{"d", os.O_RDONLY | dir, classNil},
		{"ld", os.O_RDONLY | dir, classNil},
		{".", os.O_RDONLY | dir, classNil},
		{"f", os.O_RDONLY | dir, classNotDir},
		{"l", os.O_RDONLY | dir, classNotDir},
		{"l", os.O_RDONLY | dir | nofollow, classNotDir},
		{"ld", os.O_RDONLY | dir | nofollow, classNotDir},
		{"f", os.O_RDWR | os.O_TRUNC | dir, classNotDir},
		{"d", os.O_WRONLY | dir, classIsDir},
		{"missing", os.O_RDONLY | dir, classNotExist},
		{"d", os.O_CREATE | dir, classEINVAL},
		{"f", os.O_CREATE | os.O_RDWR | dir, classEINVAL},
		{"new", os.O_CREATE | os.O_EXCL | os.O_WRONLY | dir, classEINVAL},
	} {
		call := fmt.Sprintf("OpenFile(%q, %#o)", c.name, c.flag)
		f, err := fsys.OpenFile(c.name, c.flag, 0o644)
		if c.class == classNil {
			if ok(t, call, err) {
				f.Close()
			}
			continue
		}
		if err == nil {
			f.Close()
		}
		wantPathErr(t, call, err, c.class, "open", c.name)
	}
	wantContent(t, fsys, "f", "content")
	_, err := fsys.Lstat("new")
	wantClass(t, "Lstat(new)", err, classNotExist)
}

func testSeekHole(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	f := openFile(t, fsys, "f", os.O_RDWR|os.O_CREATE, 0o644)
	must(t, "WriteString", errOf(f.WriteString("abc")))
	if off, err := f.Seek(10, io.SeekStart); off != 10 || err != nil {
		t.Errorf("Seek past the end = %d, %v", off, err)
	}
	if fi, err := f.Stat(); ok(t, "Stat", err) && fi.Size() != 3 {
		t.Errorf("Seek changed the size to %d", fi.Size())
	}
	must(t, "WriteString", errOf(f.WriteString("z")))
	wantContent(t, fsys, "f", "abc\x00\x00\x00\x00\x00\x00\x00z")
	for _, at := range []int64{100_000, 1 << 20} {
		must(t, "WriteAt", errOf(f.WriteAt([]byte("far"), at)))
		buf := make([]byte, 8)
		if n, err := f.ReadAt(buf, at-8); n != 8 || err != nil || !bytes.Equal(buf, make([]byte, 8)) {
			t.Errorf("ReadAt in the hole before %d = %d, %v, %q; want zeros", at, n, err, buf[:n])
		}
	}
	if fi, err := f.Stat(); ok(t, "Stat", err) && fi.Size() != 1<<20+3 {
		t.Errorf("size = %d, want %d", fi.Size(), 1<<20+3)
	}
}

func errOf(_ int, err error) error { return err }

// testSeekDataHole checks SEEK_DATA and SEEK_HOLE (layer.SeekData and
// layer.SeekHole) on the files that take them: an *os.File on Linux or a
// layer.HoleSeeker that says it does. Where a hole starts depends on the
// file system's blocks (tmpfs: a page; layer/mem: 64 KiB), so what is
// checked is what holds on any: data at 0, the first hole at or past the
// first run's end and at or before the second's start, data again at or
// before the second run, a hole at the end, ENXIO at and past the end,
// and the offset moved to what Seek returns.
func testSeekDataHole(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	f := openFile(t, fsys, "f", os.O_RDWR|os.O_CREATE, 0o644)
	if hs, ok := f.(layer.HoleSeeker); !ok || !hs.SeeksHoles() {
		if _, isOS := f.(*os.File); !isOS {
			t.Skip("the backend's files do not take SeekData and SeekHole")
		}
	}
	const far = 4 << 20
	must(t, "WriteAt", errOf(f.WriteAt([]byte("first"), 0)))
	must(t, "WriteAt", errOf(f.WriteAt([]byte("second"), far)))
	size := int64(far + len("second"))
	seek := func(off int64, whence int) int64 {
		t.Helper()
		got, err := f.Seek(off, whence)
		if err != nil {
			t.Fatalf("Seek(%d, %d) = %v", off, whence, err)
		}
		if cur, err := f.Seek(0, io.SeekCurrent); cur != got || err != nil {
			t.Errorf("Seek(%d, %d) = %d, but the offset is %d, %v", off, whence, got, cur, err)
		}
		return got
	}
	if d := seek(0, layer.SeekData); d != 0 {
		t.Errorf("Seek(0, SeekData) = %d, want 0", d)
	}
	h := seek(0, layer.SeekHole)
	if h < int64(len("first")) || h > far {
		t.Errorf("Seek(0, SeekHole) = %d, want a hole between %d and %d", h, len("first"), far)
	}
	if h < far {
		if d := seek(h, layer.SeekData); d <= h || d > far {
			t.Errorf("Seek(%d, SeekData) = %d, want data after the hole, at or before %d", h, d, far)
		}
	}
	if h := seek(far, layer.SeekHole); h != size {
		t.Errorf("Seek(%d, SeekHole) = %d, want the end, %d", far, h, size)
	}
	for _, whence := range []int{layer.SeekData, layer.SeekHole} {
		for _, off := range []int64{size, size + 1} {
			_, err := f.Seek(off, whence)
			var pe *fs.PathError
			if !errors.Is(err, syscall.ENXIO) || !errors.As(err, &pe) || pe.Op != "seek" {
				t.Errorf("Seek(%d, %d) at or past the end = %v, want seek: ENXIO", off, whence, err)
			}
		}
	}
	buf := make([]byte, 4)
	if h < far {
		if _, err := f.ReadAt(buf, h); err != nil || !bytes.Equal(buf, make([]byte, 4)) {
			t.Errorf("ReadAt in the hole at %d = %q, %v; want zeros", h, buf, err)
		}
	}
}

func testSeek(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	data := "0123456789"
	writeFile(t, fsys, "f", data)
	f := openFile(t, fsys, "f", os.O_RDONLY, 0)
	checkSeek(t, "f", f, f, []byte(data))
	_, err := f.Seek(-1, io.SeekStart)
	wantPathErr(t, "Seek(-1, io.SeekStart)", err, classEINVAL, "seek", "f")
	_, err = f.Seek(-11, io.SeekEnd)
	wantPathErr(t, "Seek(-11, io.SeekEnd)", err, classEINVAL, "seek", "f")
	_, err = f.Seek(0, 42)
	wantPathErr(t, "Seek(0, 42)", err, classEINVAL, "seek", "f")
	d := openFile(t, fsys, ".", os.O_RDONLY, 0)
	if list, err := d.ReadDir(-1); len(list) != 1 || err != nil {
		t.Fatalf("ReadDir(-1) = %v, %v", list, err)
	}
	// On Unix, os rewinds a directory with Seek(0, io.SeekStart).
	if off, err := d.Seek(0, io.SeekStart); off != 0 || err != nil {
		t.Errorf("Seek(0, io.SeekStart) of a directory = %d, %v", off, err)
	}
	if list, err := d.ReadDir(-1); len(list) != 1 || err != nil {
		t.Errorf("ReadDir(-1) after rewinding = %v, %v; want the one entry again", list, err)
	}
}

func testTruncate(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	f := openFile(t, fsys, "f", os.O_RDWR|os.O_CREATE, 0o644)
	must(t, "WriteString", errOf(f.WriteString("abcdef")))
	must(t, "Truncate(10)", f.Truncate(10))
	wantContent(t, fsys, "f", "abcdef\x00\x00\x00\x00")
	must(t, "Truncate(2)", f.Truncate(2))
	wantContent(t, fsys, "f", "ab")
	if off, err := f.Seek(0, io.SeekCurrent); off != 6 || err != nil {
		t.Errorf("offset after Truncate = %d, %v; want 6 (unmoved)", off, err)
	}
	must(t, "WriteString", errOf(f.WriteString("Z")))
	wantContent(t, fsys, "f", "ab\x00\x00\x00\x00Z")
	must(t, "Truncate(0)", f.Truncate(0))
	wantContent(t, fsys, "f", "")
	must(t, "Truncate(200000)", f.Truncate(200_000))
	data, err := fsys.ReadFile("f")
	if ok(t, "ReadFile", err) && !bytes.Equal(data, make([]byte, 200_000)) {
		t.Errorf("after growing by Truncate, the file is not %d zeros", 200_000)
	}
	_, err = f.Seek(0, io.SeekStart)
	must(t, "Seek", err)
	w := openFile(t, fsys, "f", os.O_WRONLY, 0)
	wantPathErr(t, "Truncate(-1)", w.Truncate(-1), classEINVAL, "truncate", "f")
}

func testModTime(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	writeFile(t, fsys, "f", "x")
	mtime := func(name string) time.Time {
		t.Helper()
		fi, err := fsys.Stat(name)
		must(t, "Stat", err)
		return fi.ModTime()
	}
	m1 := mtime("f")
	if m2 := mtime("f"); !m2.Equal(m1) {
		t.Errorf("ModTime changed between two calls: %v, %v", m1, m2)
	}
	if now := time.Now(); m1.Before(now.Add(-time.Hour)) || m1.After(now.Add(time.Hour)) {
		t.Errorf("ModTime of a new file = %v, want about now (%v)", m1, now)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	recent := func(what string, name string) {
		t.Helper()
		if m := mtime(name); !m.After(old.Add(time.Hour)) {
			t.Errorf("ModTime after %s = %v, want it updated", what, m)
		}
	}
	must(t, "Chtimes", fsys.Chtimes("f", old, old))
	f := openFile(t, fsys, "f", os.O_RDWR, 0)
	if fi, err := f.Stat(); ok(t, "Stat", err) && !fi.ModTime().Equal(old) {
		t.Errorf("handle's Stat ModTime = %v, want %v", fi.ModTime(), old)
	}
	must(t, "Write", errOf(f.Write([]byte("y"))))
	recent("Write", "f")
	must(t, "Chtimes", fsys.Chtimes("f", old, old))
	must(t, "Truncate", f.Truncate(10))
	recent("Truncate", "f")
	must(t, "Chtimes", fsys.Chtimes("f", old, old))
	must(t, "WriteFile", fsys.WriteFile("f", []byte("z"), 0o644))
	recent("WriteFile", "f")
	mkdir(t, fsys, "d")
	must(t, "Chtimes", fsys.Chtimes("d", old, old))
	writeFile(t, fsys, "d/new", "")
	recent("creating an entry", "d")
	must(t, "Chtimes", fsys.Chtimes("d", old, old))
	must(t, "Remove", fsys.Remove("d/new"))
	recent("removing an entry", "d")
}

func testModes(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	for i, perm := range []fs.FileMode{0o600, 0o751, 0o777, 0o000, 0o646, 0o002} {
		name := fmt.Sprintf("f%d", i)
		f := openFile(t, fsys, name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		must(t, "Close", f.Close())
		wantMode(t, fsys, name, perm)
		name = fmt.Sprintf("w%d", i)
		must(t, "WriteFile", fsys.WriteFile(name, nil, perm))
		wantMode(t, fsys, name, perm)
	}
	for i, perm := range []fs.FileMode{0o700, 0o777, 0o751, 0o707, 0o720} {
		name := fmt.Sprintf("d%d", i)
		must(t, "Mkdir", fsys.Mkdir(name, perm))
		wantMode(t, fsys, name, fs.ModeDir|perm)
		name = fmt.Sprintf("all%d/sub", i)
		must(t, "MkdirAll", fsys.MkdirAll(name, perm))
		wantMode(t, fsys, name, fs.ModeDir|perm)
	}
	f, err := fsys.Create("c")
	must(t, "Create", err)
	must(t, "Close", f.Close())
	wantMode(t, fsys, "c", 0o666)
}

func testWriteFile(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	must(t, "WriteFile", fsys.WriteFile("f", []byte("long content"), 0o640))
	wantMode(t, fsys, "f", 0o640)
	must(t, "WriteFile again", fsys.WriteFile("f", []byte("short"), 0o600))
	wantContent(t, fsys, "f", "short")
	wantMode(t, fsys, "f", 0o640)
	big := pseudoRandom(3, 300_000)
	must(t, "WriteFile big", fsys.WriteFile("big", big, 0o644))
	if data, err := fsys.ReadFile("big"); ok(t, "ReadFile", err) && !bytes.Equal(data, big) {
		t.Errorf("ReadFile of a big file differs from what was written")
	}
	wantPathErr(t, "WriteFile(nodir/f)", fsys.WriteFile("nodir/f", nil, 0o644), classNotExist, "open", "nodir/f")
	wantPathErr(t, "WriteFile(f/x)", fsys.WriteFile("f/x", nil, 0o644), classNotDir, "open", "f/x")
	_, err := fsys.ReadFile("missing")
	wantPathErr(t, "ReadFile(missing)", err, classNotExist, "open", "missing")
}

// testSharedFile checks two handles of one file: separate offsets, writes
// seen at once by the other.
func testSharedFile(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	a := openFile(t, fsys, "f", os.O_RDWR|os.O_CREATE, 0o644)
	b := openFile(t, fsys, "f", os.O_RDWR, 0)
	must(t, "Write", errOf(a.Write([]byte("hello"))))
	buf := make([]byte, 5)
	if n, err := b.Read(buf); n != 5 || err != nil || string(buf) != "hello" {
		t.Errorf("Read through the other handle = %d, %v, %q", n, err, buf[:n])
	}
	must(t, "Write", errOf(a.Write([]byte("!"))))
	if n, err := b.Read(buf); n != 1 || err != nil || buf[0] != '!' {
		t.Errorf("Read through the other handle = %d, %v, %q", n, err, buf[:n])
	}
	must(t, "WriteAt", errOf(b.WriteAt([]byte("J"), 0)))
	if n, err := a.ReadAt(buf, 0); n != 5 || err != nil || string(buf) != "Jello" {
		t.Errorf("ReadAt = %d, %v, %q", n, err, buf[:n])
	}
	must(t, "Truncate", b.Truncate(2))
	if fi, err := a.Stat(); ok(t, "Stat", err) && fi.Size() != 2 {
		t.Errorf("size seen by the other handle = %d, want 2", fi.Size())
	}
}

func testFileName(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "d")
	f := openFile(t, fsys, "d/f", os.O_RDWR|os.O_CREATE, 0o644)
	if f.Name() != "d/f" {
		t.Errorf("Name() = %q, want d/f", f.Name())
	}
	fi, err := f.Stat()
	if ok(t, "Stat", err) && (fi.Name() != "f" || fi.Mode() != 0o644 || fi.IsDir()) {
		t.Errorf("Stat() = %s %v, want f -rw-r--r--", fi.Name(), fi.Mode())
	}
	must(t, "Write", errOf(f.Write([]byte("abc"))))
	if fi, err := f.Stat(); ok(t, "Stat", err) && fi.Size() != 3 {
		t.Errorf("size after Write = %d, want 3", fi.Size())
	}
	d := openFile(t, fsys, "d", os.O_RDONLY, 0)
	if fi, err := d.Stat(); ok(t, "Stat", err) && (fi.Name() != "d" || fi.Mode() != fs.ModeDir|0o755) {
		t.Errorf("Stat() of a directory = %s %v, want d drwxr-xr-x", fi.Name(), fi.Mode())
	}
	r := openFile(t, fsys, ".", os.O_RDONLY, 0)
	if fi, err := r.Stat(); ok(t, "Stat", err) && (fi.Name() != "." || !fi.IsDir()) {
		t.Errorf(`Stat() of "." = %s %v, want . and a directory`, fi.Name(), fi.Mode())
	}
	if r.Name() != "." {
		t.Errorf(`Name() of "." = %q`, r.Name())
	}
}
