package conformance

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/packfs/packfs/internal/testsize"
)

// RunReadOnly runs the read-only tests. For each tree of [Trees] it calls
// build to get an fs.FS holding that tree, then
//
//   - runs fstest.TestFS on it (hiding dangling symlinks and loops, which
//     TestFS cannot open, and files over 128 KiB, which it reads a few
//     bytes at a time);
//   - compares every entry's type, permission bits, size, modification time
//     (to the second; not for symlinks), content and symlink target with the
//     tree;
//   - checks the read-side errors: fs.ErrNotExist for a missing name;
//     syscall.ENOTDIR (as os gives) or fs.ErrNotExist for a path through a
//     file; fs.ErrInvalid for invalid paths such as "/a", "a/../b", "a/" and
//     ""; sorted ReadDir; fs.ErrClosed after Close; io.EOF from ReadAt past
//     the end; and Seek.
//
// Of opts, only [WithQuickTrees] applies.
func RunReadOnly(t *testing.T, build func(t *testing.T, tree Tree) fs.FS, opts ...Option) {
	c := newConfig(opts)
	runReadOnly(t, treesOf(c.quickTrees || testing.Testing() && testsize.Short(), c.wide), build)
}

func runReadOnly(t *testing.T, trees []Tree, build func(t *testing.T, tree Tree) fs.FS) {
	for _, tree := range trees {
		t.Run(tree.Name, func(t *testing.T) {
			fsys := build(t, tree)
			checkTree(t, fsys, tree)
		})
	}
}

// checkTree runs the read-only checks of fsys against tree.
func checkTree(t *testing.T, fsys fs.FS, tree Tree) {
	t.Helper()
	var expected, hidden []string
	broken := tree.broken()
	for _, e := range tree.Entries {
		if broken[e.Path] || len(e.Data) > testFSMaxSize {
			hidden = append(hidden, e.Path)
			continue
		}
		expected = append(expected, e.Path)
	}
	view := fsys
	if len(hidden) > 0 {
		view = hideFS(fsys, hidden)
	}
	if err := fstest.TestFS(view, expected...); err != nil {
		t.Errorf("fstest.TestFS: %v", err)
	}
	compareTree(t, fsys, tree)
	checkReadErrors(t, fsys, tree)
	for _, e := range tree.Entries {
		if len(e.Data) > testFSMaxSize {
			checkReadFile(t, fsys, e)
		}
	}
}

// testFSMaxSize is the size of the largest file fstest.TestFS sees: it
// reads files a few bytes at a time (iotest.TestReader), which takes
// minutes for 64 MiB. Larger files are hidden from it and checked by the
// suite's own reads.
const testFSMaxSize = 128 << 10

// entryInfo is what the suite compares of one entry.
type entryInfo struct {
	Path    string
	Type    string
	Perm    fs.FileMode
	Size    int64  // files and symlinks; 0 for directories
	ModTime string // files and directories, to the second, UTC
	Content string // files: length and SHA-256
	Target  string // symlinks
}

func typeName(m fs.FileMode) string {
	switch m.Type() {
	case 0:
		return "file"
	case fs.ModeDir:
		return "dir"
	case fs.ModeSymlink:
		return "symlink"
	}
	return m.Type().String()
}

func contentSum(data []byte) string {
	return fmt.Sprintf("%d bytes, sha256 %x", len(data), sha256.Sum256(data))
}

func formatTime(tm time.Time) string {
	return tm.UTC().Truncate(time.Second).Format(time.RFC3339)
}

func expectedInfos(tree Tree) []entryInfo {
	infos := make([]entryInfo, 0, len(tree.Entries))
	for _, e := range tree.Entries {
		ei := entryInfo{Path: e.Path, Type: typeName(e.Mode), Perm: e.Mode.Perm()}
		switch e.Mode.Type() {
		case 0:
			ei.Size = int64(len(e.Data))
			ei.Content = contentSum(e.Data)
			ei.ModTime = formatTime(e.ModTime)
		case fs.ModeDir:
			ei.ModTime = formatTime(e.ModTime)
		case fs.ModeSymlink:
			ei.Size = int64(len(e.Target))
			ei.Target = e.Target
		}
		infos = append(infos, ei)
	}
	return infos
}

