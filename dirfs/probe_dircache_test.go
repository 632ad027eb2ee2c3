//go:build linux

package dirfs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/internal/testsize"
	"golang.org/x/sys/unix"
)

// Probes of the directory-descriptor cache of Stat and Lstat: the tree is
// changed beside the FS, through os and unix, after a stat beneath a
// directory has kept its descriptor, and each answer is compared with what
// os.Stat and os.Lstat of the joined host path say while nothing changes.

// errnoOf is the errno inside err, 0 for nil, -1 for an error without one.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return ^syscall.Errno(0)
}

// sameAsOS checks f's Stat and Lstat of name against os.Stat and os.Lstat of
// root/name: the same errno, or the same inode and size.
func sameAsOS(t *testing.T, f *dirfs.FS, root, name string) {
	t.Helper()
	if msg := diffOS(f, root, name); msg != "" {
		t.Fatal(msg)
	}
}

func diffOS(f *dirfs.FS, root, name string) string {
	pairs := []struct {
		op   string
		mine func(string) (fs.FileInfo, error)
		os   func(string) (fs.FileInfo, error)
	}{{"stat", f.Stat, os.Stat}, {"lstat", f.Lstat, os.Lstat}}
	for _, p := range pairs {
		fi, err := p.mine(name)
		ofi, oerr := p.os(filepath.Join(root, name))
		if errnoOf(err) != errnoOf(oerr) || err == nil && (!sameInode(fi, ofi) || fi.Size() != ofi.Size()) {
			return fmt.Sprintf("%s %s = %v, %v; os says %v, %v", p.op, name, describe(fi), err, describe(ofi), oerr)
		}
	}
	return ""
}

