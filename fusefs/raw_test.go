package fusefs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/fusefs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// checkNumbers walks the mounted tree at dir and checks that every entry
// keeps one inode number, the one its directory's listing gives, that no
// two entries share one unless want allows it, and that each directory
// has 2 links and one per subdirectory.
func checkNumbers(t *testing.T, dir string, shared map[string]bool) map[string]uint64 {
	t.Helper()
	inos := map[string]uint64{}
	owner := map[uint64]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		i, n := ino(t, p)
		if again, _ := ino(t, p); again != i {
			t.Errorf("%s: inode %d, then %d", rel, i, again)
		}
		if other, dup := owner[i]; dup && !(shared[rel] && shared[other]) {
			t.Errorf("%s and %s share inode %d", rel, other, i)
		}
		owner[i] = rel
		inos[rel] = i
		if !d.IsDir() {
			return nil
		}
		listed := direntInos(t, p)
		subdirs := uint64(0)
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range entries {
			ci, _ := ino(t, filepath.Join(p, e.Name()))
			if listed[e.Name()] != ci {
				t.Errorf("%s/%s: getdents gives inode %d, stat %d", rel, e.Name(), listed[e.Name()], ci)
			}
			if e.IsDir() {
				subdirs++
			}
		}
		if listed["."] != i {
			t.Errorf("%s: \".\" has inode %d, want %d", rel, listed["."], i)
		}
		if n != 2+subdirs {
			t.Errorf("%s: %d links, want %d", rel, n, 2+subdirs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return inos
}

// TestIssue17PackInodes: a mounted pack shows the pack's own inode
// numbers and link counts, hard links included, and the numbers a
// listing gives are those stat gives, before and after the kernel
// forgets the names.
func TestIssue17PackInodes(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"d", "d/x", "d/y", "e"} {
		if err := os.Mkdir(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"d/f", "d/g", "top"} {
		if err := os.WriteFile(filepath.Join(src, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(src, "d/f"), filepath.Join(src, "e/hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../top", filepath.Join(src, "e/l")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	dir, srv := mountT(t, r, nil)
	shared := map[string]bool{"d/f": true, "e/hard": true}
	inos := checkNumbers(t, dir, shared)
	for rel, i := range inos {
		name := filepath.ToSlash(rel)
		if rel == "." {
			name = "."
		}
		fi, err := r.Lstat(name)
		if err != nil {
			t.Fatal(err)
		}
		want, nlink := fi.Sys().(*packreader.Sys).Inode()
		if i != want {
			t.Errorf("%s: inode %d, the pack's is %d", rel, i, want)
		}
		if _, n := ino(t, filepath.Join(dir, rel)); n != uint64(nlink) {
			t.Errorf("%s: %d links, the pack's %d", rel, n, nlink)
		}
	}
	if inos["d/f"] != inos["e/hard"] {
		t.Errorf("hard links d/f and e/hard: inodes %d and %d", inos["d/f"], inos["e/hard"])
	}
	if b, err := os.ReadFile(filepath.Join(dir, "e/hard")); err != nil || string(b) != "d/f" {
		t.Errorf("read through the hard link: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "e/l")); err != nil || string(b) != "top" {
		t.Errorf("read through the symlink: %q, %v", b, err)
	}
	// The kernel forgets the names; the numbers stay.
	forgetAll(t, srv, dir)
	if again := checkNumbers(t, dir, shared); len(again) != len(inos) {
		t.Errorf("%d entries, then %d", len(inos), len(again))
	} else {
		for rel, i := range inos {
			if again[rel] != i {
				t.Errorf("%s: inode %d, after the kernel forgot it %d", rel, i, again[rel])
			}
		}
	}
}

// forgetAll makes the kernel drop the names at the top of the mount at
// dir, and with them what hangs below, so that it sends FORGET for them.
func forgetAll(t *testing.T, srv *fusefs.Server, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := srv.Invalidate(e.Name()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIssue17ImmutableUnion: an immutable tree without inode numbers (a
// union of packs) is served with numbers handed out per name: distinct,
// the same in listings and stat, with the link counts of its directories,
// a whiteout hiding its name, and every change EROFS.
func TestIssue17ImmutableUnion(t *testing.T) {
	lower := mem.New()
	for _, d := range []string{"a", "a/b", "c"} {
		if err := lower.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/f", "a/b/g", "gone"} {
		if err := lower.WriteFile(f, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	upper := mem.New()
	u := packfs.New(upper, packOf(t, lower))
	if err := u.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	if err := u.Mkdir("a/new", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := layer.WriteFile(u, "a/new/h", []byte("hh"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := packfs.New(nil, packOf(t, upper), packOf(t, lower))
	dir, srv := mountT(t, fsys, &fusefs.Options{Immutable: true})
	inos := checkNumbers(t, dir, nil)
	if _, ok := inos["gone"]; ok {
		t.Error("the whiteout did not hide gone")
	}
	if _, n := ino(t, filepath.Join(dir, "a")); n != 4 {
		t.Errorf("a has %d links, want 4", n)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a/new/h")); err != nil || string(b) != "hh" {
		t.Errorf("a/new/h: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a/f"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write: %v, want EROFS", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a/missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat of a missing name: %v", err)
	}
	forgetAll(t, srv, dir)
	again := checkNumbers(t, dir, nil)
	if len(again) != len(inos) {
		t.Errorf("%d entries, then %d", len(inos), len(again))
	}
}

// TestIssue17ImmutableReaders: many readers at once through one mount of
// a pack, each reading every file whole and at odd offsets, get the
// pack's bytes, while the kernel forgets names under them.
func TestIssue17ImmutableReaders(t *testing.T) {
	m := mem.New()
	want := map[string][]byte{}
	for i := range 40 {
		name := filepath.Join("d"+string(rune('a'+i%4)), "f"+strings.Repeat("x", i))
		if err := m.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte{byte(i)}, i*9973)
		if err := m.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = data
	}
	dir, srv := mountT(t, packOf(t, m), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 5 {
				if w == 0 && round > 0 {
					for _, d := range []string{"da", "db", "dc", "dd"} {
						if err := srv.Invalidate(d); err != nil {
							errs <- err
							return
						}
					}
				}
				for name, data := range want {
					got, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil || !bytes.Equal(got, data) {
						errs <- &fs.PathError{Op: "read", Path: name, Err: err}
						return
					}
					f, err := os.Open(filepath.Join(dir, name))
					if err != nil {
						errs <- err
						return
					}
					off := int64(len(data) / 3)
					part := make([]byte, 5000)
					k, _ := f.ReadAt(part, off)
					f.Close()
					if !bytes.Equal(part[:k], data[off:min(int(off)+5000, len(data))]) {
						errs <- &fs.PathError{Op: "readat", Path: name, Err: errors.New("wrong bytes")}
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestIssue17ReadaheadBytes: files pushed into the kernel's page cache
// ahead of their reads (the readahead across files of an immutable
// mount) read back exactly, whatever their size (empty, page sizes and
// their neighbours, over the push limit), in listing order as a walk
// reads them, in reverse, and from several readers at once, with names
// forgotten and listed again meanwhile.
func TestIssue17ReadaheadBytes(t *testing.T) {
	m := mem.New()
	sizes := []int{0, 1, 4095, 4096, 4097, 65536, 100000, 1 << 20, 1<<20 + 1, 2 << 20}
	want := map[string][]byte{}
	for _, d := range []string{"a", "a/sub", "a/sub/deeper", "b"} {
		if err := m.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 80 {
		dir := []string{"a", "a/sub", "a/sub/deeper", "b"}[i%4]
		name := fmt.Sprintf("%s/f%03d", dir, i)
		data := make([]byte, sizes[i%len(sizes)])
		for j := range data {
			data[j] = byte(i + j*7)
		}
		if err := m.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = data
	}
	if err := m.Symlink("f000", "a/link"); err != nil {
		t.Fatal(err)
	}
	dir, srv := mountT(t, packOf(t, m), nil)
	walk := func(reverse bool) error {
		var names []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				names = append(names, p)
			}
			return err
		})
		if err != nil {
			return err
		}
		if len(names) != len(want) {
			return fmt.Errorf("walk saw %d files, want %d", len(names), len(want))
		}
		for i := range names {
			p := names[i]
			if reverse {
				p = names[len(names)-1-i]
			}
			rel, _ := filepath.Rel(dir, p)
			got, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, want[filepath.ToSlash(rel)]) {
				return &fs.PathError{Op: "read", Path: rel, Err: errors.New("wrong bytes")}
			}
		}
		return nil
	}
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- walk(w%2 == 1)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
		forgetAll(t, srv, dir)
	}
}

// TestIssue17ImmutableProbes: hostile names and paths through a mounted
// pack give what the kernel gives on any file system: the longest name
// reads, a longer one is ENAMETOOLONG, a path through a file ENOTDIR, a
// symlink loop ELOOP, a dangling link its target and ENOENT, a read of a
// directory EISDIR, and every open for writing EROFS.
func TestIssue17ImmutableProbes(t *testing.T) {
	m := mem.New()
	long := strings.Repeat("n", 255)
	odd := "new\nline é \x01"
	for _, f := range []string{long, odd, "file"} {
		if err := m.WriteFile(f, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	for target, link := range map[string]string{"loop2": "loop1", "loop1": "loop2", "missing": "dangling"} {
		if err := m.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	pack := packOf(t, m)
	t.Run("pack", func(t *testing.T) {
		dir, _ := mountT(t, pack, nil)
		probeImmutable(t, dir, long, odd)
	})
	t.Run("union", func(t *testing.T) {
		dir, _ := mountT(t, packfs.New(nil, pack), &fusefs.Options{Immutable: true})
		probeImmutable(t, dir, long, odd)
	})
}

func probeImmutable(t *testing.T, dir, long, odd string) {
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, f := range []string{long, odd} {
		if b, err := os.ReadFile(at(f)); err != nil || string(b) != f {
			t.Errorf("%q: %q, %v", f, b, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"d", "dangling", "file", "loop1", "loop2", odd, long}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("listing %q, want %q", names, want)
	}
	checks := []struct {
		what string
		err  error
		want error
	}{
		{"a 256-byte name", statErr(at(long + "n")), syscall.ENAMETOOLONG},
		{"a path through a file", statErr(at("file/x")), syscall.ENOTDIR},
		{"a symlink loop", statErr(at("loop1")), syscall.ELOOP},
		{"a dangling link", statErr(at("dangling")), syscall.ENOENT},
		{"a missing name", statErr(at("d/none")), syscall.ENOENT},
		{"a read of a directory", readErr(at("d")), syscall.EISDIR},
		{"an open for writing", openErr(at("file"), os.O_WRONLY), syscall.EROFS},
		{"an open with O_TRUNC", openErr(at("file"), os.O_RDONLY|os.O_TRUNC), syscall.EROFS},
		{"a create", openErr(at("new"), os.O_RDWR|os.O_CREATE), syscall.EROFS},
	}
	for _, c := range checks {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.err, c.want)
		}
	}
	if target, err := os.Readlink(at("dangling")); err != nil || target != "missing" {
		t.Errorf("readlink of a dangling link: %q, %v", target, err)
	}
	if b, err := os.ReadFile(at("file")); err != nil || string(b) != "file" {
		t.Errorf("file after the refused writes: %q, %v", b, err)
	}
}

func statErr(p string) error { _, err := os.Stat(p); return err }

func readErr(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Read(make([]byte, 10))
	return err
}

func openErr(p string, flag int) error {
	f, err := os.OpenFile(p, flag, 0o644)
	if err == nil {
		f.Close()
	}
	return err
}