// readInfos walks fsys without following symlinks.
func readInfos(fsys fs.FS) ([]entryInfo, error) {
	var infos []entryInfo
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		fi, err := fs.Lstat(fsys, p)
		if err != nil {
			return err
		}
		if fi.Mode().Type() != d.Type() {
			return fmt.Errorf("%s: ReadDir gives type %v, Lstat gives %v", p, d.Type(), fi.Mode().Type())
		}
		ei := entryInfo{Path: p, Type: typeName(fi.Mode()), Perm: fi.Mode().Perm()}
		switch fi.Mode().Type() {
		case 0:
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			if int64(len(data)) != fi.Size() {
				return fmt.Errorf("%s: ReadFile returns %d bytes, Lstat gives size %d", p, len(data), fi.Size())
			}
			ei.Size, ei.Content, ei.ModTime = fi.Size(), contentSum(data), formatTime(fi.ModTime())
		case fs.ModeDir:
			ei.ModTime = formatTime(fi.ModTime())
		case fs.ModeSymlink:
			target, err := fs.ReadLink(fsys, p)
			if err != nil {
				return err
			}
			ei.Size, ei.Target = fi.Size(), target
		default:
			ei.Size = fi.Size()
		}
		infos = append(infos, ei)
		return nil
	})
	return infos, err
}

// compareTree compares every entry of fsys with tree.
func compareTree(t *testing.T, fsys fs.FS, tree Tree) {
	t.Helper()
	got, err := readInfos(fsys)
	if err != nil {
		t.Errorf("reading the tree back: %v", err)
	}
	if diff := cmp.Diff(expectedInfos(tree), got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("tree %s differs (-want +got):\n%s", tree.Name, diff)
	}
}

// invalidPaths are not fs.ValidPath: every operation refuses them with
// fs.ErrInvalid.
var invalidPaths = []string{"", "/", "/a", "a/", "a/../b", "./a", "a/.", "a//b", "..", "../a", "a/.."}

// checkReadErrors checks the errors and edge cases of reading fsys.
func checkReadErrors(t *testing.T, fsys fs.FS, tree Tree) {
	t.Helper()
	for _, name := range []string{"no-such-file", "no-such-dir/file"} {
		_, err := fsys.Open(name)
		wantClass(t, fmt.Sprintf("Open(%q)", name), err, classNotExist)
		_, err = fs.Stat(fsys, name)
		wantClass(t, fmt.Sprintf("fs.Stat(%q)", name), err, classNotExist)
		_, err = fs.ReadFile(fsys, name)
		wantClass(t, fmt.Sprintf("fs.ReadFile(%q)", name), err, classNotExist)
		_, err = fs.ReadDir(fsys, name)
		wantClass(t, fmt.Sprintf("fs.ReadDir(%q)", name), err, classNotExist)
	}
	var file, dir *Entry
	for i, e := range tree.Entries {
		switch {
		case file == nil && e.Mode.IsRegular() && len(e.Data) >= 3:
			file = &tree.Entries[i]
		case dir == nil && e.Mode.IsDir():
			dir = &tree.Entries[i]
		}
	}
	invalid := slices.Clone(invalidPaths)
	if file != nil {
		invalid = append(invalid, file.Path+"/", "./"+file.Path)
		name := file.Path + "/x"
		_, err := fsys.Open(name)
		if c := errClass(err); c != classNotDir && c != classNotExist {
			t.Errorf("Open(%q) through a file: got %v (class %s), want ENOTDIR or ErrNotExist", name, err, c)
		}
		checkReadFile(t, fsys, *file)
	}
	if dir != nil {
		invalid = append(invalid, dir.Path+"/", dir.Path+"/.")
		checkReadDirSorted(t, fsys, dir.Path)
	}
	checkReadDirSorted(t, fsys, ".")
	for _, name := range invalid {
		_, err := fsys.Open(name)
		wantClass(t, fmt.Sprintf("Open(%q)", name), err, classInvalid)
		_, err = fs.Stat(fsys, name)
		wantClass(t, fmt.Sprintf("fs.Stat(%q)", name), err, classInvalid)
		_, err = fs.ReadFile(fsys, name)
		wantClass(t, fmt.Sprintf("fs.ReadFile(%q)", name), err, classInvalid)
		_, err = fs.ReadDir(fsys, name)
		wantClass(t, fmt.Sprintf("fs.ReadDir(%q)", name), err, classInvalid)
		if _, ok := fsys.(fs.ReadLinkFS); ok {
			_, err = fs.Lstat(fsys, name)
			wantClass(t, fmt.Sprintf("fs.Lstat(%q)", name), err, classInvalid)
			_, err = fs.ReadLink(fsys, name)
			wantClass(t, fmt.Sprintf("fs.ReadLink(%q)", name), err, classInvalid)
		}
	}
}