// sameInode reports whether a and b, of an FS or of os, are one inode
// (os.SameFile takes only os's).
func sameInode(a, b fs.FileInfo) bool {
	sa, _ := a.Sys().(*syscall.Stat_t)
	sb, _ := b.Sys().(*syscall.Stat_t)
	return sa != nil && sb != nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

func describe(fi fs.FileInfo) string {
	if fi == nil {
		return "<nil>"
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if st == nil {
		return fmt.Sprintf("%s %v %d bytes", fi.Name(), fi.Mode(), fi.Size())
	}
	return fmt.Sprintf("%s %v %d bytes ino %d", fi.Name(), fi.Mode(), fi.Size(), st.Ino)
}

// warm stats name twice so that its directories are kept.
func warm(t *testing.T, f *dirfs.FS, root, name string) {
	t.Helper()
	for range 2 {
		sameAsOS(t, f, root, name)
	}
}

// probeTree makes base/root/a/b/c/f (6 bytes), base/root/x/b/c/f (9 bytes)
// and base/out/b/c/f (7 bytes), and base/out/c/f, base/out/f likewise, so
// that any depth moved or exchanged finds a file of its own size.
func probeTree(t *testing.T) (base, root string) {
	base = tempDir(t)
	root = filepath.Join(base, "root")
	for dir, size := range map[string]int{"root/a/b/c": 6, "root/x/b/c": 9, "out/b/c": 7} {
		must(t, os.MkdirAll(filepath.Join(base, dir), 0o755))
		must(t, os.WriteFile(filepath.Join(base, dir, "f"), make([]byte, size), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(base, "out", "c"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "out", "c", "f"), make([]byte, 7), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "out", "f"), make([]byte, 7), 0o644))
	return base, root
}

// TestProbeDirCacheReplaced replaces each directory of a/b/c, once kept, in
// every way a tree can change beside the FS, and compares with os.
func TestProbeDirCacheReplaced(t *testing.T) {
	names := []string{"a/b/c/f", "a/b/c", "a/b/f", "a/f", "x/b/c/f", "y/b/c/f", "y/c/f", "y/f"}
	changes := []struct {
		name string
		do   func(t *testing.T, base, root, dir string)
	}{
		{"moved out", func(t *testing.T, base, root, dir string) {
			must(t, os.Rename(filepath.Join(root, dir), filepath.Join(base, "gone")))
		}},
		{"removed and recreated", func(t *testing.T, base, root, dir string) {
			must(t, os.RemoveAll(filepath.Join(root, dir)))
			must(t, os.MkdirAll(filepath.Join(root, "a/b/c"), 0o755))
			must(t, os.WriteFile(filepath.Join(root, "a/b/c/f"), make([]byte, 3), 0o644))
		}},
		{"renamed within", func(t *testing.T, base, root, dir string) {
			must(t, os.Rename(filepath.Join(root, dir), filepath.Join(root, "y")))
		}},
		{"moved beneath itself elsewhere", func(t *testing.T, base, root, dir string) {
			must(t, os.Rename(filepath.Join(root, dir), filepath.Join(root, "x", "moved")))
		}},
		{"replaced by a file", func(t *testing.T, base, root, dir string) {
			must(t, os.Rename(filepath.Join(root, dir), filepath.Join(base, "gone")))
			must(t, os.WriteFile(filepath.Join(root, dir), make([]byte, 11), 0o644))
		}},
		{"replaced by a symlink inside", func(t *testing.T, base, root, dir string) {
			must(t, os.Rename(filepath.Join(root, dir), filepath.Join(base, "gone")))
			rel, err := filepath.Rel(filepath.Dir(filepath.Join(root, dir)), filepath.Join(root, "x", strings.TrimPrefix(dir, "a")))
			must(t, err)
			must(t, os.Symlink(rel, filepath.Join(root, dir)))
		}},
		{"exchanged inside", func(t *testing.T, base, root, dir string) {
			other := filepath.Join(root, "x", strings.TrimPrefix(dir, "a"))
			must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, dir), unix.AT_FDCWD, other, unix.RENAME_EXCHANGE))
		}},
		{"exchanged outside", func(t *testing.T, base, root, dir string) {
			other := filepath.Join(base, "out", strings.TrimPrefix(dir, "a"))
			must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, dir), unix.AT_FDCWD, other, unix.RENAME_EXCHANGE))
		}},
		{"exchanged with a symlink inside", func(t *testing.T, base, root, dir string) {
			link := filepath.Join(root, "link")
			rel, err := filepath.Rel(root, filepath.Join(root, "x", strings.TrimPrefix(dir, "a")))
			must(t, err)
			must(t, os.Symlink(rel, link))
			must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, dir), unix.AT_FDCWD, link, unix.RENAME_EXCHANGE))
		}},
	}
	for _, dir := range []string{"a", "a/b", "a/b/c"} {
		for _, ch := range changes {
			t.Run(dir+"/"+ch.name, func(t *testing.T) {
				base, root := probeTree(t)
				f := newFSAt(t, root)
				warm(t, f, root, "a/b/c/f")
				warm(t, f, root, "x/b/c/f")
				ch.do(t, base, root, dir)
				for _, name := range names {
					sameAsOS(t, f, root, name)
					sameAsOS(t, f, root, name)
				}
			})
		}
	}
}

// TestProbeDirCacheSymlinkOut replaces a kept directory at each depth by a
// symlink out of the root, absolute and relative, and by an exchange with
// one: every stat through it is an escape, as without the cache.
func TestProbeDirCacheSymlinkOut(t *testing.T) {
	for _, dir := range []string{"a", "a/b", "a/b/c"} {
		for _, how := range []string{"absolute", "relative", "exchanged"} {
			t.Run(dir+"/"+how, func(t *testing.T) {
				base, root := probeTree(t)
				f := newFSAt(t, root)
				warm(t, f, root, "a/b/c/f")
				target := filepath.Join(base, "out", strings.TrimPrefix(dir, "a"))
				host := filepath.Join(root, dir)
				if how == "relative" {
					rel, err := filepath.Rel(filepath.Dir(host), target)
					must(t, err)
					target = rel
				}
				if how == "exchanged" {
					must(t, os.Symlink(target, filepath.Join(root, "link")))
					must(t, unix.Renameat2(unix.AT_FDCWD, host, unix.AT_FDCWD, filepath.Join(root, "link"), unix.RENAME_EXCHANGE))
				} else {
					must(t, os.Rename(host, filepath.Join(base, "gone")))
					must(t, os.Symlink(target, host))
				}
				for range 2 {
					for _, stat := range []func(string) (fs.FileInfo, error){f.Stat, f.Lstat} {
						if fi, err := stat("a/b/c/f"); !errors.Is(err, dirfs.ErrEscapes) {
							t.Fatalf("stat a/b/c/f through a symlink out = %v, %v; want ErrEscapes", describe(fi), err)
						}
					}
				}
			})
		}
	}
}

