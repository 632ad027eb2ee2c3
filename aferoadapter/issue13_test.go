package aferoadapter_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// issue13Case is one repro of issue 13 item 1: setup makes a tree, run
// does what the issue names and returns its error, which must match want
// (nil: no error), and check, when set, looks at the tree afterwards.
// Cases the kernel can be asked about run on it too, as proof of want;
// chroot cases (".." at the root) cannot, and say so.
type issue13Case struct {
	name   string
	setup  func(afero.Fs)
	run    func(afero.Fs) error
	want   error
	check  func(afero.Fs) error
	chroot bool
	// links climbs out of the root through a symlink, which dirfs
	// refuses with dirfs.ErrEscapes, by its own rule (see its doc).
	links bool
}

func mkdirs(names ...string) func(afero.Fs) {
	return func(fsys afero.Fs) {
		for _, n := range names {
			switch {
			case strings.Contains(n, " -> "):
				link, target, _ := strings.Cut(n, " -> ")
				fsys.(afero.Linker).SymlinkIfPossible(target, link)
			case strings.HasSuffix(n, "/"):
				fsys.MkdirAll(n, 0o755)
			default:
				afero.WriteFile(fsys, n, []byte("data"), 0o644)
			}
		}
	}
}

func symlink(fsys afero.Fs, target, name string) error {
	return fsys.(afero.Linker).SymlinkIfPossible(target, name)
}

func readlink(fsys afero.Fs, name string) error {
	_, err := fsys.(afero.LinkReader).ReadlinkIfPossible(name)
	return err
}

func lstat(fsys afero.Fs, name string) (os.FileInfo, error) {
	fi, _, err := fsys.(afero.Lstater).LstatIfPossible(name)
	return fi, err
}

func create(fsys afero.Fs, name string) error {
	f, err := fsys.Create(name)
	if err == nil {
		f.Close()
	}
	return err
}

func open(fsys afero.Fs, name string, flag int) error {
	f, err := fsys.OpenFile(name, flag, 0o644)
	if err == nil {
		f.Close()
	}
	return err
}

func stat(fsys afero.Fs, name string) error {
	_, err := fsys.Stat(name)
	return err
}

// exists fails unless name exists (not following a final symlink) and
// is a directory if dir is set.
func exists(name string, dir bool) func(afero.Fs) error {
	return func(fsys afero.Fs) error {
		fi, err := lstat(fsys, name)
		if err != nil {
			return err
		}
		if dir && !fi.IsDir() {
			return fmt.Errorf("%s is %v, not a directory", name, fi.Mode())
		}
		return nil
	}
}

func missing(name string) func(afero.Fs) error {
	return func(fsys afero.Fs) error {
		if _, err := lstat(fsys, name); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %v, want it missing", name, err)
		}
		return nil
	}
}

// isMode fails unless Stat(name) succeeds with mode.
func statMode(name string, mode os.FileMode) func(afero.Fs) error {
	return func(fsys afero.Fs) error {
		fi, err := fsys.Stat(name)
		if err != nil {
			return err
		}
		if fi.Mode() != mode {
			return fmt.Errorf("Stat(%s) mode %v, want %v", name, fi.Mode(), mode)
		}
		return nil
	}
}

