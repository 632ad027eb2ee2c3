package packfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

// TestUnionWriteFile: the union's WriteFile, which writes a file of the
// upper layer in one step where it can, does what an open with
// O_WRONLY|O_CREATE|O_TRUNC, a write and a close do, over the lowers and
// through symlinks, and refuses what they refuse, before it changes
// anything.
func TestUnionWriteFile(t *testing.T) {
	u, upper := stack(t, map[string]string{
		"d/":       "",
		"d/lower":  "from the lower",
		"d/gone":   "removed",
		"only/":    "",
		"only/x":   "lower only",
		"sub/":     "",
		"sub/deep": "x",
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(u.Symlink("lower", "d/link"))
	must(u.Symlink("missing", "d/dangling"))
	must(u.Remove("d/gone"))

	for _, c := range []struct{ name, read, want string }{
		{"d/new", "d/new", "new in the upper"},
		{"d/lower", "d/lower", "copied up"},
		{"d/link", "d/lower", "through a symlink"},
		{"d/dangling", "d/missing", "a dangling symlink's target"},
		{"d/gone", "d/gone", "over a whiteout"},
		{"only/x", "only/x", "in a lower-only directory"},
		{"only/y", "only/y", "new in a lower-only directory"},
	} {
		must(u.WriteFile(c.name, []byte(c.want), 0o640))
		wantContent(t, u, c.read, c.want)
		wantContent(t, upper, c.read, c.want)
	}
	if fi, err := u.Stat("d/lower"); err != nil || fi.Mode() != 0o644 {
		t.Errorf("Stat(d/lower) = %v, %v: WriteFile over an existing file kept no mode", fi, err)
	}
	if fi, err := u.Stat("d/new"); err != nil || fi.Mode() != 0o640 {
		t.Errorf("Stat(d/new) = %v, %v; want mode 0640", fi, err)
	}
	if got := names(t, u, "d"); strings.Join(got, " ") != "dangling gone link lower missing new" {
		t.Errorf("ReadDir(d) = %v", got)
	}

	for _, c := range []struct {
		name string
		want error
	}{
		{"d", syscall.EISDIR},
		{"d/new/", fs.ErrInvalid},
		{"d/none/", fs.ErrInvalid},
		{"d/new/x", syscall.ENOTDIR},
		{"nodir/x", fs.ErrNotExist},
		{"", fs.ErrInvalid},
		{"d/./x", fs.ErrInvalid},
		{"d/../x", fs.ErrInvalid},
		{"d//x", fs.ErrInvalid},
		{"/d/x", fs.ErrInvalid},
		{"d/" + strings.Repeat("n", 256), syscall.ENAMETOOLONG},
	} {
		err := u.WriteFile(c.name, []byte("no"), 0o644)
		var pe *fs.PathError
		if !errors.Is(err, c.want) || !errors.As(err, &pe) || pe.Path != c.name {
			t.Errorf("WriteFile(%q) = %v, want a PathError naming it, wrapping %v", c.name, err, c.want)
		}
	}
	wantContent(t, u, "d/new", "new in the upper")
	wantMissing(t, u, "d/none")

	// Through a mount, the mounted layer's own WriteFile.
	m := mem.New()
	must(u.Mkdir("d/mnt", 0o755))
	must(u.Mount("d/mnt", m))
	must(u.WriteFile("d/mnt/f", []byte("mounted"), 0o644))
	wantContent(t, m, "f", "mounted")

	// A read-only union refuses.
	ro := packfs.New(nil, upper.Snapshot())
	if err := ro.WriteFile("d/new", []byte("no"), 0o644); err == nil {
		t.Error("WriteFile into a union with no upper layer succeeds")
	}
}

// TestUnionWriteFileReaders: readers beside a union's WriteFile see a
// file's old contents or its new, whole, also where the file and its
// directory are copied up first. (An open, a write and a close showed
// them an empty file in between.)
func TestUnionWriteFileReaders(t *testing.T) {
	for _, name := range []string{"d/w", "only/w"} {
		t.Run(name, func(t *testing.T) { writeFileReaders(t, name) })
	}
}

func writeFileReaders(t *testing.T, name string) {
	u, _ := stack(t, map[string]string{"d/": "", "d/w": "lower", "only/w": "lower"})
	a, b := strings.Repeat("a", 3000), strings.Repeat("b", 5000)
	done := make(chan struct{})
	errs := make(chan string, 1)
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			got, err := fs.ReadFile(u, name)
			if s := string(got); err != nil || (s != "lower" && s != a && s != b) {
				errs <- fmt.Sprintf("reader saw %d bytes, %v", len(got), err)
				return
			}
		}
	}()
	for i := range 2000 {
		if err := u.WriteFile(name, []byte([]string{a, b}[i%2]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if msg, ok := <-errs; ok {
		t.Fatal(msg)
	}
}