// secretHook records the inodes of the planted files that the directory
// cache found; viaCache tells whether it found fi. The uncached way, which
// opens the parent afresh for the call, may find them: between its open of
// the directory and its fstatat there, the directory may leave the root
// (or lose its search permission), as with os.Root; that is the package
// doc's caveat, which these probes count and log.
func secretHook() (viaCache func(fs.FileInfo) bool, reset func()) {
	var inos sync.Map
	reset = dirfs.SetStatHook(func(name string, cached bool, ino uint64) {
		if cached && strings.HasSuffix(name, "/secret") {
			inos.Store(ino, true)
		}
	})
	return func(fi fs.FileInfo) bool {
		st, _ := fi.Sys().(*syscall.Stat_t)
		_, ok := inos.Load(st.Ino)
		return ok
	}, reset
}

// TestProbeDirCacheSecretRace moves a kept directory out of the root, plants
// a file in it there, removes it and moves the directory back, over and
// over, while goroutines stat the planted name through it at several
// depths: the planted file is only ever outside, so no stat may find it.
func TestProbeDirCacheSecretRace(t *testing.T) {
	var uncached atomic.Int64
	rounds := 20000
	if testsize.Short() || raceEnabled { // the race detector costs 10x
		rounds = 1500
	}
	for _, dir := range []string{"a", "a/b", "a/b/c"} {
		t.Run(dir, func(t *testing.T) {
			base, root := probeTree(t)
			f := newFSAt(t, root)
			warm(t, f, root, "a/b/c/f")
			in, out := filepath.Join(root, dir), filepath.Join(base, "moved")
			secret := filepath.Join(out, strings.TrimPrefix("a/b/c", dir), "secret")
			var stop atomic.Bool
			var found, stats atomic.Int64
			var wg sync.WaitGroup
			viaCache, reset := secretHook()
			defer reset()
			for range 2 {
				wg.Go(func() {
					for i := 0; !stop.Load(); i++ {
						name := []string{"a/b/c/secret", "a/b/c/f"}[i%2]
						fi, err := []func(string) (fs.FileInfo, error){f.Stat, f.Lstat}[i/2%2](name)
						stats.Add(1)
						if err == nil && name == "a/b/c/f" && fi.Size() != 6 {
							found.Add(1)
							t.Errorf("stat %s = %v: a file only ever outside the root", name, describe(fi))
						}
						if err == nil && name == "a/b/c/secret" {
							uncached.Add(1)
							if viaCache(fi) {
								found.Add(1)
								t.Errorf("stat %s = %v, through a kept descriptor: a file only ever outside the root", name, describe(fi))
							}
						}
					}
				})
			}
			for range rounds {
				must(t, os.Rename(in, out))
				must(t, os.WriteFile(secret, make([]byte, 99), 0o644))
				must(t, os.Remove(secret))
				must(t, os.Rename(out, in))
				if found.Load() > 0 {
					break
				}
			}
			stop.Store(true)
			wg.Wait()
			t.Logf("%d rounds, %d stats, %d found the planted file by opening its directory afresh (the uncached way, as os.Root does)", rounds, stats.Load(), uncached.Load())
			sameAsOS(t, f, root, "a/b/c/f")
		})
	}
}