var issue13Cases = []issue13Case{
	// Trailing slashes.
	{name: "CreateSlashMissing", run: func(f afero.Fs) error { return create(f, "/c/") }, want: syscall.EISDIR, check: missing("/c")},
	{name: "CreateSlashDir", setup: mkdirs("/c/"), run: func(f afero.Fs) error { return create(f, "/c/") }, want: syscall.EISDIR},
	{name: "CreateSlashFile", setup: mkdirs("/c"), run: func(f afero.Fs) error { return create(f, "/c/") }, want: syscall.EISDIR},
	{name: "OpenSlashFile", setup: mkdirs("/c"), run: func(f afero.Fs) error { return open(f, "/c/", os.O_RDONLY) }, want: syscall.ENOTDIR},
	{name: "OpenSlashLinkToDir", setup: mkdirs("/d/", "/l -> d"), run: func(f afero.Fs) error { return open(f, "/l/", os.O_RDONLY) }},
	{name: "StatSlashFile", setup: mkdirs("/c/", "/c/a"), run: func(f afero.Fs) error { return stat(f, "/c//a/") }, want: syscall.ENOTDIR},
	{name: "SymlinkSlashMissing", setup: mkdirs("/b/"), run: func(f afero.Fs) error { return symlink(f, "b", "/b/a/") }, want: syscall.ENOENT, check: missing("/b/a")},
	{name: "SymlinkSlashExisting", setup: mkdirs("/b/", "/b/a"), run: func(f afero.Fs) error { return symlink(f, "b", "/b/a/") }, want: syscall.EEXIST},
	{name: "ReadlinkSlashDangling", setup: mkdirs("/b -> x"), run: func(f afero.Fs) error { return readlink(f, "/b/") }, want: syscall.ENOENT},
	{name: "ReadlinkSlashToDir", setup: mkdirs("/d/", "/b -> d"), run: func(f afero.Fs) error { return readlink(f, "/b/") }, want: syscall.EINVAL},
	{name: "ReadlinkSlashToFile", setup: mkdirs("/f", "/b -> f"), run: func(f afero.Fs) error { return readlink(f, "/b/") }, want: syscall.ENOTDIR},
	{name: "LstatSlashFollows", setup: mkdirs("/d/", "/l -> d"), run: func(f afero.Fs) error { return nil }, check: func(f afero.Fs) error {
		fi, err := lstat(f, "/l/")
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("Lstat(/l/) = %v, want the directory", fi.Mode())
		}
		return err
	}},
	{name: "ChmodSlashFile", setup: mkdirs("/f"), run: func(f afero.Fs) error { return f.Chmod("/f/", 0o600) }, want: syscall.ENOTDIR, check: statMode("/f", 0o644)},
	{name: "RenameDirOntoItselfSlash", setup: mkdirs("/c/"), run: func(f afero.Fs) error { return f.Rename("/c", "/c/") }, check: exists("/c", true)},
	{name: "RenameFileSlash", setup: mkdirs("/f"), run: func(f afero.Fs) error { return f.Rename("/f/", "/g") }, want: syscall.ENOTDIR, check: exists("/f", false)},
	{name: "RenameLinkSlash", setup: mkdirs("/d/", "/l -> d"), run: func(f afero.Fs) error { return f.Rename("/l/", "/g") }, want: syscall.ENOTDIR, check: exists("/l", false)},
	{name: "RenameToSlashMissing", setup: mkdirs("/f"), run: func(f afero.Fs) error { return f.Rename("/f", "/g/") }, want: syscall.ENOTDIR, check: exists("/f", false)},
	{name: "RenameDirToSlashMissing", setup: mkdirs("/d/"), run: func(f afero.Fs) error { return f.Rename("/d", "/g/") }, check: exists("/g", true)},
	{name: "MkdirSlash", run: func(f afero.Fs) error { return f.Mkdir("/x/", 0o755) }, check: exists("/x", true)},
	{name: "RemoveSlashFile", setup: mkdirs("/f"), run: func(f afero.Fs) error { return f.Remove("/f/") }, want: syscall.ENOTDIR, check: exists("/f", false)},
	{name: "RemoveSlashLink", setup: mkdirs("/d/", "/l -> d"), run: func(f afero.Fs) error { return f.Remove("/l/") }, want: syscall.ENOTDIR, check: exists("/l", false)},
	{name: "RemoveSlashDir", setup: mkdirs("/d/"), run: func(f afero.Fs) error { return f.Remove("/d/") }, check: missing("/d")},
	{name: "RemoveAllSlashFile", setup: mkdirs("/f"), run: func(f afero.Fs) error { return f.RemoveAll("/f/") }, check: missing("/f")},

	// A final symlink whose target ends in a slash, under a decorated
	// name (a plain one is the layer's to resolve: see diffExclusions).
	{name: "MkdirAllThroughSlashLink", setup: mkdirs("/e", "/a -> e/"), run: func(f afero.Fs) error { return f.MkdirAll("./a/.", 0o755) }, want: syscall.EEXIST},
	{name: "StatThroughSlashLink", setup: mkdirs("/e", "/a -> e/"), run: func(f afero.Fs) error { return stat(f, "./a") }, want: syscall.ENOTDIR},
	{name: "OpenThroughSlashLink", setup: mkdirs("/e", "/a -> e/"), run: func(f afero.Fs) error { return open(f, "/./a", os.O_RDONLY) }, want: syscall.ENOTDIR},
	{name: "CreateThroughSlashLink", setup: mkdirs("/a -> x/"), run: func(f afero.Fs) error { return create(f, "./a") }, want: syscall.EISDIR, check: missing("/x")},
	{name: "CreateThroughLink", setup: mkdirs("/d/", "/a -> d/x"), run: func(f afero.Fs) error { return create(f, "./a") }, check: exists("/d/x", false)},
	{name: "ChmodThroughSlashLink", setup: mkdirs("/e", "/a -> e/"), run: func(f afero.Fs) error { return f.Chmod("/./a", 0o600) }, want: syscall.ENOTDIR, check: statMode("/e", 0o644)},

	// The empty name.
	{name: "OpenEmpty", run: func(f afero.Fs) error { return open(f, "", os.O_RDONLY) }, want: syscall.ENOENT},
	{name: "MkdirEmpty", run: func(f afero.Fs) error { return f.Mkdir("", 0o755) }, want: syscall.ENOENT},
	{name: "MkdirAllEmpty", run: func(f afero.Fs) error { return f.MkdirAll("", 0o755) }, want: syscall.ENOENT},
	{name: "StatEmpty", run: func(f afero.Fs) error { return stat(f, "") }, want: syscall.ENOENT},
	{name: "RemoveEmpty", run: func(f afero.Fs) error { return f.Remove("") }, want: syscall.ENOENT},
	{name: "RemoveAllEmpty", setup: mkdirs("/f"), run: func(f afero.Fs) error { return f.RemoveAll("") }, check: exists("/f", false)},
	{name: "RenameEmpty", setup: mkdirs("/f"), run: func(f afero.Fs) error { return f.Rename("/f", "") }, want: syscall.ENOENT},

	// "..": its prefix must exist and be a directory, symlinks followed.
	{name: "StatDotDotMissing", run: func(f afero.Fs) error { return stat(f, "/b/..") }, want: syscall.ENOENT},
	{name: "StatDotDotFile", setup: mkdirs("/b"), run: func(f afero.Fs) error { return stat(f, "/b/..") }, want: syscall.ENOTDIR},
	{name: "OpenDotDotLoop", setup: mkdirs("/c -> c"), run: func(f afero.Fs) error { return open(f, "/c/..", os.O_RDONLY) }, want: syscall.ELOOP},
	{name: "StatDotDotPhysical", setup: func(f afero.Fs) {
		f.MkdirAll("/c/c", 0o755)
		f.Chmod("/c", 0o711)
		symlink(f, "c/c", "/a")
	}, run: func(f afero.Fs) error { return nil }, check: statMode("/a/..", os.ModeDir|0o711)},
	{name: "RemoveDotDotMissing", run: func(f afero.Fs) error { return f.Remove("/c/..") }, want: syscall.ENOENT},
	{name: "RemoveDotDot", setup: mkdirs("/c/"), run: func(f afero.Fs) error { return f.Remove("/c/..") }, want: syscall.ENOTEMPTY, check: exists("/c", true)},
	{name: "RenameDotDot", setup: mkdirs("/c/d/"), run: func(f afero.Fs) error { return f.Rename("/c/d/..", "/e") }, want: syscall.EBUSY, check: exists("/c/d", true)},

	// ".": the directory it is in.
	{name: "MkdirDotMissing", run: func(f afero.Fs) error { return f.Mkdir("/b/.", 0o755) }, want: syscall.ENOENT, check: missing("/b")},
	{name: "MkdirDotExisting", setup: mkdirs("/b/"), run: func(f afero.Fs) error { return f.Mkdir("/b/.", 0o755) }, want: syscall.EEXIST},
	{name: "SymlinkDot", setup: mkdirs("/b/"), run: func(f afero.Fs) error { return symlink(f, "x", "/b/.") }, want: syscall.EEXIST},
	{name: "CreateExclDot", setup: mkdirs("/b/"), run: func(f afero.Fs) error { return open(f, "/b/.", os.O_RDWR|os.O_CREATE|os.O_EXCL) }, want: syscall.EEXIST},
	{name: "CreateDot", setup: mkdirs("/b/"), run: func(f afero.Fs) error { return open(f, "/b/.", os.O_RDWR|os.O_CREATE) }, want: syscall.EISDIR},
	{name: "RemoveDot", setup: mkdirs("/b/"), run: func(f afero.Fs) error { return f.Remove("/b/.") }, want: syscall.EINVAL, check: exists("/b", true)},
	{name: "RemoveAllDot", setup: mkdirs("/b/", "/b/f"), run: func(f afero.Fs) error { return f.RemoveAll("/b/.") }, want: syscall.EINVAL, check: exists("/b/f", false)},
	{name: "RenameDotThroughLink", setup: mkdirs("/c/", "/b -> c", "/b/a/"), run: func(f afero.Fs) error { return f.Rename("/b/a/.", "/a") }, want: syscall.EBUSY, check: exists("/c/a", true)},
	{name: "RenameOntoDot", setup: mkdirs("/c/", "/d/"), run: func(f afero.Fs) error { return f.Rename("/d", "/c/.") }, want: syscall.EEXIST},
	{name: "RenameFileOntoDot", setup: mkdirs("/c/", "/f"), run: func(f afero.Fs) error { return f.Rename("/f", "/c/.") }, want: syscall.EEXIST},
	{name: "LstatDotLinkToDir", setup: mkdirs("/d/", "/a -> d"), run: func(f afero.Fs) error { return nil }, check: func(f afero.Fs) error {
		fi, err := lstat(f, "/a/.")
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			err = errors.New("Lstat(/a/.) reports the symlink")
		}
		return err
	}},
	{name: "LstatDotDangling", setup: mkdirs("/a -> x"), run: func(f afero.Fs) error { _, err := lstat(f, "/a/."); return err }, want: syscall.ENOENT},
	{name: "LstatDotLinkToFile", setup: mkdirs("/f", "/a -> f"), run: func(f afero.Fs) error { _, err := lstat(f, "/a/."); return err }, want: syscall.ENOTDIR},

	// "//" and os's rules on top of the kernel's.
	{name: "MkdirAllDoubleSlashOverFile", setup: mkdirs("/a"), run: func(f afero.Fs) error { return f.MkdirAll("/a//c/a", 0o755) }, want: syscall.EEXIST},
	{name: "MkdirAllDot", setup: mkdirs("/a/"), run: func(f afero.Fs) error { return f.MkdirAll("/a/b/.", 0o755) }, check: exists("/a/b", true)},
	{name: "RenameDoubleSlash", setup: mkdirs("/b/b/"), run: func(f afero.Fs) error { return f.Rename("/b/b", "/b//b") }, check: exists("/b/b", true)},
	{name: "RenameSameString", setup: mkdirs("/b/"), run: func(f afero.Fs) error { return f.Rename("/b", "/b") }, want: syscall.EEXIST},
	{name: "RenameLeadingSlash", setup: mkdirs("/b/"), run: func(f afero.Fs) error { return f.Rename("/b", "b") }, check: exists("/b", true)},
	{name: "RemoveAllDotDotSlash", setup: mkdirs("/a/b/", "/a/f"), run: func(f afero.Fs) error { return f.RemoveAll("/a/b/..") }, want: syscall.ENOTEMPTY, check: func(f afero.Fs) error {
		// os empties the directory ".." names, then fails to rmdir it.
		if err := missing("/a/f")(f); err != nil {
			return err
		}
		return exists("/a", true)(f)
	}},

	// Symlink's empty target is checked first (issue 13 item 3).
	{name: "SymlinkEmptyTarget", setup: mkdirs("/a/", "/a/c"), run: func(f afero.Fs) error { return symlink(f, "", "/a/c") }, want: syscall.ENOENT},
	{name: "SymlinkEmptyTargetBadParent", setup: mkdirs("/a"), run: func(f afero.Fs) error { return symlink(f, "", "/a/c") }, want: syscall.ENOENT},

	// Linux's limits.
	{name: "NameTooLong", run: func(f afero.Fs) error { return create(f, "/"+strings.Repeat("n", 256)) }, want: syscall.ENAMETOOLONG},
	{name: "NameTooLongDecorated", run: func(f afero.Fs) error { return f.Mkdir("/"+strings.Repeat("n", 256)+"/", 0o755) }, want: syscall.ENAMETOOLONG},
	{name: "NameLongest", run: func(f afero.Fs) error { return create(f, "/"+strings.Repeat("n", 255)) }},
	{name: "PathTooLong", setup: mkdirs("/d/"), run: func(f afero.Fs) error { return stat(f, "/d"+strings.Repeat("/.", 2100)) }, want: syscall.ENAMETOOLONG},
	{name: "NUL", run: func(f afero.Fs) error { return create(f, "/a\x00b") }, want: syscall.EINVAL, check: missing("/a")},
	{name: "SymlinkTargetNUL", run: func(f afero.Fs) error { return symlink(f, "a\x00b", "/l") }, want: syscall.EINVAL},

	// ".." at the root stays at the root, as in a chroot (the kernel
	// over a temporary directory would climb out: the adapter only).
	{name: "ChrootStat", chroot: true, run: func(f afero.Fs) error { return stat(f, "/..") }, check: statMode("/../..", os.ModeDir|0o755)},
	{name: "ChrootCreate", chroot: true, run: func(f afero.Fs) error { return create(f, "/../x") }, check: exists("/x", false)},
	{name: "ChrootRelative", chroot: true, setup: mkdirs("/a/"), run: func(f afero.Fs) error { return f.Mkdir("a/../../a/b", 0o755) }, check: exists("/a/b", true)},
	{name: "ChrootLink", chroot: true, links: true, setup: mkdirs("/d/", "/d/l -> ../../..", "/f"), run: func(f afero.Fs) error { return stat(f, "/d/l/f") }},
	{name: "ChrootAbsoluteLink", chroot: true, links: true, setup: mkdirs("/d/", "/d/l -> /f", "/f"), run: func(f afero.Fs) error { return stat(f, "/d/l") }},
	{name: "RemoveRoot", chroot: true, run: func(f afero.Fs) error { return f.Remove("/") }, want: syscall.EBUSY},
	{name: "RemoveAllRoot", chroot: true, setup: mkdirs("/f"), run: func(f afero.Fs) error { return f.RemoveAll("//") }, want: syscall.EINVAL, check: exists("/f", false)},
	{name: "RenameRoot", chroot: true, setup: mkdirs("/d/"), run: func(f afero.Fs) error { return f.Rename("/", "/d/x") }, want: syscall.EBUSY},
	{name: "CreateExclRoot", chroot: true, run: func(f afero.Fs) error { return open(f, "/", os.O_RDWR|os.O_CREATE|os.O_EXCL) }, want: syscall.EEXIST},
}

