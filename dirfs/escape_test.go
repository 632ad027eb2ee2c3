//go:build unix

package dirfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/dirfs"
)

// The escape corpus, in the manner of os/root_test.go: each case is a name
// handed to every operation of an FS whose root sits next to a planted
// secret. A case "walks out" when resolving its directory part (or the name
// itself, lexically) leaves the root: every operation must fail. A case
// whose only escape is a final symlink must fail for the operations that
// follow it; those that act on the link itself (Lstat, Readlink, Remove,
// Rename, Whiteout...) may succeed, inside. Either way the secret and the
// directory around the root must not change.

type escapeCase struct {
	name      string
	finalOnly bool // the escape is a symlink in the last element only
}

// escapeTree builds, under base/root, the symlinks the cases go through;
// base holds the secret and an empty directory "outdir" as targets.
func escapeTree(t *testing.T, base string) {
	t.Helper()
	root := filepath.Join(base, "root")
	for _, d := range []string{"root", "root/sub", "root/deep/a/b/c", "root/dir", "outdir"} {
		must(t, os.MkdirAll(filepath.Join(base, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(root, "inside"), []byte("in"), 0o644))
	for link, target := range map[string]string{
		"abs_dir":        filepath.Join(base, "outdir"),
		"abs_base":       base,
		"abs_file":       filepath.Join(base, "secret"),
		"abs_slash":      "/",
		"dangling_abs":   filepath.Join(base, "outdir", "created"),
		"up":             "..",
		"up_slash":       "../",
		"up_secret":      "../secret",
		"up_outdir":      "../outdir",
		"dangling_up":    "../outdir/created",
		"sub/upup":       "../../secret",
		"sub/updir":      "../..",
		"deep/a/b/c/up":  "../../../../../secret",
		"deep/a/b/c/ups": "../../../../../../../../../../../../../../../../..",
		"chain1":         "chain2",
		"chain2":         "sub/chain3",
		"sub/chain3":     "../../secret",
		"dotdot_in":      "sub/../../outdir",
		"proc_root":      "/proc/self/root",
		"proc_cwd":       "/proc/self/cwd",
		"proc_fd":        "/proc/self/fd",
		"loop1":          "loop2",
		"loop2":          "loop1",
		"loopdir":        "loopdir/x",
		"dir/back":       "../up",
	} {
		must(t, os.Symlink(target, filepath.Join(root, link)))
	}
}

func escapeCases(base string) []escapeCase {
	walk := []string{
		"..", "../", "../secret", "../root/../secret", "./../secret",
		"sub/../../secret", "sub//../../secret", "", ".//..",
		"/", "/etc/passwd", base + "/secret", "/" + "proc/self/root" + base + "/secret",
		strings.Repeat("../", 50) + "secret", "sub/" + strings.Repeat("../", 20) + "secret",
		strings.Repeat("a/../", 30) + "../secret",
		"a\x00b", "secret\x00", "\x00",
		"abs_dir/x", "abs_base/secret", "abs_slash/etc/passwd", "abs_dir/../secret",
		"up/secret", "up_slash/secret", "up_outdir/x", "sub/updir/secret",
		"deep/a/b/c/ups/etc/passwd", "dotdot_in/x", "dir/back/secret",
		"proc_root" + base + "/secret", "proc_cwd/x", "proc_fd/0",
		"loop1/x", "loopdir/x", "up/root/inside/../../secret",
	}
	final := []string{
		"abs_dir", "abs_base", "abs_file", "abs_slash", "dangling_abs",
		"up", "up_slash", "up_secret", "up_outdir", "dangling_up",
		"sub/upup", "sub/updir", "deep/a/b/c/up", "chain1", "dotdot_in",
		"proc_root", "proc_cwd", "proc_fd", "loop1", "loopdir",
	}
	var cases []escapeCase
	for _, n := range walk {
		cases = append(cases, escapeCase{name: n})
	}
	for _, n := range final {
		cases = append(cases, escapeCase{name: n, finalOnly: true})
	}
	return cases
}

type escapeOp struct {
	name   string
	follow bool // follows a final symlink, so a final-only escape must fail
	do     func(f *dirfs.FS, name string) error
}

var epoch = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

var escapeOps = []escapeOp{
	{"Open", true, func(f *dirfs.FS, n string) error { return closeFile(f.Open(n)) }},
	{"Stat", true, func(f *dirfs.FS, n string) error { _, err := f.Stat(n); return err }},
	{"Lstat", false, func(f *dirfs.FS, n string) error { _, err := f.Lstat(n); return err }},
	{"ReadDir", true, func(f *dirfs.FS, n string) error { _, err := f.ReadDir(n); return err }},
	{"ReadFile", true, func(f *dirfs.FS, n string) error { _, err := f.ReadFile(n); return err }},
	{"Create", true, func(f *dirfs.FS, n string) error { return closeLayerFile(f.Create(n)) }},
	{"OpenFile(RDWR|CREATE)", true, func(f *dirfs.FS, n string) error {
		return closeLayerFile(f.OpenFile(n, os.O_RDWR|os.O_CREATE, 0o644))
	}},
	{"OpenFile(WRONLY|TRUNC)", true, func(f *dirfs.FS, n string) error {
		return closeLayerFile(f.OpenFile(n, os.O_WRONLY|os.O_TRUNC, 0))
	}},
	{"OpenFile(APPEND)", true, func(f *dirfs.FS, n string) error {
		fl, err := f.OpenFile(n, os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			fl.Write([]byte("pwned"))
			fl.Close()
		}
		return err
	}},
	{"WriteFile", true, func(f *dirfs.FS, n string) error { return f.WriteFile(n, []byte("pwned"), 0o644) }},
	{"Mkdir", true, func(f *dirfs.FS, n string) error { return f.Mkdir(n, 0o777) }},
	{"MkdirAll", true, func(f *dirfs.FS, n string) error { return f.MkdirAll(n+"/x", 0o777) }},
	{"Rename(old)", false, func(f *dirfs.FS, n string) error { return f.Rename(n, "moved") }},
	{"Rename(new)", false, func(f *dirfs.FS, n string) error { return f.Rename("inside", n) }},
	{"Remove", false, func(f *dirfs.FS, n string) error { return f.Remove(n) }},
	{"RemoveAll", false, func(f *dirfs.FS, n string) error { return f.RemoveAll(n) }},
	{"Chmod", true, func(f *dirfs.FS, n string) error { return f.Chmod(n, 0o777) }},
	{"Chtimes", true, func(f *dirfs.FS, n string) error { return f.Chtimes(n, epoch, epoch) }},
	{"Chown", true, func(f *dirfs.FS, n string) error { return f.Chown(n, 1234, 1234) }},
	{"Lchown", false, func(f *dirfs.FS, n string) error { return f.Lchown(n, 1234, 1234) }},
	{"Symlink", false, func(f *dirfs.FS, n string) error { return f.Symlink("inside", n) }},
	{"Readlink", false, func(f *dirfs.FS, n string) error { _, err := f.Readlink(n); return err }},
	{"Whiteout", false, func(f *dirfs.FS, n string) error { return f.Whiteout(n) }},
}

func closeFile(f fs.File, err error) error {
	if err == nil {
		f.Close()
	}
	return err
}

func closeLayerFile(f interface{ Close() error }, err error) error {
	if err == nil {
		f.Close()
	}
	return err
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// outside records what lies outside the root, to check it never changes.
type outside struct {
	secret  string
	mode    fs.FileMode
	mtime   time.Time
	uid     uint32
	entries []string
}

func snapOutside(t *testing.T, base string) outside {
	t.Helper()
	var o outside
	data, err := os.ReadFile(filepath.Join(base, "secret"))
	must(t, err)
	fi, err := os.Stat(filepath.Join(base, "secret"))
	must(t, err)
	o.secret, o.mode, o.mtime = string(data), fi.Mode(), fi.ModTime()
	o.uid = fi.Sys().(*syscall.Stat_t).Uid
	for _, d := range []string{".", "outdir"} {
		list, err := os.ReadDir(filepath.Join(base, d))
		must(t, err)
		for _, e := range list {
			o.entries = append(o.entries, d+"/"+e.Name())
		}
	}
	return o
}

func TestEscapes(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			base := tempDir(t)
			must(t, os.WriteFile(filepath.Join(base, "secret"), []byte("secret"), 0o600))
			must(t, os.Chtimes(filepath.Join(base, "secret"), epoch.Add(time.Hour), epoch.Add(time.Hour)))
			want := outside{}
			cases := escapeCases(base)
			if len(cases) < 40 {
				t.Fatalf("only %d cases", len(cases))
			}
			var denied, mustDeny, escapes, viaSentinel int
			for _, c := range cases {
				for _, op := range escapeOps {
					os.RemoveAll(filepath.Join(base, "root"))
					os.RemoveAll(filepath.Join(base, "outdir"))
					escapeTree(t, base)
					if want.secret == "" {
						want = snapOutside(t, base)
					}
					f, err := dirfs.New(filepath.Join(base, "root"), m.opts...)
					must(t, err)
					err = op.do(f, c.name)
					f.Close()
					if !c.finalOnly || op.follow {
						mustDeny++
						if err == nil {
							t.Errorf("%s(%q) succeeded, want it denied", op.name, c.name)
						} else {
							denied++
							if errors.Is(err, dirfs.ErrEscapes) {
								viaSentinel++
							}
						}
					}
					if got := snapOutside(t, base); !slices.Equal(got.entries, want.entries) ||
						got.secret != want.secret || got.mode != want.mode || !got.mtime.Equal(want.mtime) || got.uid != want.uid {
						escapes++
						t.Errorf("%s(%q) changed the outside: %+v, want %+v", op.name, c.name, got, want)
					}
				}
			}
			t.Logf("%d cases x %d operations: %d of %d that must be denied were (%d with ErrEscapes, the rest ErrInvalid/ELOOP/ENOENT...); %d changes outside",
				len(cases), len(escapeOps), denied, mustDeny, viaSentinel, escapes)
		})
	}
}