// TestProbeDirCacheExchangeRace exchanges kept directories at every depth
// with each other and with directories outside while goroutines stat:
// every answer is one of the files the name can reach, never the file that
// stays outside (base/out/f).
func TestProbeDirCacheExchangeRace(t *testing.T) {
	rounds := 200000
	if testsize.Short() || raceEnabled { // the race detector costs 10x
		rounds = 10000
	}
	base, root := probeTree(t)
	f := newFSAt(t, root)
	warm(t, f, root, "a/b/c/f")
	warm(t, f, root, "x/b/c/f")
	stay, err := os.Stat(filepath.Join(base, "out", "f"))
	must(t, err)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range 2 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				name := []string{"a/b/c/f", "x/b/c/f", "a/b/f", "a/f"}[i%4]
				fi, err := []func(string) (fs.FileInfo, error){f.Stat, f.Lstat}[i/4%2](name)
				if err == nil && (sameInode(fi, stay) || fi.Size() != 6 && fi.Size() != 7 && fi.Size() != 9) {
					bad.Add(1)
					t.Errorf("stat %s = %v", name, describe(fi))
				}
			}
		})
	}
	pairs := [][2]string{
		{"root/a/b/c", "out/b/c"}, {"root/a/b", "root/x/b"}, {"root/a", "root/x"},
		{"root/a/b", "out/b"}, {"root/x/b/c", "root/a/b/c"},
	}
	for i := range rounds {
		p := pairs[i%len(pairs)]
		must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(base, p[0]), unix.AT_FDCWD, filepath.Join(base, p[1]), unix.RENAME_EXCHANGE))
		if bad.Load() > 0 {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	for _, name := range []string{"a/b/c/f", "x/b/c/f", "a/b/f", "a/f", "x/f"} {
		sameAsOS(t, f, root, name)
	}
}

// asUser runs fn on a thread whose filesystem uid and gid are uid, which
// drops the filesystem capabilities of root for it alone. The thread is
// never unlocked, so it ends with fn.
func asUser(t *testing.T, uid int, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := unix.Setfsgid(uid); err != nil {
			t.Errorf("setfsgid: %v", err)
			return
		}
		if err := unix.Setfsuid(uid); err != nil {
			t.Errorf("setfsuid: %v", err)
			return
		}
		fn()
	}()
	<-done
}

// needRoot skips a test that takes another filesystem uid where the process
// may not.
func needRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to take another filesystem uid")
	}
}

// TestProbeDirCacheSearchPermission: a user who may no longer search a
// directory on the path, the root included, is refused as os refuses,
// though the descriptors of the directories beneath it are kept. Each
// answer comes from a thread whose filesystem uid is 65534.
func TestProbeDirCacheSearchPermission(t *testing.T) {
	needRoot(t)
	for _, how := range []string{"chmod", "chown"} {
		for _, dir := range []string{"", "a", "a/b", "a/b/c"} {
			t.Run(how+" "+dir, func(t *testing.T) {
				base, root := probeTree(t)
				must(t, os.Chmod(base, 0o755))
				if how == "chown" {
					// The user's own directories, 0700, then given
					// to another.
					for _, d := range []string{"", "a", "a/b", "a/b/c"} {
						must(t, os.Chown(filepath.Join(root, d), 65534, 65534))
						must(t, os.Chmod(filepath.Join(root, d), 0o700))
					}
				}
				f := newFSAt(t, root)
				asUser(t, 65534, func() {
					for _, name := range []string{"a/b/c/f", "a/b/f", "a/f"} {
						for range 2 {
							if msg := diffOS(f, root, name); msg != "" {
								t.Errorf("before the %s: %s", how, msg)
								return
							}
						}
					}
					// The filesystem uid is this thread's alone; back
					// at 0 it has root's capabilities again.
					if err := unix.Setfsuid(0); err != nil {
						t.Error(err)
						return
					}
					var err error
					if how == "chown" {
						err = os.Chown(filepath.Join(root, dir), 65533, 65533)
					} else {
						err = os.Chmod(filepath.Join(root, dir), 0o700)
					}
					if err2 := unix.Setfsuid(65534); err != nil || err2 != nil {
						t.Error(err, err2)
						return
					}
					for _, name := range []string{"a/b/c/f", "a/b/f", "a/f"} {
						if msg := diffOS(f, root, name); msg != "" {
							t.Errorf("after the %s of %q: %s", how, dir, msg)
						}
					}
				})
			})
		}
	}
}