// issue13Stacks are the file systems TestIssue13Paths runs over, each
// made with setup already applied (the union's in its lower).
var issue13Stacks = []struct {
	name string
	make func(t *testing.T, setup func(afero.Fs)) afero.Fs
}{
	{"mem", func(t *testing.T, setup func(afero.Fs)) afero.Fs {
		fsys := aferoadapter.New(mem.New())
		setup(fsys)
		return fsys
	}},
	{"union", func(t *testing.T, setup func(afero.Fs)) afero.Fs { return unionFs(t, setup) }},
	{"store", func(t *testing.T, setup func(afero.Fs)) afero.Fs {
		s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.Chmod(".", 0o755)
		fsys := aferoadapter.New(s)
		setup(fsys)
		return fsys
	}},
	{"dirfs", func(t *testing.T, setup func(afero.Fs)) afero.Fs {
		dir := tempDir(t)
		os.Chmod(dir, 0o755)
		d, err := dirfs.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		fsys := aferoadapter.New(d)
		setup(fsys)
		return fsys
	}},
}

// TestIssue13Paths runs each repro of issue 13 item 1 (and item 3's
// empty symlink target, and Linux's name limits) on the kernel, to prove
// what it expects, and on the adapter over each stack.
func TestIssue13Paths(t *testing.T) {
	for _, c := range issue13Cases {
		setup := c.setup
		if setup == nil {
			setup = func(afero.Fs) {}
		}
		run := func(t *testing.T, fsys afero.Fs) {
			t.Helper()
			err := c.run(fsys)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
			if err != nil && !errors.As(err, new(*fs.PathError)) && !errors.As(err, new(*os.LinkError)) {
				t.Errorf("error %T %v is not an *fs.PathError or *os.LinkError", err, err)
			}
			if c.check != nil {
				if err := c.check(fsys); err != nil {
					t.Errorf("afterwards: %v", err)
				}
			}
		}
		if !c.chroot {
			t.Run(c.name+"/linux", func(t *testing.T) {
				host := newHostFs(t)
				setup(host)
				run(t, host)
			})
		}
		for _, s := range issue13Stacks {
			if c.links && s.name == "dirfs" {
				continue
			}
			t.Run(c.name+"/"+s.name, func(t *testing.T) { run(t, s.make(t, setup)) })
		}
	}
}