// TestClosed checks that a closed FS refuses every call with fs.ErrClosed,
// rather than resolving names against a descriptor number the process may
// have reused.
func TestClosed(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f, err := dirfs.New(tempDir(t), m.opts...)
			must(t, err)
			must(t, f.WriteFile("x", []byte("x"), 0o644))
			must(t, f.Close())
			for _, op := range escapeOps {
				if err := op.do(f, "x"); err == nil {
					t.Errorf("%s on a closed FS succeeded", op.name)
				}
			}
			if err := f.Close(); err != nil {
				t.Errorf("second Close: %v, want nil as os.Root gives", err)
			}
		})
	}
}

// FuzzNames drives every operation with arbitrary names: none may panic,
// and none may change what lies outside the root. The seeds run with every
// go test; go test -fuzz FuzzNames explores further.
func FuzzNames(f *testing.F) {
	for _, c := range escapeCases("/base") {
		f.Add(c.name)
	}
	for _, s := range []string{"a", "a/b", ".", "x/../y", "\xff", strings.Repeat("a/", 300), strings.Repeat("n", 300)} {
		f.Add(s)
	}
	base := tempDir(f)
	must(f, os.WriteFile(filepath.Join(base, "secret"), []byte("secret"), 0o600))
	must(f, os.Chtimes(filepath.Join(base, "secret"), epoch.Add(time.Hour), epoch.Add(time.Hour)))
	f.Fuzz(func(t *testing.T, name string) {
		os.RemoveAll(filepath.Join(base, "root"))
		os.RemoveAll(filepath.Join(base, "outdir"))
		escapeTree(t, base)
		want := snapOutside(t, base)
		for _, m := range modes {
			fsys, err := dirfs.New(filepath.Join(base, "root"), m.opts...)
			must(t, err)
			for _, op := range escapeOps {
				op.do(fsys, name)
			}
			fsys.Close()
		}
		if got := snapOutside(t, base); !slices.Equal(got.entries, want.entries) || got.secret != want.secret || got.mode != want.mode || !got.mtime.Equal(want.mtime) {
			t.Errorf("operations on %q changed the outside: %+v, want %+v", name, got, want)
		}
	})
}