// TestProbeDirCacheSearchRace takes and gives back the search permission of
// a directory on the path, the root included, planting a file beneath it
// only while it may not be searched; goroutines with filesystem uid 65534
// stat the planted name all along, and none may find it.
func TestProbeDirCacheSearchRace(t *testing.T) {
	needRoot(t)
	var uncached atomic.Int64
	rounds := 10000
	if testsize.Short() || raceEnabled { // the race detector costs 10x
		rounds = 1000
	}
	for _, dir := range []string{"", "a", "a/b"} {
		t.Run("chmod "+dir, func(t *testing.T) {
			base, root := probeTree(t)
			must(t, os.Chmod(base, 0o755))
			f := newFSAt(t, root)
			secret := filepath.Join(root, "a", "b", "c", "secret")
			var stop atomic.Bool
			viaCache, reset := secretHook()
			defer reset()
			var found, stats atomic.Int64
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					asUser(t, 65534, func() {
						for i := 0; !stop.Load(); i++ {
							name := []string{"a/b/c/secret", "a/b/c/f"}[i%2]
							fi, err := []func(string) (fs.FileInfo, error){f.Stat, f.Lstat}[i/2%2](name)
							stats.Add(1)
							if err == nil && name == "a/b/c/secret" {
								uncached.Add(1)
								if viaCache(fi) {
									found.Add(1)
									t.Errorf("stat %s = %v, through a kept descriptor, while %q was 0700 and another's", name, describe(fi), dir)
									return
								}
							}
						}
					})
				})
			}
			for range rounds {
				must(t, os.Chmod(filepath.Join(root, dir), 0o700))
				must(t, os.WriteFile(secret, make([]byte, 99), 0o644))
				must(t, os.Remove(secret))
				must(t, os.Chmod(filepath.Join(root, dir), 0o755))
				if found.Load() > 0 {
					break
				}
			}
			stop.Store(true)
			wg.Wait()
			t.Logf("%d stats, %d found the planted file by opening its directory afresh (the uncached way, as os.Root does)", stats.Load(), uncached.Load())
		})
	}
}

// mountBind binds src over dst, or skips the test where mounts are not
// allowed; the mount is taken down when the test ends.
func mountBind(t *testing.T, src, dst string) {
	t.Helper()
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
}

// TestProbeDirCacheBindMount mounts a directory from outside over a kept
// directory, and compares with os before and after the unmount. The
// package doc says a mount made over a kept directory is not seen; this
// probe shows what that means for a caller.
func TestProbeDirCacheBindMount(t *testing.T) {
	for _, dir := range []string{"a", "a/b", "a/b/c"} {
		t.Run(dir, func(t *testing.T) {
			base, root := probeTree(t)
			f := newFSAt(t, root)
			warm(t, f, root, "a/b/c/f")
			dst := filepath.Join(root, dir)
			mountBind(t, filepath.Join(base, "out", strings.TrimPrefix(dir, "a")), dst)
			for _, name := range []string{"a/b/c/f", "a/b/f", "a/f"} {
				if msg := diffOS(f, root, name); msg != "" {
					t.Errorf("with the mount: %s", msg)
				}
			}
			must(t, unix.Unmount(dst, unix.MNT_DETACH))
			for _, name := range []string{"a/b/c/f", "a/b/f", "a/f"} {
				if msg := diffOS(f, root, name); msg != "" {
					t.Errorf("after the unmount: %s", msg)
				}
			}
		})
	}
}

// TestProbeDirCacheMountedBefore: a tree with a mount already beneath the
// root, stated through before and after the unmount.
func TestProbeDirCacheMountedBefore(t *testing.T) {
	base, root := probeTree(t)
	mountBind(t, filepath.Join(base, "out", "b"), filepath.Join(root, "a", "b"))
	f := newFSAt(t, root)
	warm(t, f, root, "a/b/c/f")
	must(t, unix.Unmount(filepath.Join(root, "a", "b"), unix.MNT_DETACH))
	sameAsOS(t, f, root, "a/b/c/f")
	sameAsOS(t, f, root, "a/b/c/f")
	mountBind(t, filepath.Join(base, "out", "b"), filepath.Join(root, "a", "b"))
	sameAsOS(t, f, root, "a/b/c/f")
}