// TestIssue13ReaddirClosed pins issue 13 item 7, kept on purpose:
// Readdir and Readdirnames on a closed handle fail with fs.ErrClosed,
// where os gives "use of closed file", which matches no sentinel.
func TestIssue13ReaddirClosed(t *testing.T) {
	for _, s := range issue13Stacks {
		t.Run(s.name, func(t *testing.T) {
			fsys := s.make(t, mkdirs("/d/", "/d/f"))
			f, err := fsys.Open("/d")
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Readdir(-1); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("Readdir after Close: %v, want fs.ErrClosed", err)
			}
			if _, err := f.Readdirnames(1); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("Readdirnames after Close: %v, want fs.ErrClosed", err)
			}
		})
	}
	host := newHostFs(t)
	host.Mkdir("/d", 0o755)
	f, err := host.Open("/d")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := f.Readdir(-1); err == nil || errors.Is(err, fs.ErrClosed) {
		t.Errorf("os's Readdir after Close: %v; the doc says it matches no sentinel", err)
	}
}

// TestIssue13Hostile resolves hostile names over every stack: huge ones,
// deep ones, symlink loops and long targets. Each must fail or succeed
// with an *fs.PathError or *os.LinkError, quickly, and change nothing it
// should not.
func TestIssue13Hostile(t *testing.T) {
	long := strings.Repeat("../", 1365) + "d" // 4,096 bytes: too long
	names := []string{
		strings.Repeat("/", 5000), strings.Repeat("b/", 60) + "./x/", strings.Repeat("a/", 2047), strings.Repeat("./", 2047) + "d",
		strings.Repeat("../", 1300) + "d/", long, strings.Repeat("x", 1<<20), "/loop/x", "/loop/", "/loop/.",
		"/deep/.", "/deep/..", "/chain/..", "/d/./../d//./", "/\x00/", "/d/\x00", "d/" + strings.Repeat("x", 256) + "/..",
	}
	for _, s := range issue13Stacks {
		t.Run(s.name, func(t *testing.T) {
			fsys := s.make(t, mkdirs("/d/", "/d/f", "/loop -> loop", "/deep -> "+strings.Repeat("./", 2000)+"d", "/chain -> loop/.."))
			check := func(what string, err error) {
				t.Helper()
				if err != nil && !errors.As(err, new(*fs.PathError)) && !errors.As(err, new(*os.LinkError)) {
					t.Errorf("%s: error %T %v is not an *fs.PathError or *os.LinkError", what, err, err)
				}
			}
			for _, n := range names {
				short := n[:min(len(n), 20)]
				check("Stat "+short, stat(fsys, n))
				_, err := lstat(fsys, n)
				check("Lstat "+short, err)
				check("Readlink "+short, readlink(fsys, n))
				check("Open "+short, open(fsys, n, os.O_RDONLY))
				check("Create "+short, open(fsys, n, os.O_RDWR|os.O_CREATE|os.O_EXCL))
				check("Mkdir "+short, fsys.Mkdir(n, 0o755))
				if !strings.HasPrefix(n, "a/a/") {
					// (the union's MkdirAll takes minutes at 2,047
					// levels: its cost grows with the cube of the depth)
					check("MkdirAll "+short, fsys.MkdirAll(n+"/x", 0o755))
				}
				check("Chmod "+short, fsys.Chmod(n, 0o755))
				check("Symlink "+short, symlink(fsys, n, "/d/l"))
				fsys.Remove("/d/l")
				check("Symlink to "+short, symlink(fsys, "x", n))
				check("Rename "+short, fsys.Rename(n, "/d/r"))
				check("Rename to "+short, fsys.Rename("/d/nothing", n))
				check("Remove "+short, fsys.Remove(n))
			}
			if err := exists("/d/f", false)(fsys); err != nil {
				t.Error(err)
			}
			if err := stat(fsys, long); !errors.Is(err, syscall.ENAMETOOLONG) {
				t.Errorf("Stat of a 4,096-byte name: %v, want ENAMETOOLONG", err)
			}
			if err := stat(fsys, "/loop/x"); !errors.Is(err, syscall.ELOOP) {
				t.Errorf("Stat(/loop/x): %v, want ELOOP", err)
			}
		})
	}
}

