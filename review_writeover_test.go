package packfs_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// reviewLowerUnion is a union of a mem upper with a settable clock over
// a pack of reviewHostTree.
func reviewLowerUnion(t *testing.T) (*packfs.FS, *mem.FS, *time.Time) {
	t.Helper()
	pack := reviewPack(t, reviewHostTree(t))
	now := reviewT0.Add(1000 * time.Hour)
	upper := mem.NewWithClock(func() time.Time { return now })
	return packfs.New(upper, pack), upper, &now
}

// TestReviewWriteFileOverLowerWatch: a WriteFile over a lower file whose
// directory the upper layer does not hold yet must tell the union's
// watchers of the file. Before 7931ca3 they got OpCreate of the copied-up
// directory and OpWrite of the file; writeOver's one CopyIn reports only
// the top of its chain (the directory), so nothing names the file whose
// content changed.
func TestReviewWriteFileOverLowerWatch(t *testing.T) {
	for _, name := range []string{"d/a", "deep/x/y/f"} {
		t.Run(name, func(t *testing.T) {
			u, _, _ := reviewLowerUnion(t)
			w, err := u.Watch(nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := u.WriteFile(name, []byte("new content"), 0o644); err != nil {
				t.Fatal(err)
			}
			var got []string
			named := false
			for _, c := range w.Changes() {
				got = append(got, fmt.Sprintf("%v %s", c.Op, c.Name))
				if c.Name == name && c.Op&(layer.OpWrite|layer.OpCreate) != 0 {
					named = true
				}
			}
			if !named {
				t.Errorf("WriteFile(%s) over a lower file reported %q: no change names %s", name, got, name)
			}
		})
	}
}

// TestReviewWriteFileOverLowerLikeLinux compares WriteFile over lower
// files with os.WriteFile on the same tree on the host.
func TestReviewWriteFileOverLowerLikeLinux(t *testing.T) {
	u, _, now := reviewLowerUnion(t)
	host := reviewHostTree(t)
	hp := func(p string) string { return filepath.Join(host, p) }

	// Handles open on both before the write.
	hr, err := os.Open(hp("d/a"))
	if err != nil {
		t.Fatal(err)
	}
	defer hr.Close()
	ha, err := os.OpenFile(hp("d/a"), os.O_RDONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ha.Close()
	ur, err := u.Open("d/a")
	if err != nil {
		t.Fatal(err)
	}
	defer ur.Close()
	ua, err := u.OpenFile("d/a", os.O_RDONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ua.Close()
	buf := make([]byte, 3)
	io.ReadFull(hr, buf)
	io.ReadFull(ur, buf)
	snap, err := u.Snapshot()
	if err != nil {
		t.Fatal(err)
	}

	stat := func(fsys fs.FS, p string) fs.FileInfo {
		t.Helper()
		fi, err := fs.Stat(fsys, p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	hfs := os.DirFS(host)
	type before struct {
		mode  fs.FileMode
		mtime time.Time
		owner string
	}
	attrs := func(fsys fs.FS, p string) before {
		fi := stat(fsys, p)
		uid, gid, _ := layer.OwnerOf(fi)
		return before{fi.Mode(), fi.ModTime(), fmt.Sprint(uid, gid)}
	}
	dirs := []string{"d", "deep", "deep/x", "deep/x/y"}
	hBefore, uBefore := map[string]before{}, map[string]before{}
	for _, d := range dirs {
		hBefore[d], uBefore[d] = attrs(hfs, d), attrs(u, d)
	}

	*now = now.Add(time.Hour)
	writes := []struct {
		name string
		perm fs.FileMode
	}{{"d/a", 0o777}, {"deep/x/y/f", 0}, {"d/sym", 0o600}, {"d/suid", 0o644}}
	for _, w := range writes {
		data := []byte("new content of " + w.name)
		hbefore, ubefore := attrs(hfs, w.name), attrs(u, w.name)
		if err := os.WriteFile(hp(w.name), data, w.perm); err != nil {
			t.Fatal(err)
		}
		if err := u.WriteFile(w.name, data, w.perm); err != nil {
			t.Fatal(err)
		}
		ha, ua := attrs(hfs, w.name), attrs(u, w.name)
		if ha.mode != hbefore.mode || ua.mode != ubefore.mode || ha.mode != ua.mode {
			t.Errorf("%s: mode host %v -> %v, union %v -> %v", w.name, hbefore.mode, ha.mode, ubefore.mode, ua.mode)
		}
		if ha.owner != ua.owner || ua.owner != ubefore.owner {
			t.Errorf("%s: owner host %s, union %s -> %s", w.name, ha.owner, ubefore.owner, ua.owner)
		}
		if !ua.mtime.Equal(*now) {
			t.Errorf("%s: union mtime %v, want the clock's %v", w.name, ua.mtime, *now)
		}
		if b, err := fs.ReadFile(u, w.name); err != nil || !bytes.Equal(b, data) {
			t.Errorf("%s: union reads %q, %v", w.name, b, err)
		}
	}
	// Writing existing files changes no directory.
	for _, d := range dirs {
		if got := attrs(hfs, d); got != hBefore[d] {
			t.Errorf("host %s changed: %v -> %v", d, hBefore[d], got)
		}
		if got := attrs(u, d); got != uBefore[d] {
			t.Errorf("union %s changed: %v -> %v", d, uBefore[d], got)
		}
	}
	// Creating a name changes its directory's mtime.
	*now = now.Add(time.Hour)
	if err := u.WriteFile("deep/x/new", []byte("n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := attrs(u, "deep/x"); !got.mtime.Equal(*now) {
		t.Errorf("union deep/x mtime after a create %v, want %v", got.mtime, *now)
	}
	if got := attrs(u, "deep/x/new"); got.mode != 0o600 {
		t.Errorf("union deep/x/new mode %v", got.mode)
	}

	// Handles opened before see the new content, at their offsets.
	hrest, _ := io.ReadAll(hr)
	urest, _ := io.ReadAll(ur)
	if string(hrest) != string(urest) {
		t.Errorf("read handle after the write: host %q, union %q", hrest, urest)
	}
	hall, _ := io.ReadAll(ha)
	uall, _ := io.ReadAll(ua)
	if string(hall) != string(uall) {
		t.Errorf("O_APPEND read handle after the write: host %q, union %q", hall, uall)
	}
	hfi, _ := hr.Stat()
	ufi, _ := ur.Stat()
	if hfi.Size() != ufi.Size() || hfi.Mode() != ufi.Mode() {
		t.Errorf("handle Stat: host %v %d, union %v %d", hfi.Mode(), hfi.Size(), ufi.Mode(), ufi.Size())
	}
	// The snapshot taken before is the state before.
	if b, err := fs.ReadFile(snap, "d/a"); err != nil || string(b) != "lower-a" {
		t.Errorf("snapshot before: %q, %v", b, err)
	}
	// The caller's buffer is the caller's once WriteFile returns.
	data := []byte("buffer")
	if err := u.WriteFile("d/b", data, 0o644); err != nil {
		t.Fatal(err)
	}
	data[0] = 'X'
	if b, _ := fs.ReadFile(u, "d/b"); string(b) != "buffer" {
		t.Errorf("d/b after the caller changed its buffer: %q", b)
	}
}

// TestReviewWriteFileFailsChangesNothing: WriteFile's refusals, and an
// upper layer whose one step fails, leave the tree as it was.
func TestReviewWriteFileFailsChangesNothing(t *testing.T) {
	u, upper, _ := reviewLowerUnion(t)
	if err := u.Remove("wo/g"); err != nil {
		t.Fatal(err)
	}
	tree := func() string { return strings.Join(reviewTree(t, u, time.Time{}), "\n") }
	upperTree := func() string { return strings.Join(reviewTree(t, upper, time.Time{}), "\n") }
	before, ubefore := tree(), upperTree()
	for _, c := range []struct {
		name string
		want error
	}{
		{"d", syscall.EISDIR},
		{"deep/x", syscall.EISDIR},
		{"d/a/x", syscall.ENOTDIR},
		{"deep/x/y/f/", fs.ErrInvalid},
		{"deep/x/y/f/g", syscall.ENOTDIR},
		{"deep/x/" + strings.Repeat("n", 256), syscall.ENAMETOOLONG},
		{"deep/" + strings.Repeat("x/", 2100) + "f", syscall.ENAMETOOLONG},
		{"nodir/x", syscall.ENOENT},
	} {
		err := u.WriteFile(c.name, []byte("no"), 0o644)
		if !errors.Is(err, c.want) {
			t.Errorf("WriteFile(%.40s) = %v, want %v", c.name, err, c.want)
		}
	}
	if after := tree(); after != before {
		t.Errorf("refused WriteFiles changed the union:\n%s\nwas\n%s", after, before)
	}
	if after := upperTree(); after != ubefore {
		t.Errorf("refused WriteFiles changed the upper layer:\n%s\nwas\n%s", after, ubefore)
	}

	// An upper layer whose one step fails: nothing changes either.
	pack := reviewPack(t, reviewHostTree(t))
	fu := &failingCopyIn{FS: mem.New()}
	v := packfs.New(fu, pack)
	if err := v.Remove("wo/g"); err != nil {
		t.Fatal(err)
	}
	vbefore := strings.Join(reviewTree(t, v, time.Time{}), "\n")
	fu.fail = true
	for _, name := range []string{"d/a", "deep/x/y/f", "wo/g"} {
		if err := v.WriteFile(name, []byte("no"), 0o644); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("WriteFile(%s) over a failing upper: %v, want ENOSPC", name, err)
		}
	}
	if after := strings.Join(reviewTree(t, v, time.Time{}), "\n"); after != vbefore {
		t.Errorf("failed WriteFiles changed the union:\n%s\nwas\n%s", after, vbefore)
	}
}

// failingCopyIn is a mem upper whose one-step creates fail with ENOSPC
// once fail is set, as a full disk would.
type failingCopyIn struct {
	*mem.FS
	fail bool
}

func (f *failingCopyIn) CopyIn(dir string, chain []mem.Copy) error {
	if f.fail {
		return &fs.PathError{Op: "copyin", Path: dir, Err: syscall.ENOSPC}
	}
	return f.FS.CopyIn(dir, chain)
}

func (f *failingCopyIn) CreateOver(dir string, chain []mem.Copy) error {
	if f.fail {
		return &fs.PathError{Op: "create", Path: dir, Err: syscall.ENOSPC}
	}
	return f.FS.CreateOver(dir, chain)
}

func (f *failingCopyIn) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if f.fail {
		return &fs.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	return f.FS.WriteFile(name, data, perm)
}

// TestReviewWriteFileOverLowerStore: the durable store over a lower pack
// and over its own packs: a WriteFile over a lower file keeps its mode
// and owner, takes the change's time, and replays so after a reopen and
// a checkpoint.
func TestReviewWriteFileOverLowerStore(t *testing.T) {
	pack := reviewPack(t, reviewHostTree(t))
	dir := t.TempDir()
	opts := &packfs.Options{Lowers: []fs.FS{pack}}
	s, err := packfs.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Second)
	h, err := s.Open("deep/x/y/f")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d/a", "deep/x/y/f"} {
		if err := s.WriteFile(name, []byte("store "+name), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := io.ReadAll(h); err != nil || string(b) != "store deep/x/y/f" {
		t.Errorf("handle open before: %q, %v", b, err)
	}
	h.Close()
	if err := s.Remove("wo/g"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile("wo/g", []byte("over"), 0o600); err != nil {
		t.Fatal(err)
	}
	describe := func(fsys fs.FS) []string {
		var out []string
		for _, p := range []string{"d", "d/a", "deep", "deep/x/y", "deep/x/y/f", "wo", "wo/g"} {
			fi, err := fs.Stat(fsys, p)
			if err != nil {
				out = append(out, p+": "+err.Error())
				continue
			}
			b, _ := fs.ReadFile(fsys, p)
			uid, gid, _ := layer.OwnerOf(fi)
			out = append(out, fmt.Sprintf("%s: %v %d:%d %d %q", p, fi.Mode(), uid, gid, fi.ModTime().UnixNano(), b))
		}
		return out
	}
	live := describe(s)
	for _, l := range live {
		if strings.HasPrefix(l, "d/a:") && !strings.Contains(l, "-rw-r----- 1234:5678") {
			t.Errorf("store d/a after WriteFile over a lower file: %s", l)
		}
	}
	if fi, err := s.Stat("d/a"); err != nil || fi.ModTime().Before(start) {
		t.Errorf("store d/a mtime %v, %v", fi, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = packfs.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(s); !slices.Equal(got, live) {
		t.Errorf("after reopen:\n%s\nwas\n%s", strings.Join(got, "\n"), strings.Join(live, "\n"))
	}
	// Over the store's own pack now (Close checkpointed): again, and a
	// checkpoint with the write in its tail.
	if err := s.WriteFile("d/a", []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	live = describe(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = packfs.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := describe(s); !slices.Equal(got, live) {
		t.Errorf("after checkpoint and reopen:\n%s\nwas\n%s", strings.Join(got, "\n"), strings.Join(live, "\n"))
	}
}

var reviewT0 = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// reviewHostTree makes the lower tree on the host, with owners, modes,
// times and a hard link, and returns its root.
func reviewHostTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "src")
	mk := func(p string, mode fs.FileMode) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(root, p), mode)
	}
	wf := func(p, data string, mode fs.FileMode) {
		fp := filepath.Join(root, p)
		if err := os.WriteFile(fp, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Lchown(fp, 1234, 5678)
		os.Chmod(fp, mode)
	}
	mk("d", 0o750)
	mk("deep/x/y", 0o711)
	mk("wo", 0o755)
	mk("d2", fs.ModeSetgid|0o775)
	os.Chown(filepath.Join(root, "d2"), 0, 777)
	wf("d/a", "lower-a", 0o640)
	wf("d/b", "lower-b", 0o604)
	wf("d/hl1", "hard", 0o600)
	if err := os.Link(filepath.Join(root, "d/hl1"), filepath.Join(root, "d/hl2")); err != nil {
		t.Fatal(err)
	}
	wf("d/suid", "suid", fs.ModeSetuid|0o755)
	if err := os.Symlink("b", filepath.Join(root, "d/sym")); err != nil {
		t.Fatal(err)
	}
	wf("deep/x/y/f", "deep-lower", 0o604)
	wf("wo/g", "wo-lower", 0o644)
	wf("d2/g", "d2-lower", 0o644)
	big := make([]byte, 3<<20)
	for i := range 4096 {
		big[i] = 'x'
	}
	wf("d/big", string(big), 0o644)
	// Times last, bottom up.
	var all []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		all = append(all, p)
		return nil
	})
	for i := len(all) - 1; i >= 0; i-- {
		tm := reviewT0.Add(time.Duration(i) * time.Minute)
		if fi, err := os.Lstat(all[i]); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			os.Chtimes(all[i], tm, tm)
		}
	}
	return root
}

func reviewPack(t *testing.T, root string) *packreader.Reader {
	t.Helper()
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	r, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func reviewDescribe(fi fs.FileInfo, recent time.Time) string {
	mt := fi.ModTime().UTC().Format(time.RFC3339Nano)
	if !recent.IsZero() && fi.ModTime().After(recent) {
		mt = "recent"
	}
	s := fmt.Sprintf("%v size=%d mtime=%s", fi.Mode(), fi.Size(), mt)
	if uid, gid, ok := layer.OwnerOf(fi); ok {
		s += fmt.Sprintf(" owner=%d:%d", uid, gid)
	}
	if in, ok := fi.Sys().(interface{ Inode() (uint64, uint32) }); ok {
		_, n := in.Inode()
		s += fmt.Sprintf(" nlink=%d", n)
	}
	return s
}

func reviewTree(t *testing.T, fsys fs.FS, recent time.Time) []string {
	var out []string
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			out = append(out, fmt.Sprintf("%s: walk error %v", p, err))
			return nil
		}
		fi, err := fs.Lstat(fsys, p)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: lstat error %v", p, err))
			return nil
		}
		line := p + ": " + reviewDescribe(fi, recent)
		if fi.Mode().IsRegular() {
			b, err := fs.ReadFile(fsys, p)
			sum := sha256.Sum256(b)
			line += fmt.Sprintf(" content=%q.. sum=%x err=%v", trunc(b), sum[:4], err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			tg, _ := fs.ReadLink(fsys, p)
			line += " -> " + tg
		}
		out = append(out, line)
		return nil
	})
	sort.Strings(out)
	return out
}

func trunc(b []byte) []byte {
	if len(b) > 16 {
		return b[:16]
	}
	return b
}