// inotifyWatches counts the inotify watches the process holds.
func inotifyWatches(t *testing.T) int {
	t.Helper()
	list, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	n := 0
	for _, e := range list {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || l != "anon_inode:inotify" {
			continue
		}
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		n += strings.Count(string(b), "inotify wd:")
	}
	return n
}

// makeWatcher has the process make its inotify instance, which stays, so
// that counts of descriptors taken after it see only what FSes keep.
func makeWatcher(t *testing.T) {
	t.Helper()
	dir := tempDir(t)
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	f, err := dirfs.New(dir)
	must(t, err)
	f.Stat("d/x")
	must(t, f.Close())
}

func openFDs(t *testing.T) int {
	t.Helper()
	list, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(list)
}

// TestProbeDirCacheManyFS: more FSes than inotify instances a user may
// make (128 by default) share the one instance; each sees its own tree
// changed, FSes on the same directory and on one another's directories
// included, and closing them all leaves no descriptor or watch behind.
func TestProbeDirCacheManyFS(t *testing.T) {
	const n = 150
	makeWatcher(t)
	fdsBefore, watchesBefore := openFDs(t), inotifyWatches(t)
	base, root := probeTree(t)
	var fss []*dirfs.FS
	var roots []string
	for i := range n {
		r := root
		switch i % 3 {
		case 1:
			r = filepath.Join(root, "a")
		case 2:
			r = filepath.Join(root, "a", "b")
		}
		f, err := dirfs.New(r)
		must(t, err)
		fss = append(fss, f)
		roots = append(roots, r)
	}
	names := map[string][]string{root: {"a/b/c/f", "x/b/c/f"}, filepath.Join(root, "a"): {"b/c/f"}, filepath.Join(root, "a", "b"): {"c/f"}}
	check := func(what string) {
		for i, f := range fss {
			for _, name := range names[roots[i]] {
				if msg := diffOS(f, roots[i], name); msg != "" {
					t.Fatalf("%s, FS %d at %s: %s", what, i, roots[i], msg)
				}
				if msg := diffOS(f, roots[i], name); msg != "" {
					t.Fatalf("%s, FS %d at %s: %s", what, i, roots[i], msg)
				}
			}
		}
	}
	check("fresh")
	must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "a", "b", "c"), unix.AT_FDCWD, filepath.Join(base, "out", "b", "c"), unix.RENAME_EXCHANGE))
	check("a/b/c exchanged with out/b/c")
	// (Not a/b or a: an FS keeps its root where it was, so os on the
	// joined path would then speak of another directory.)
	must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "a", "b", "c"), unix.AT_FDCWD, filepath.Join(root, "x", "b", "c"), unix.RENAME_EXCHANGE))
	check("a/b/c exchanged with x/b/c")
	// Half closed: the others' watches stay and still tell.
	for i := 0; i < n; i += 2 {
		must(t, fss[i].Close())
	}
	fss2, roots2 := fss[:0:0], roots[:0:0]
	for i := 1; i < n; i += 2 {
		fss2 = append(fss2, fss[i])
		roots2 = append(roots2, roots[i])
	}
	fss, roots = fss2, roots2
	must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "a", "b", "c"), unix.AT_FDCWD, filepath.Join(base, "out", "b", "c"), unix.RENAME_EXCHANGE))
	check("half closed, a/b/c exchanged again")
	for _, f := range fss {
		must(t, f.Close())
	}
	if fds, w := openFDs(t), inotifyWatches(t); fds > fdsBefore || w > watchesBefore {
		t.Errorf("after closing every FS: %d descriptors (%d before), %d inotify watches (%d before)", fds, fdsBefore, w, watchesBefore)
	}
}