func checkReadDirSorted(t *testing.T, fsys fs.FS, dir string) {
	t.Helper()
	list, err := fs.ReadDir(fsys, dir)
	if !ok(t, fmt.Sprintf("fs.ReadDir(%q)", dir), err) {
		return
	}
	if !slices.IsSortedFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }) {
		t.Errorf("fs.ReadDir(%q) is not sorted by name", dir)
	}
}

// checkReadFile checks reading, ReadAt, Seek and Close of file e, which
// has at least 3 bytes.
func checkReadFile(t *testing.T, fsys fs.FS, e Entry) {
	t.Helper()
	f, err := fsys.Open(e.Path)
	if !ok(t, "Open", err) {
		return
	}
	defer f.Close()
	size := int64(len(e.Data))
	data, err := io.ReadAll(f)
	if ok(t, "ReadAll", err) && !bytes.Equal(data, e.Data) {
		t.Errorf("%s: read %d bytes, want the %d of the tree", e.Path, len(data), len(e.Data))
	}
	n, err := f.Read(make([]byte, 1))
	if n != 0 || err != io.EOF {
		t.Errorf("%s: Read at end = %d, %v; want 0, io.EOF", e.Path, n, err)
	}
	if ra, ok := f.(io.ReaderAt); ok {
		buf := make([]byte, 4)
		n, err := ra.ReadAt(buf, size-2)
		if n != 2 || err != io.EOF || !bytes.Equal(buf[:2], e.Data[size-2:]) {
			t.Errorf("%s: short ReadAt(4 bytes, size-2) = %d, %v; want 2, io.EOF", e.Path, n, err)
		}
		n, err = ra.ReadAt(buf, size+10)
		if n != 0 || err != io.EOF {
			t.Errorf("%s: ReadAt past the end = %d, %v; want 0, io.EOF", e.Path, n, err)
		}
		n, err = ra.ReadAt(buf[:1], 1)
		if n != 1 || err != nil || buf[0] != e.Data[1] {
			t.Errorf("%s: ReadAt(1 byte, 1) = %d, %v; want 1, nil and the second byte", e.Path, n, err)
		}
	}
	if s, ok := f.(io.Seeker); ok {
		checkSeek(t, e.Path, f, s, e.Data)
	}
	if err := f.Close(); err != nil {
		t.Errorf("%s: Close: %v", e.Path, err)
	}
	_, err = f.Read(make([]byte, 1))
	if !errors.Is(err, fs.ErrClosed) {
		t.Errorf("%s: Read after Close: %v, want fs.ErrClosed", e.Path, err)
	}
}

