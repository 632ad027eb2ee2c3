package mem

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/packfs/packfs/layer"
)

func ownerOf(t *testing.T, fsys fs.FS, name string) (uint32, uint32) {
	t.Helper()
	fi, err := fs.Lstat(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := layer.OwnerOf(fi)
	return uid, gid
}

// TestIssue16Lchown: owners are kept, Chown follows a symlink and Lchown
// does not, -1 leaves an id, chown drops setuid (and setgid with group
// execute) of a non-directory as Linux does, and a snapshot keeps the
// owner it saw.
func TestIssue16Lchown(t *testing.T) {
	f := New()
	if err := f.WriteFile("f", nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if u, g := ownerOf(t, f, "f"); u != layer.NoOwner || g != layer.NoOwner {
		t.Fatalf("new file owned by %d:%d, want none", u, g)
	}
	if err := f.Symlink("f", "l"); err != nil {
		t.Fatal(err)
	}
	if err := f.Chown("l", 5, 6); err != nil {
		t.Fatal(err)
	}
	if u, g := ownerOf(t, f, "f"); u != 5 || g != 6 {
		t.Errorf("Chown(l) gave f %d:%d, want 5:6", u, g)
	}
	if u, _ := ownerOf(t, f, "l"); u != layer.NoOwner {
		t.Errorf("Chown(l) changed the link: uid %d", u)
	}
	snap := f.Snapshot()
	if err := f.Lchown("l", 7, -1); err != nil {
		t.Fatal(err)
	}
	if u, g := ownerOf(t, f, "l"); u != 7 || g != layer.NoOwner {
		t.Errorf("Lchown(l, 7, -1) gave %d:%d", u, g)
	}
	if u, g := ownerOf(t, f, "f"); u != 5 || g != 6 {
		t.Errorf("Lchown(l) changed the target: %d:%d", u, g)
	}
	if err := f.Chown("f", -1, 9); err != nil {
		t.Fatal(err)
	}
	if u, g := ownerOf(t, f, "f"); u != 5 || g != 9 {
		t.Errorf("Chown(f, -1, 9) gave %d:%d, want 5:9", u, g)
	}
	if u, _ := ownerOf(t, snap, "l"); u != layer.NoOwner {
		t.Errorf("the snapshot sees the later Lchown: uid %d", u)
	}
	// A uid is its low 32 bits, as the kernel takes a uid_t.
	if err := f.Chown("f", -2, 1<<32+3); err != nil {
		t.Fatal(err)
	}
	if u, g := ownerOf(t, f, "f"); u != 1<<32-2 || g != 3 {
		t.Errorf("Chown(f, -2, 1<<32+3) gave %d:%d", u, g)
	}

	for _, c := range []struct {
		mode, want fs.FileMode
		dir        bool
	}{
		{0o755 | fs.ModeSetuid | fs.ModeSetgid, 0o755, false},
		{0o745 | fs.ModeSetuid | fs.ModeSetgid, 0o745 | fs.ModeSetgid, false},
		{0o755 | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky, 0o755 | fs.ModeSticky, false},
		{0o755 | fs.ModeSetgid, 0o755 | fs.ModeSetgid, true},
	} {
		name := "m"
		if c.dir {
			name = "d"
			if err := f.Mkdir(name, 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := f.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(name, c.mode); err != nil {
			t.Fatal(err)
		}
		if err := f.Chown(name, -1, -1); err != nil {
			t.Fatal(err)
		}
		fi, _ := f.Stat(name)
		if got := fi.Mode() &^ fs.ModeType; got != c.want {
			t.Errorf("Chown(-1, -1) of mode %v gave %v, want %v", c.mode, got, c.want)
		}
	}
}

// TestIssue16LchownProbe: decorated and looping paths fail as os does
// and change nothing; a removed open file cannot be reached by name.
func TestIssue16LchownProbe(t *testing.T) {
	f := New()
	if err := f.WriteFile("f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("loop", "loop"); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("missing", "dangling"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want error
	}{
		{"/f", fs.ErrInvalid}, {"f/", fs.ErrInvalid}, {"./f", fs.ErrInvalid}, {"", fs.ErrInvalid},
		{"f/x", errNotDir}, {"dangling", fs.ErrNotExist},
	} {
		err := f.Chown(c.name, 1, 1)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "chown" || !errors.Is(err, c.want) {
			t.Errorf("Chown(%q) = %v, want a *PathError wrapping %v", c.name, err, c.want)
		}
	}
	if err := f.Chown("loop", 1, 1); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Chown(loop) = %v, want ELOOP", err)
	}
	if err := f.Lchown("loop", 1, 1); err != nil {
		t.Errorf("Lchown(loop) = %v", err)
	}
	if err := f.Lchown("dangling", 2, 2); err != nil {
		t.Errorf("Lchown(dangling) = %v", err)
	}
	if u, _ := ownerOf(t, f, "f"); u != layer.NoOwner {
		t.Errorf("failed chowns changed f: uid %d", u)
	}
	h, err := f.OpenFile("f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := f.Remove("f"); err != nil {
		t.Fatal(err)
	}
	if err := f.Chown("f", 3, 3); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Chown of a removed name = %v", err)
	}
	fi, err := h.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Sys() != nil {
		t.Errorf("the removed file's handle shows an owner: %v", fi.Sys())
	}
}

// TestIssue17Lchtimes: Lchtimes sets a symlink's own time, even a
// dangling one's, and Chtimes its target's.
func TestIssue17Lchtimes(t *testing.T) {
	f := New()
	if err := f.WriteFile("f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("f", "l"); err != nil {
		t.Fatal(err)
	}
	if err := f.Symlink("missing", "dangling"); err != nil {
		t.Fatal(err)
	}
	t1 := time.Unix(1000, 5)
	ff, _ := f.Stat("f")
	if err := f.Lchtimes("l", t1, t1); err != nil {
		t.Fatal(err)
	}
	li, _ := f.Lstat("l")
	fi, _ := f.Stat("f")
	if !li.ModTime().Equal(t1) || !fi.ModTime().Equal(ff.ModTime()) {
		t.Errorf("Lchtimes(l): link %v, target %v (was %v)", li.ModTime(), fi.ModTime(), ff.ModTime())
	}
	if err := f.Lchtimes("dangling", time.Time{}, t1); err != nil {
		t.Errorf("Lchtimes(dangling) = %v", err)
	}
	if err := layer.Lchtimes(f, "missing", t1, t1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lchtimes(missing) = %v", err)
	}
}

// TestIssue16SetgidGroup: what is made in a setgid directory takes its
// group, as on Linux; elsewhere a new file has no owner.
func TestIssue16SetgidGroup(t *testing.T) {
	f := New()
	if err := f.Mkdir("g", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Chown("g", 3, 77); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod("g", 0o755|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustDo(f.WriteFile("g/f", nil, 0o644))
	mustDo(f.Mkdir("g/d", 0o755))
	mustDo(f.MkdirAll("g/a/b/c", 0o755))
	mustDo(f.Symlink("x", "g/l"))
	h, err := f.OpenFile("g/o", os.O_CREATE|os.O_RDWR, 0o600)
	mustDo(err)
	h.Close()
	for _, name := range []string{"g/f", "g/d", "g/a", "g/a/b/c", "g/l", "g/o"} {
		if u, g := ownerOf(t, f, name); u != layer.NoOwner || g != 77 {
			t.Errorf("%s: %d:%d, want group 77 and no uid", name, u, g)
		}
	}
	mustDo(f.WriteFile("plain", nil, 0o644))
	if _, g := ownerOf(t, f, "plain"); g != layer.NoOwner {
		t.Errorf("a file outside the setgid directory has group %d", g)
	}
}

// TestIssue16OwnersConcurrent: readers stat files while writers give them
// owners never seen before, which grows the table of owners beside them.
func TestIssue16OwnersConcurrent(t *testing.T) {
	f := New()
	for i := range 4 {
		if err := f.WriteFile(string(rune('a'+i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := f.Snapshot()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := string(rune('a' + i))
			for n := range 500 {
				if err := f.Lchown(name, 100000+i*1000+n, n); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			for i := range 4 {
				if u, g := ownerOf(t, f, string(rune('a'+i))); u != uint32(100000+i*1000+499) || g != 499 {
					t.Errorf("%c: %d:%d", 'a'+i, u, g)
				}
				if u, _ := ownerOf(t, snap, string(rune('a'+i))); u != layer.NoOwner {
					t.Errorf("the snapshot sees uid %d", u)
				}
			}
			return
		default:
			for i := range 4 {
				fi, err := f.Lstat(string(rune('a' + i)))
				if err != nil {
					t.Fatal(err)
				}
				layer.OwnerOf(fi)
			}
		}
	}
}

// TestIssue16StateSize: keeping owners leaves a file's state in its
// 32-byte allocation class, and a directory's in the 64-byte one; every
// change of a file allocates one.
func TestIssue16StateSize(t *testing.T) {
	if n := unsafe.Sizeof(state{}); n > 32 {
		t.Errorf("a state takes %d bytes, over 32", n)
	}
	if n := unsafe.Sizeof(dirState{}); n > 64 {
		t.Errorf("a directory's state takes %d bytes, over 64", n)
	}
}