// TestIssue13Concurrent resolves decorated names while a writer changes
// what they go through (a symlink retargeted, a directory renamed back
// and forth): each call succeeds or fails cleanly; run it under -race.
func TestIssue13Concurrent(t *testing.T) {
	for _, s := range issue13Stacks[:2] {
		t.Run(s.name, func(t *testing.T) {
			fsys := s.make(t, mkdirs("/d/", "/d/f", "/l -> d"))
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range 300 {
					fsys.Rename("/d", "/e")
					fsys.Remove("/l")
					symlink(fsys, []string{"e", "d", ".", "l"}[i%4], "/l")
					fsys.Rename("/e", "/d")
				}
			}()
			names := []string{"/l/./f", "/l/../d/f", "/l/", "/l/.", "//l//f/", "/d/./f/..", "/e/../l/f"}
			for i := 0; ; i++ {
				if i >= 200 {
					select {
					case <-done:
						return
					default:
					}
				}
				n := names[i%len(names)]
				for _, err := range []error{stat(fsys, n), readlink(fsys, n), open(fsys, n, os.O_RDONLY), fsys.Chmod(n, 0o755)} {
					if err != nil && !errors.As(err, new(*fs.PathError)) {
						t.Fatalf("%s: %T %v", n, err, err)
					}
				}
			}
		})
	}
}

// TestIssue13NoFollow checks that a decorated name keeps O_NOFOLLOW's
// meaning: the adapter follows a final symlink itself only when the open
// would.
func TestIssue13NoFollow(t *testing.T) {
	host := newHostFs(t)
	for _, fsys := range []afero.Fs{host, aferoadapter.New(mem.New())} {
		mkdirs("/d/", "/d/f", "/l -> d/f", "/m -> d")(fsys)
		err := open(fsys, "/./l", os.O_RDONLY|syscall.O_NOFOLLOW)
		if !errors.Is(err, syscall.ELOOP) {
			t.Errorf("%s: open(/./l, O_NOFOLLOW): %v, want ELOOP", fsys.Name(), err)
		}
		if err := open(fsys, "/./m/", os.O_RDONLY|syscall.O_NOFOLLOW); err != nil {
			t.Errorf("%s: open(/./m/, O_NOFOLLOW): %v, want the slash to follow m", fsys.Name(), err)
		}
	}
}