// checkSeek checks Seek and Read of r, which holds data (at least 3 bytes).
func checkSeek(t *testing.T, name string, r io.Reader, s io.Seeker, data []byte) {
	t.Helper()
	size := int64(len(data))
	seek := func(off int64, whence int, want int64) bool {
		t.Helper()
		got, err := s.Seek(off, whence)
		if err != nil || got != want {
			t.Errorf("%s: Seek(%d, %d) = %d, %v; want %d, nil", name, off, whence, got, err, want)
			return false
		}
		return true
	}
	readByte := func(want byte) {
		t.Helper()
		b := make([]byte, 1)
		n, err := r.Read(b)
		if n != 1 || err != nil || b[0] != want {
			t.Errorf("%s: Read after Seek = %d, %v, %q; want 1, nil, %q", name, n, err, b[:n], want)
		}
	}
	if seek(0, io.SeekEnd, size) {
		if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("%s: Read at end = %d, %v; want 0, io.EOF", name, n, err)
		}
	}
	if seek(1, io.SeekStart, 1) {
		readByte(data[1])
	}
	if seek(-2, io.SeekCurrent, 0) {
		readByte(data[0])
	}
	if seek(-1, io.SeekEnd, size-1) {
		readByte(data[size-1])
	}
	if seek(size+100, io.SeekStart, size+100) {
		if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("%s: Read past end = %d, %v; want 0, io.EOF", name, n, err)
		}
	}
	if _, err := s.Seek(-1, io.SeekStart); err == nil {
		t.Errorf("%s: Seek(-1, io.SeekStart) succeeded", name)
	}
	if _, err := s.Seek(0, 42); err == nil {
		t.Errorf("%s: Seek(0, 42) succeeded", name)
	}
	seek(0, io.SeekCurrent, size+100)
}

// hideFS presents fsys without the entries at hidden: fstest.TestFS opens
// every entry, which a dangling symlink or a loop refuses.
func hideFS(fsys fs.FS, hidden []string) fs.FS {
	h := &hiddenFS{fsys: fsys, hidden: map[string]bool{}}
	for _, p := range hidden {
		h.hidden[p] = true
	}
	return h
}

type hiddenFS struct {
	fsys   fs.FS
	hidden map[string]bool
}

func (h *hiddenFS) check(op, name string) error {
	if h.hidden[name] {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return nil
}

func (h *hiddenFS) Open(name string) (fs.File, error) {
	if err := h.check("open", name); err != nil {
		return nil, err
	}
	f, err := h.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if d, ok := f.(fs.ReadDirFile); ok {
		return &hiddenDir{ReadDirFile: d, h: h, dir: name}, nil
	}
	return f, nil
}

func (h *hiddenFS) filter(dir string, list []fs.DirEntry) []fs.DirEntry {
	return slices.DeleteFunc(list, func(e fs.DirEntry) bool { return h.hidden[path.Join(dir, e.Name())] })
}

func (h *hiddenFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := h.check("open", name); err != nil {
		return nil, err
	}
	list, err := fs.ReadDir(h.fsys, name)
	return h.filter(name, list), err
}

func (h *hiddenFS) Stat(name string) (fs.FileInfo, error) {
	if err := h.check("stat", name); err != nil {
		return nil, err
	}
	return fs.Stat(h.fsys, name)
}

func (h *hiddenFS) ReadFile(name string) ([]byte, error) {
	if err := h.check("open", name); err != nil {
		return nil, err
	}
	return fs.ReadFile(h.fsys, name)
}

func (h *hiddenFS) Lstat(name string) (fs.FileInfo, error) {
	if err := h.check("lstat", name); err != nil {
		return nil, err
	}
	return fs.Lstat(h.fsys, name)
}

func (h *hiddenFS) ReadLink(name string) (string, error) {
	if err := h.check("readlink", name); err != nil {
		return "", err
	}
	return fs.ReadLink(h.fsys, name)
}

type hiddenDir struct {
	fs.ReadDirFile
	h   *hiddenFS
	dir string
}

func (d *hiddenDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		list, err := d.ReadDirFile.ReadDir(n)
		return d.h.filter(d.dir, list), err
	}
	for {
		list, err := d.ReadDirFile.ReadDir(n)
		list = d.h.filter(d.dir, list)
		if len(list) > 0 || err != nil {
			return list, err
		}
	}
}