// TestProbeDirCacheCloseWhileStat closes FSes while goroutines stat beneath
// kept directories and a goroutine renames them: a stat begun after Close
// returned fails with ErrClosed, any other answers right, and nothing is
// left open once the stats are done.
func TestProbeDirCacheCloseWhileStat(t *testing.T) {
	rounds := 200
	if testsize.Short() || raceEnabled { // the race detector costs 10x
		rounds = 30
	}
	makeWatcher(t)
	fdsBefore, watchesBefore := openFDs(t), inotifyWatches(t)
	var late atomic.Int64
	for range rounds {
		base, root := probeTree(t)
		f, err := dirfs.New(root)
		must(t, err)
		warm(t, f, root, "a/b/c/f")
		var closed atomic.Bool
		var wg, started sync.WaitGroup
		for range 3 {
			started.Add(1)
			wg.Go(func() {
				started.Done()
				for i := 0; ; i++ {
					begunAfter := closed.Load()
					fi, err := []func(string) (fs.FileInfo, error){f.Stat, f.Lstat}[i%2]("a/b/c/f")
					if errors.Is(err, fs.ErrClosed) {
						return
					}
					if begunAfter {
						late.Add(1)
						return
					}
					if err == nil && fi.Size() != 6 && fi.Size() != 9 {
						t.Errorf("stat a/b/c/f = %v", describe(fi))
						return
					}
				}
			})
		}
		started.Wait()
		must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "a"), unix.AT_FDCWD, filepath.Join(root, "x"), unix.RENAME_EXCHANGE))
		must(t, f.Close())
		closed.Store(true)
		wg.Wait()
		must(t, os.RemoveAll(base))
	}
	if late.Load() > 0 {
		t.Errorf("%d stats begun after Close had returned did not fail with ErrClosed", late.Load())
	}
	if fds, w := openFDs(t), inotifyWatches(t); fds > fdsBefore || w > watchesBefore {
		t.Errorf("after closing every FS: %d descriptors (%d before), %d inotify watches (%d before)", fds, fdsBefore, w, watchesBefore)
	}
}

// TestProbeDirCacheQueueOverflow queues more events than inotify holds (16,384
// by default) on kept directories from outside the FS, then moves a kept
// directory out of the root: its event is lost in the overflow, and the
// next stats must still see the tree as it is.
func TestProbeDirCacheQueueOverflow(t *testing.T) {
	limit := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		fmt.Sscan(string(b), &limit)
	}
	if limit > 100000 {
		t.Skipf("max_queued_events is %d: too many events to queue at the quick size", limit)
	}
	base, root := probeTree(t)
	f := newFSAt(t, root)
	warm(t, f, root, "a/b/c/f")
	c := filepath.Join(root, "a", "b", "c")
	must(t, os.WriteFile(filepath.Join(c, "p"), nil, 0o644))
	// Each rename queues two events (moved from, moved to).
	for i := range limit/2 + 10 {
		must(t, os.Rename(filepath.Join(c, "pq"[i%2:i%2+1]), filepath.Join(c, "pq"[1-i%2:2-i%2])))
	}
	must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "a", "b"), unix.AT_FDCWD, filepath.Join(base, "out", "b"), unix.RENAME_EXCHANGE))
	for _, name := range []string{"a/b/c/f", "a/b/c/p", "a/b/c/q", "a/b/f"} {
		sameAsOS(t, f, root, name)
		sameAsOS(t, f, root, name)
	}
}

// TestProbeDirCacheDeepPath stats a file beneath 1,000 directories, the
// deepest a name of PATH_MAX bytes gets near, and counts the descriptors and
// watches it leaves: the package doc says an FS keeps up to 256.
func TestProbeDirCacheDeepPath(t *testing.T) {
	const depth = 1000
	_, root := probeTree(t)
	deep := strings.Repeat("d/", depth) + "f"
	must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(deep)), 0o755))
	must(t, os.WriteFile(filepath.Join(root, deep), make([]byte, 5), 0o644))
	fdsBefore, watchesBefore := openFDs(t), inotifyWatches(t)
	f := newFSAt(t, root)
	for range 2 {
		fi, err := f.Lstat(deep)
		if err != nil || fi.Size() != 5 {
			t.Fatalf("lstat of a name %d deep = %v, %v", depth, describe(fi), err)
		}
	}
	fds, w := openFDs(t)-fdsBefore, inotifyWatches(t)-watchesBefore
	if fds > 256+2 || w > 256+1 {
		t.Errorf("one FS keeps %d more descriptors and %d more watches after a stat %d deep; the doc says up to 256", fds, w, depth)
	}
	// Moved from the middle, the deep name is gone.
	must(t, os.Rename(filepath.Join(root, strings.Repeat("d/", depth/2)), filepath.Join(root, "mid")))
	if _, err := f.Lstat(deep); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lstat after the middle moved: %v", err)
	}
}

// TestProbeDirCacheDecorated: decorated names and names at the length limits
// fail, or succeed, as they do on an FS that has kept nothing.
func TestProbeDirCacheDecorated(t *testing.T) {
	_, root := probeTree(t)
	long := strings.Repeat("n", 255)
	must(t, os.MkdirAll(filepath.Join(root, "a", long, "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "a", long, "b", long), make([]byte, 4), 0o644))
	// A directory part of PATH_MAX-1 bytes and a name at PATH_MAX.
	var segs []string
	for n := 0; n+256 < 4000; n += 256 {
		segs = append(segs, long)
	}
	deepDir := strings.Join(segs, "/")
	must(t, os.MkdirAll(filepath.Join(root, deepDir), 0o755))
	names := []string{
		"a/b/c/f", "a/b/c/f/", "a/b/c/./f", "a/b/c/../c/f", "a//b/c/f", "a/b/c//f", "/a/b/c/f",
		"a/b/c/", "a/b/c/.", "a/b/c/..", "a/b/c/f\x00", "a/b/\x00/f", "", ".", "..", "a/..", "./a/b/c/f",
		"a/b/c/" + long, "a/b/c/" + long + "n", "a/" + long + "/b/" + long, "a/" + long + "/b/" + long + "n",
		"a/" + long + "n/b/f", deepDir + "/x", deepDir + "/" + strings.Repeat("y", 4095-len(deepDir)-1),
		deepDir + "/" + strings.Repeat("y", 4096-len(deepDir)-1), deepDir + "/" + strings.Repeat("y", 4097-len(deepDir)-1),
		"a/b/c/f/g", "a/b/c/f/..",
	}
	cold := func() *dirfs.FS { return newFSAt(t, root) }
	warmFS := cold()
	warm(t, warmFS, root, "a/b/c/f")
	for _, name := range names {
		warmFS.Lstat("a/" + long + "/b/" + long)
		if len(name) > 1 && !strings.HasPrefix(name, "/") {
			if d := strings.LastIndexByte(name, '/'); d > 0 {
				warmFS.Lstat(name[:d] + "/f") // keep the directory part where it is valid
			}
		}
		for _, op := range []string{"stat", "lstat"} {
			c := cold()
			stat := map[string]func(*dirfs.FS, string) (fs.FileInfo, error){
				"stat": (*dirfs.FS).Stat, "lstat": (*dirfs.FS).Lstat,
			}[op]
			cfi, cerr := stat(c, name)
			for range 2 {
				wfi, werr := stat(warmFS, name)
				if errnoOf(werr) != errnoOf(cerr) || errors.Is(werr, fs.ErrInvalid) != errors.Is(cerr, fs.ErrInvalid) ||
					errors.Is(werr, dirfs.ErrEscapes) != errors.Is(cerr, dirfs.ErrEscapes) ||
					werr == nil && !sameInode(wfi, cfi) {
					t.Errorf("%s %q: kept %v, %v; fresh %v, %v", op, trim(name), describe(wfi), werr, describe(cfi), cerr)
				}
			}
			c.Close()
		}
	}
}

func trim(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", s[:20], len(s))
	}
	return s
}
