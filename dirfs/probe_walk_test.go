//go:build linux

package dirfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"golang.org/x/sys/unix"
)

// probeFS is what the differential probes call: an FS, or os on the host
// path of the same name.
type probeFS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error)
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	ReadLink(name string) (string, error)
	Mkdir(name string, perm fs.FileMode) error
	Remove(name string) error
	Rename(oldname, newname string) error
	Chmod(name string, mode fs.FileMode) error
	Chtimes(name string, atime, mtime time.Time) error
	Lchown(name string, uid, gid int) error
	Chown(name string, uid, gid int) error
	Lchtimes(name string, atime, mtime time.Time) error
	Symlink(oldname, newname string) error
	Whiteout(name string) error
	RemoveAll(name string) error
	MkdirAll(name string, perm fs.FileMode) error
}

// osProbe is os on the host paths beneath root.
type osProbe struct{ root string }

func (o osProbe) p(name string) string { return filepath.Join(o.root, name) }

// rel makes the Path of os's error the name beneath the root, as the FS
// gives it.
func (o osProbe) rel(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if r, rerr := filepath.Rel(o.root, pe.Path); rerr == nil {
			pe.Path = r
		}
	}
	return err
}

func (o osProbe) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	f, err := os.OpenFile(o.p(name), flag, perm)
	if err != nil {
		return nil, o.rel(err)
	}
	return f, nil
}
func (o osProbe) Stat(name string) (fs.FileInfo, error) {
	v, err := os.Stat(o.p(name))
	return v, o.rel(err)
}
func (o osProbe) Lstat(name string) (fs.FileInfo, error) {
	v, err := os.Lstat(o.p(name))
	return v, o.rel(err)
}
func (o osProbe) ReadDir(name string) ([]fs.DirEntry, error) {
	v, err := os.ReadDir(o.p(name))
	return v, o.rel(err)
}
func (o osProbe) ReadLink(name string) (string, error) {
	v, err := os.Readlink(o.p(name))
	return v, o.rel(err)
}
func (o osProbe) Mkdir(name string, perm fs.FileMode) error { return o.rel(os.Mkdir(o.p(name), perm)) }
func (o osProbe) Remove(name string) error                  { return o.rel(os.Remove(o.p(name))) }
func (o osProbe) Rename(a, b string) error                  { return o.rel(os.Rename(o.p(a), o.p(b))) }
func (o osProbe) Chmod(name string, m fs.FileMode) error    { return o.rel(os.Chmod(o.p(name), m)) }
func (o osProbe) Chtimes(name string, a, m time.Time) error {
	return o.rel(os.Chtimes(o.p(name), a, m))
}
func (o osProbe) Lchown(name string, u, g int) error        { return o.rel(os.Lchown(o.p(name), u, g)) }
func (o osProbe) Symlink(target, name string) error         { return o.rel(os.Symlink(target, o.p(name))) }
func (o osProbe) Chown(name string, u, g int) error         { return o.rel(os.Chown(o.p(name), u, g)) }
func (o osProbe) RemoveAll(name string) error               { return o.rel(os.RemoveAll(o.p(name))) }
func (o osProbe) MkdirAll(name string, m fs.FileMode) error { return o.rel(os.MkdirAll(o.p(name), m)) }

func (o osProbe) Lchtimes(name string, a, m time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(a.UnixNano()), unix.NsecToTimespec(m.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, o.p(name), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "lchtimes", Path: name, Err: err}
	}
	return nil
}

// Whiteout is what the FS's does, on the host path: a 0/0 character
// device replaces a file or a symlink (made beside it and renamed over it)
// or an empty directory (removed first), or takes a free name.
func (o osProbe) Whiteout(name string) error {
	p := o.p(name)
	werr := func(err error) error { return &fs.PathError{Op: "whiteout", Path: name, Err: err} }
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return werr(err.(*fs.PathError).Err)
	case fi.IsDir():
		if err := unix.Rmdir(p); err != nil {
			return werr(err)
		}
	default:
		tmp := filepath.Join(filepath.Dir(p), ".wh.tmp")
		if err := unix.Mknod(tmp, unix.S_IFCHR, 0); err != nil {
			return werr(err)
		}
		if err := unix.Rename(tmp, p); err != nil {
			unix.Unlink(tmp)
			return werr(err)
		}
		return nil
	}
	if err := unix.Mknod(p, unix.S_IFCHR, 0); err != nil {
		return werr(err)
	}
	return nil
}

// probeLink is a symlink of the probe tree; escapes marks a target that
// leaves the root, which os follows and the FS must refuse.
type probeLink struct {
	name, target string
	escapes      bool
}

var (
	name255 = strings.Repeat("n", 255)
	name256 = strings.Repeat("m", 256)
)

// probeLinks are the symlinks of the probe tree (base is the directory
// holding the root).
func probeLinks(base string) []probeLink {
	links := []probeLink{
		{"lfile", "file", false},
		{"ldotfile", "./file", false},
		{"ldotdot", "d/../file", false},
		{"ldslash", ".//file", false},
		{"ldf", "d/f", false},
		{"ldslashf", "d//f", false},
		{"ldotf", "d/./f", false},
		{"ldeup", "d/e/../f", false},
		{"lfileslash", "file/", false},
		{"lfiledot", "file/.", false},
		{"lfiledotdot", "file/..", false},
		{"ld", "d", false},
		{"ldslash2", "d/", false},
		{"ldslashslash", "d//", false},
		{"lddot", "d/.", false},
		{"ldup", "d/..", false},
		{"ldeupup", "d/e/../..", false},
		{"ldot", ".", false},
		{"ldotslash", "./", false},
		{"lnothere", "nothere", false},
		{"ldnothere", "d/nothere", false},
		{"lnothereslash", "nothere/", false},
		{"lnodir", "nodir/x", false},
		{"llfile", "lfile", false},
		{"llfileslash", "lfile/", false},
		{"llnothereslash", "lnothere/", false},
		{"lld", "ld", false},
		{"lldslash", "ld/", false},
		{"lldf", "ld/f", false},
		{"llddotdot", "ld/../file", false},
		{"lldup", "ld/..", false},
		{"lldeupup", "ld/e/../../file", false},
		{"lup", "d/up", false},
		{"lupslash", "d/up/", false},
		{"llong", strings.Repeat("./", 2046) + "d/f", false},
		{"llong255", strings.Repeat("./", 1920) + name255, false},
		{"llongdots", strings.Repeat("d/../", 818) + "d/f", false},
		{"l256", name256, false},
		{"l255", name255, false},
		{"loop", "loop", false},
		{"loopslash", "loop/", false},
		{"ma", "mb", false},
		{"mb", "ma", false},
		{"dloop", "d/../dloop", false},
		{"tochain", "c/l38", false},
		{"tochain40", "c/l39", false},
		{"tochainup", "d/../c/l38", false},
		{"labs", padded(base, "secret"), true},
		{"labsroot", padded(base, "root/file"), true},
		{"lslash", "/", true},
		{"lupsecret", "../secret", true},
		{"lupup", "..", true},
		{"ldupup", "d/../..", true},
		{"ldupsecret", "d/../../secret", true},
		{"lupback", "../root/file", true},
		{"lupbackd", "../root/d", true},
		{"lesc", "lupsecret", true},
		{"lescdir", "ld/../lupup", true},
		{"ldupupsecret", "d/up/../../secret", true},
	}
	return links
}

// padded is base/name with as many slashes between as make its length
// the same for every base, as the trees' dumps need.
func padded(base, name string) string {
	return base + strings.Repeat("/", max(1, 200-len(base))) + name
}

// buildProbeTree makes base/root (the FS's root, returned) and what lies
// outside it: base/secret.
func buildProbeTree(t testing.TB, base string) string {
	t.Helper()
	root := filepath.Join(base, "root")
	must(t, os.WriteFile(filepath.Join(base, "secret"), []byte("secret"), 0o600))
	for _, d := range []string{"", "d", "d/e", "c"} {
		must(t, os.Mkdir(filepath.Join(root, d), 0o755))
	}
	for name, data := range map[string]string{"file": "F", "d/f": "DF", "d/e/g": "G", name255: "N"} {
		must(t, os.WriteFile(filepath.Join(root, name), []byte(data), 0o644))
	}
	must(t, os.Symlink("../file", filepath.Join(root, "d/up")))
	// c/lN → ../c/lN-1 → ... → c/l00 → ../file: opening c/lN follows
	// N+1 links, each climbing with "..".
	must(t, os.Symlink("../file", filepath.Join(root, "c/l00")))
	for i := 1; i <= 40; i++ {
		must(t, os.Symlink("../c/l"+itoa(i-1), filepath.Join(root, "c/l"+itoa(i))))
	}
	for _, l := range probeLinks(base) {
		must(t, os.Symlink(l.target, filepath.Join(root, l.name)))
	}
	return root
}

// probeNames are the names the probes give every operation, each with
// whether os on the host path would leave the root.
func probeNames(base string) []probeLink {
	names := []probeLink{
		{name: "file"}, {name: "d"}, {name: "d/f"}, {name: "nothere"}, {name: "d/nothere"},
		{name: "file/x"}, {name: name255}, {name: "d/" + name256},
		{name: "c/l38"}, {name: "c/l39"}, {name: "c/l40"}, {name: "c/l38/x"}, {name: "c/l39/x"},
		{name: "d/up"}, {name: "d/up/x"},
	}
	for _, l := range probeLinks(base) {
		names = append(names,
			probeLink{name: l.name, escapes: l.escapes},
			probeLink{name: l.name + "/f", escapes: l.escapes},
			probeLink{name: l.name + "/new", escapes: l.escapes})
	}
	return names
}

// describeErr is an error's class: its Op and errno (or the sentinel), and
// whether its Path is name, as the FS's errors must be.
func describeErr(err error, name string) string {
	if err == nil {
		return "ok"
	}
	op := "?"
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		op = pe.Op
		if name != "" && pe.Path != name {
			op += "(path " + pe.Path + ")"
		}
	case errors.As(err, &le):
		op = le.Op
	}
	var errno syscall.Errno
	switch {
	case errors.Is(err, dirfs.ErrEscapes):
		return op + " ESCAPES"
	case errors.As(err, &errno):
		return op + " " + errnoName(errno)
	}
	return op + " " + err.Error()
}

func errnoName(e syscall.Errno) string {
	for _, c := range []struct {
		e syscall.Errno
		s string
	}{
		{syscall.ENOENT, "ENOENT"}, {syscall.ENOTDIR, "ENOTDIR"}, {syscall.EISDIR, "EISDIR"},
		{syscall.ELOOP, "ELOOP"}, {syscall.EEXIST, "EEXIST"}, {syscall.EINVAL, "EINVAL"},
		{syscall.ENAMETOOLONG, "ENAMETOOLONG"}, {syscall.EXDEV, "EXDEV"}, {syscall.EACCES, "EACCES"},
		{syscall.EPERM, "EPERM"}, {syscall.EBADF, "EBADF"}, {syscall.ENOTEMPTY, "ENOTEMPTY"},
		{syscall.EBUSY, "EBUSY"}, {syscall.EOPNOTSUPP, "EOPNOTSUPP"}, {syscall.EMFILE, "EMFILE"},
	} {
		if c.e == e {
			return c.s
		}
	}
	return fmt.Sprintf("errno %d", int(e))
}

// describeInfo is what a FileInfo says, but its times.
func describeInfo(fi fs.FileInfo) string {
	s := fi.Mode().String()
	if fi.Mode().IsRegular() {
		s += fmt.Sprintf(" %d", fi.Size())
	}
	return s
}

// describeFile is what an open file gives: its mode, and its bytes or
// entries (or the error reading them gives).
func describeFile(f layer.File) string {
	fi, err := f.Stat()
	if err != nil {
		return "stat " + describeErr(err, "")
	}
	s := describeInfo(fi)
	if fi.IsDir() {
		list, err := f.ReadDir(-1)
		if err != nil {
			return s + " readdir " + describeErr(err, "")
		}
		var names []string
		for _, e := range list {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		return s + fmt.Sprintf(" %d entries", len(names))
	}
	data, err := io.ReadAll(f)
	if err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		return s + " read " + errnoName(errno)
	}
	return s + " " + strings.ToValidUTF8(string(data), "?")
}

// probeEpoch is the time Chtimes sets, told apart in the dumps by being
// long past.
var probeEpoch = time.Date(1990, 1, 2, 3, 4, 5, 0, time.UTC)

// probeOp is one call of the probes.
type probeOp struct {
	name   string
	writes bool // may change the tree
	do     func(f probeFS, name string) string
}

var openProbes = []struct {
	name string
	flag int
}{
	{"rdonly", os.O_RDONLY},
	{"directory", os.O_RDONLY | syscall.O_DIRECTORY},
	{"nofollow", os.O_RDONLY | syscall.O_NOFOLLOW},
	{"nofollow|directory", os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_DIRECTORY},
	{"path", unix.O_PATH},
	{"path|nofollow", unix.O_PATH | syscall.O_NOFOLLOW},
	{"path|directory", unix.O_PATH | syscall.O_DIRECTORY},
	{"path|nofollow|directory", unix.O_PATH | syscall.O_NOFOLLOW | syscall.O_DIRECTORY},
	{"create", os.O_WRONLY | os.O_CREATE},
	{"create|excl", os.O_WRONLY | os.O_CREATE | os.O_EXCL},
	{"create|nofollow", os.O_WRONLY | os.O_CREATE | syscall.O_NOFOLLOW},
	{"create|directory", os.O_RDONLY | os.O_CREATE | syscall.O_DIRECTORY},
	{"trunc", os.O_WRONLY | os.O_TRUNC},
	{"tmpfile", os.O_WRONLY | 0o20000000 | syscall.O_DIRECTORY},
}

func probeOps() []probeOp {
	var ops []probeOp
	for _, o := range openProbes {
		ops = append(ops, probeOp{"open " + o.name, o.flag&(os.O_CREATE|os.O_TRUNC) != 0,
			func(f probeFS, name string) string {
				fl, err := f.OpenFile(name, o.flag, 0o640)
				if err != nil {
					return describeErr(err, name)
				}
				defer fl.Close()
				if o.flag&os.O_WRONLY != 0 {
					fi, err := fl.Stat()
					if err != nil {
						return "ok, stat " + describeErr(err, "")
					}
					return "ok " + describeInfo(fi)
				}
				return "ok " + describeFile(fl)
			}})
	}
	info := func(fi fs.FileInfo, err error, name string, f probeFS) string {
		if err != nil {
			return describeErr(err, name)
		}
		return "ok " + describeInfo(fi)
	}
	ops = append(ops,
		probeOp{"stat", false, func(f probeFS, name string) string { fi, err := f.Stat(name); return info(fi, err, name, f) }},
		probeOp{"lstat", false, func(f probeFS, name string) string { fi, err := f.Lstat(name); return info(fi, err, name, f) }},
		probeOp{"readdir", false, func(f probeFS, name string) string {
			list, err := f.ReadDir(name)
			if err != nil {
				return describeErr(err, name)
			}
			return fmt.Sprintf("ok %d entries", len(list))
		}},
		probeOp{"readlink", false, func(f probeFS, name string) string {
			s, err := f.ReadLink(name)
			if err != nil {
				return describeErr(err, name)
			}
			if filepath.IsAbs(s) {
				return "ok absolute"
			}
			return "ok " + fmt.Sprint(len(s))
		}},
		probeOp{"mkdir", true, func(f probeFS, name string) string {
			return describeErr(f.Mkdir(name, 0o750), name)
		}},
		probeOp{"remove", true, func(f probeFS, name string) string { return describeErr(f.Remove(name), name) }},
		probeOp{"rename from", true, func(f probeFS, name string) string {
			return describeErr(f.Rename(name, "moved"), name)
		}},
		probeOp{"rename to", true, func(f probeFS, name string) string {
			return describeErr(f.Rename("d/e/g", name), name)
		}},
		probeOp{"chmod", true, func(f probeFS, name string) string {
			return describeErr(f.Chmod(name, 0o604), name)
		}},
		probeOp{"chtimes", true, func(f probeFS, name string) string {
			return describeErr(f.Chtimes(name, probeEpoch, probeEpoch), name)
		}},
		probeOp{"lchown", true, func(f probeFS, name string) string {
			return describeErr(f.Lchown(name, 1, 2), name)
		}},
		probeOp{"symlink", true, func(f probeFS, name string) string {
			return describeErr(f.Symlink("tgt", name), name)
		}},
		probeOp{"chown", true, func(f probeFS, name string) string {
			return describeErr(f.Chown(name, 3, 4), name)
		}},
		probeOp{"lchtimes", true, func(f probeFS, name string) string {
			return describeErr(f.Lchtimes(name, probeEpoch, probeEpoch), name)
		}},
		probeOp{"whiteout", true, func(f probeFS, name string) string {
			return describeErr(f.Whiteout(name), name)
		}},
		probeOp{"removeall", true, func(f probeFS, name string) string {
			// os.RemoveAll's errors name the system call and the
			// element that failed, the FS's RemoveAll and name: the
			// errno alone is compared.
			d := describeErr(f.RemoveAll(name), "")
			return d[strings.LastIndexByte(d, ' ')+1:]
		}},
		probeOp{"mkdirall", true, func(f probeFS, name string) string {
			return describeErr(f.MkdirAll(name+"/sub", 0o750), name+"/sub")
		}},
	)
	return ops
}

// dumpTree lists everything beneath dir: name, type, mode, owner, size
// (of a symlink, its target's length), and whether its mtime is the one
// Chtimes set. No call of the probes writes bytes or retargets a link, so
// that is all they can change.
func dumpTree(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// What cannot be read (a directory without permission) is
		// listed with the error.
		if err != nil {
			out = append(out, strings.TrimPrefix(p, dir)+" "+describeErr(err, ""))
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			out = append(out, strings.TrimPrefix(p, dir)+" "+describeErr(err, ""))
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		s := fmt.Sprintf("%s %s %d:%d", strings.TrimPrefix(p, dir), fi.Mode(), st.Uid, st.Gid)
		if !fi.IsDir() {
			s += fmt.Sprintf(" %d", fi.Size())
		}
		if fi.ModTime().Equal(probeEpoch) {
			s += " epoch"
		}
		out = append(out, s)
		return nil
	})
	must(t, err)
	return out
}

// probeRun is one call's answer and, for a call that writes, the tree it
// left, within and outside the root.
type probeRun struct {
	answer string
	tree   []string
}

// runProbes calls every operation on every name, each way on a tree of its
// own: through os on the host path and through an FS of each way of
// resolving, and reports each difference: with os where os stays beneath
// the root, else with openat2.
func runProbes(t *testing.T, ops []probeOp, names []probeLink) (calls, diffs int) {
	return runProbesOn(t, buildProbeTree, ops, names, false)
}

// runProbesOn is runProbes on the trees build makes (it returns the root),
// without the walking FS if noWalk.
func runProbesOn(t *testing.T, buildTree func(testing.TB, string) string, ops []probeOp, names []probeLink, noWalk bool) (calls, diffs int) {
	type way struct {
		name string
		opts []dirfs.Option
		base string
		f    probeFS
	}
	ways := []*way{{name: "os"}, {name: "openat2"}}
	if !noWalk {
		ways = append(ways, &way{name: "walk", opts: []dirfs.Option{dirfs.WalkAlways()}})
	}
	build := func(w *way) {
		w.base = tempDir(t)
		root := buildTree(t, w.base)
		if w.name == "os" {
			w.f = osProbe{root}
			return
		}
		f, err := dirfs.New(root, w.opts...)
		must(t, err)
		t.Cleanup(func() { f.Close() })
		w.f = f
	}
	for _, w := range ways {
		build(w)
	}
	pristine := dumpTree(t, ways[0].base)
	for _, op := range ops {
		for _, n := range names {
			got := map[string]probeRun{}
			for _, w := range ways {
				if w.name == "os" && n.escapes {
					continue
				}
				calls++
				r := probeRun{answer: op.do(w.f, n.name)}
				if op.writes {
					// A call that changed the tree gets a fresh one
					// for the next.
					r.tree = dumpTree(t, w.base)
					if !slices.Equal(r.tree, pristine) {
						if c, ok := w.f.(io.Closer); ok {
							c.Close()
						}
						os.RemoveAll(w.base)
						build(w)
					}
				}
				got[w.name] = r
			}
			ref := "os"
			if n.escapes {
				ref = "openat2"
			}
			for _, w := range ways {
				r, ok := got[w.name]
				if !ok || w.name == ref {
					continue
				}
				if r.answer != got[ref].answer {
					diffs++
					t.Errorf("%s(%q): %s gives %q, %s %q", op.name, short(n.name), w.name, r.answer, ref, got[ref].answer)
				}
				if d := treeDiff(got[ref].tree, r.tree); d != "" {
					diffs++
					t.Errorf("%s(%q): %s left the tree other than %s did: %s", op.name, short(n.name), w.name, ref, d)
				}
			}
			if n.escapes {
				for w, r := range got {
					if r.tree == nil {
						continue
					}
					if d := treeDiff(outsideOf(pristine), outsideOf(r.tree)); d != "" {
						diffs++
						t.Errorf("%s(%q): %s changed the outside: %s", op.name, short(n.name), w, d)
					}
				}
			}
		}
	}
	return calls, diffs
}

func outsideOf(tree []string) []string {
	var out []string
	for _, s := range tree {
		if !strings.HasPrefix(s, "/root/") && !strings.HasPrefix(s, "/root ") {
			out = append(out, s)
		}
	}
	return out
}

func treeDiff(a, b []string) string {
	var d []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			d = append(d, "-"+s)
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			d = append(d, "+"+s)
		}
	}
	return strings.Join(d, ", ")
}

func short(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%.20s...(%d bytes)", s, len(s))
	}
	return s
}

// opsNamed returns the probes' operations of those names.
func opsNamed(t *testing.T, names ...string) []probeOp {
	var ops []probeOp
	for _, n := range names {
		i := slices.IndexFunc(probeOps(), func(op probeOp) bool { return op.name == n })
		if i < 0 {
			t.Fatalf("no operation %q", n)
		}
		ops = append(ops, probeOps()[i])
	}
	return ops
}

// namesNamed returns the probes' names of those names.
func namesNamed(t *testing.T, names ...string) []probeLink {
	var out []probeLink
	for _, n := range names {
		i := slices.IndexFunc(probeNames("/base"), func(l probeLink) bool { return l.name == n })
		if i < 0 {
			t.Fatalf("no name %q", n)
		}
		out = append(out, probeNames("/base")[i])
	}
	return out
}

// TestWalkTrailingSlash: a symlink whose target ends in a slash ("lfile/",
// "d/up/") demands a directory of what it names. The walk dropped the
// slash when it followed a link in the middle of a name, so that opening,
// truncating, chmod'ing and stat'ing through such a link reached the file
// where Linux gives ENOTDIR; and O_CREAT on a name ending in a slash is
// EISDIR before anything is looked up, where the walk gave ENOTDIR or
// ENOENT, or created the dangling target ("lnothere/": nothere).
func TestWalkTrailingSlash(t *testing.T) {
	ops := opsNamed(t, "open rdonly", "open nofollow", "open path|nofollow", "open create", "open create|excl",
		"open trunc", "stat", "chmod", "chtimes", "readdir", "mkdir")
	names := namesNamed(t, "llfileslash", "lupslash", "lfileslash", "lnothereslash", "llnothereslash",
		"loopslash", "lldslash", "ldslash2", "ldslashslash", "lldslash/new", "lupslash/new")
	runProbes(t, ops, names)
}

// TestWalkChecksFlags: openat2 refuses O_CREAT with O_DIRECTORY (EINVAL)
// before it looks anything up; the walk, which opens each element with
// openat, failed on the first missing or non-directory element instead
// (ENOENT, ENOTDIR, or ErrEscapes where openat2 gives EINVAL).
func TestWalkChecksFlags(t *testing.T) {
	runProbes(t, opsNamed(t, "open create|directory"),
		namesNamed(t, "file", "nothere", "d", "file/x", "lnothere/f", "ld/new", "labs/f", "lupup/new", "loop/f"))
}

// TestTmpfileMode: OpenFile with O_TMPFILE makes an unnamed file with perm,
// as os's does; openat2 was given no mode (it takes one with O_CREAT or
// O_TMPFILE only), so the file had mode 0.
func TestTmpfileMode(t *testing.T) {
	runProbes(t, opsNamed(t, "open tmpfile"), namesNamed(t, "d", "ld", "lldslash", "file", "nothere", "lupup"))
}

// TestWalkSearchPermission runs the probes as a user other than root (uid
// and gid 65534, in a child process), on directories without search or
// read permission: every lookup in them, "d/.." included, is EACCES, as it
// is for os and openat2.
func TestWalkSearchPermission(t *testing.T) {
	const env = "PACKFS_PROBE_UID"
	switch {
	case os.Getenv(env) != "":
		if err := syscall.Setgroups(nil); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Setresgid(65534, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Setresuid(65534, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	case os.Geteuid() == 0:
		args := []string{"-test.run=^TestWalkSearchPermission$", "-test.count=1"}
		if testing.Verbose() {
			args = append(args, "-test.v")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), env+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("as uid 65534: %v\n%s", err, out)
		}
		t.Logf("as uid 65534:\n%s", out)
		return
	}
	if os.Geteuid() == 0 {
		t.Fatal("still root")
	}
	build := func(t testing.TB, base string) string {
		root := filepath.Join(base, "root")
		for _, d := range []string{"", "d", "d/e", "nr", "sx", "sx/nx"} {
			must(t, os.Mkdir(filepath.Join(root, d), 0o755))
		}
		// sx/l: a lookup in sx, then ".." out of sx/nx, searched by
		// nothing before.
		must(t, os.Symlink("nx/..", filepath.Join(root, "sx/l")))
		for _, f := range []string{"file", "d/f", "nr/f"} {
			must(t, os.WriteFile(filepath.Join(root, f), []byte(f), 0o644))
		}
		for name, target := range map[string]string{
			"ld": "d", "ldf": "d/f", "ldup": "d/..", "lddotdot": "d/../file", "ldslash": "d/",
			"lddot": "d/.", "lde": "d/e", "ldeup": "d/e/..",
			"lnr": "nr", "lnrf": "nr/f", "lnrup": "nr/..", "lnrdotdot": "nr/../file",
			"lnxup": "sx/nx/..", "lsxl": "sx/l", "lsxlup": "sx/l/../file",
		} {
			must(t, os.Symlink(target, filepath.Join(root, name)))
		}
		// d: read, no search; nr: search, no read.
		must(t, os.Chmod(filepath.Join(root, "d"), 0o644))
		must(t, os.Chmod(filepath.Join(root, "nr"), 0o311))
		must(t, os.Chmod(filepath.Join(root, "sx/nx"), 0o644))
		t.Cleanup(func() {
			os.Chmod(filepath.Join(root, "sx/nx"), 0o755)
			os.Chmod(filepath.Join(root, "d"), 0o755)
			os.Chmod(filepath.Join(root, "nr"), 0o755)
		})
		return root
	}
	var names []probeLink
	for _, n := range []string{"d", "d/f", "d/e", "nr", "nr/f", "ld", "ldf", "ldup", "lddotdot", "ldslash",
		"lddot", "lde", "ldeup", "lnr", "lnrf", "lnrup", "lnrdotdot", "ld/f", "ldup/file", "lnr/f", "lnrup/file",
		"sx/l", "sx/l/x", "lnxup", "lsxl", "lsxlup"} {
		names = append(names, probeLink{name: n})
	}
	calls, diffs := runProbesOn(t, build, probeOps(), names, false)
	t.Logf("%d calls, %d differences", calls, diffs)
}

// TestWalkLeaksNoDescriptor makes every probe call on every name, most of
// them failing (ELOOP, ENOTDIR, ENOENT, EISDIR, EEXIST, ErrEscapes, at
// every step of the walk), through one walking FS, twice: the second
// round ends with at most the 256 directories an FS's stats may keep
// open beyond what the first ended with, and Close leaves none of the
// FS's descriptors open.
func TestWalkLeaksNoDescriptor(t *testing.T) {
	base := tempDir(t)
	tree := buildProbeTree(t, base)
	// The process's one inotify instance, its epoll and mountinfo
	// descriptors are made by the first stat that keeps a directory, and
	// outlive every FS: made here first, they are in before.
	warm, err := dirfs.New(tree)
	must(t, err)
	for _, n := range probeNames(base) {
		warm.Lstat(n.name)
	}
	must(t, warm.Close())
	before := openFDs(t)
	f := newFSAt(t, tree, dirfs.WalkAlways())
	ops, names := probeOps(), probeNames(base)
	round := func() {
		for _, op := range ops {
			for _, n := range names {
				op.do(f, n.name)
			}
		}
	}
	start := dirfs.Walks()
	round()
	after1 := openFDs(t)
	round()
	// Stats keep the descriptors of directories they resolve, up to 256
	// an FS, and changes beside them (the probe's own) drop some: a leak
	// per call would hold thousands.
	if n := openFDs(t); n > after1+256 {
		t.Errorf("%d descriptors open after two rounds of %d calls, %d after one", n, len(ops)*len(names), after1)
	}
	must(t, f.Close())
	if n := openFDs(t); n > before {
		t.Errorf("%d descriptors open after Close, %d before the FS", n, before)
	}
	if dirfs.Walks()-start < int64(len(names)) {
		t.Errorf("only %d walks", dirfs.Walks()-start)
	}
}

// TestWalkDeepPath walks names of up to PATH_MAX-1 bytes (2,046
// directories deep, a descriptor each), directly and through symlinks of
// 4,091 and 4,094-byte targets, one of them climbing 1,365 levels with
// "..", and a chain of 40 and 41 links that go down and back up: the walk
// answers as openat2 does (os cannot reach so deep through the host path).
// TestWalkDeepPathFewDescriptors does the same where a process may open
// 256 descriptors only.
func TestWalkDeepPath(t *testing.T) {
	deepPathChecks(t)
}

// TestWalkDeepPathFewDescriptors is TestWalkDeepPath in a child process
// whose limit on descriptors (RLIMIT_NOFILE) is 256: the walk descends
// 2,046 directories, which Linux does holding none.
func TestWalkDeepPathFewDescriptors(t *testing.T) {
	const env = "PACKFS_PROBE_NOFILE"
	if os.Getenv(env) == "" {
		args := []string{"-test.run=^TestWalkDeepPathFewDescriptors$", "-test.count=1"}
		if testing.Verbose() {
			args = append(args, "-test.v")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), env+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("with 256 descriptors: %v\n%s", err, out)
		}
		t.Logf("with 256 descriptors:\n%s", out)
		return
	}
	var lim syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	lim.Cur = 256
	must(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	deepPathChecks(t)
}

func deepPathChecks(t *testing.T) {
	deep := strings.TrimSuffix(strings.Repeat("a/", 2046), "/") // 4,091 bytes
	mid := strings.Repeat("a/", 1365) + "up"                    // 2,732 bytes
	build := func(t *testing.T) *dirfs.FS {
		f := newFS(t)
		// a/a/.../a, one directory at a time from the last.
		fd, err := unix.Open(f.Dir(), unix.O_PATH|unix.O_DIRECTORY, 0)
		must(t, err)
		for range 2046 {
			must(t, unix.Mkdirat(fd, "a", 0o755))
			next, err := unix.Openat(fd, "a", unix.O_PATH|unix.O_DIRECTORY, 0)
			unix.Close(fd)
			must(t, err)
			fd = next
		}
		unix.Close(fd)
		must(t, f.WriteFile(deep+"/fff", []byte("deep"), 0o644)) // 4,095 bytes
		must(t, f.Symlink(deep, "link"))
		must(t, f.Symlink(strings.TrimSuffix(strings.Repeat("../", 1365), "/"), mid)) // 4,094 bytes
		must(t, f.Symlink(path.Dir(mid), "linkmid"))
		must(t, f.WriteFile("top", []byte("top"), 0o644))
		// c<i> follows i+1 links, each down into a and back up.
		prev := "top"
		for i := range 41 {
			name := "c" + itoa(i)
			must(t, f.Symlink("a/../"+prev, name))
			prev = name
		}
		return f
	}
	walkFS, at2 := build(t), build(t)
	walkFS = newFSAt(t, walkFS.Dir(), dirfs.WalkAlways())
	type call struct {
		name string
		do   func(f *dirfs.FS) string
	}
	read := func(name string) call {
		return call{"ReadFile " + short(name), func(f *dirfs.FS) string {
			data, err := f.ReadFile(name)
			return string(data) + " " + describeErr(err, name)
		}}
	}
	stat := func(name string) call {
		return call{"Stat " + short(name), func(f *dirfs.FS) string {
			fi, err := f.Stat(name)
			if err != nil {
				return describeErr(err, name)
			}
			return describeInfo(fi)
		}}
	}
	calls := []call{
		read(deep + "/fff"), stat(deep), stat(deep + "/fff"), read("link/fff"), stat("link"),
		read(mid + "/top"), stat(mid), read("linkmid/up/top"), read("linkmid/up/link/fff"),
		read("c38"), read("c39"), read("c40"), stat("c39"), stat("c40"),
		{"Mkdir deep", func(f *dirfs.FS) string { return describeErr(f.Mkdir(deep+"/n", 0o755), deep+"/n") }},
		{"Mkdir via link", func(f *dirfs.FS) string {
			return describeErr(f.Mkdir("link/m", 0o755), "link/m")
		}},
		stat("link/m"),
		{"Remove deep", func(f *dirfs.FS) string { return describeErr(f.Remove(deep+"/n"), deep+"/n") }},
		{"Chmod via up", func(f *dirfs.FS) string {
			return describeErr(f.Chmod("linkmid/up/top", 0o600), "linkmid/up/top")
		}},
		stat("top"),
	}
	for _, c := range calls {
		if got, want := c.do(walkFS), c.do(at2); got != want {
			t.Errorf("%s: walk gives %q, openat2 %q", c.name, got, want)
		}
	}
}

// TestWalkDirMovedOut moves a directory of the root out of it and back
// without pause while goroutines read, stat, chmod and write through a
// symlink in it that climbs back with "..", directly and through another
// link: a/b/up -> ../../file names
// root/file while b is inside, and base/file, outside, once b is moved to
// base/outdir. A walk climbs back to the directories it came from, so no
// call may reach base/file; the calls reach root/file or fail.
func TestWalkDirMovedOut(t *testing.T) {
	iterations := 1000
	switch {
	case !testsize.Short() && raceEnabled:
		// As TestCVE201815664: the movers take both cores.
		iterations = 4000
	case !testsize.Short():
		iterations = 20000
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			base := tempDir(t)
			root := filepath.Join(base, "root")
			for _, d := range []string{"root/a/b", "outdir"} {
				must(t, os.MkdirAll(filepath.Join(base, d), 0o755))
			}
			must(t, os.WriteFile(filepath.Join(base, "file"), []byte("outside"), 0o644))
			must(t, os.WriteFile(filepath.Join(root, "file"), []byte("inside"), 0o644))
			must(t, os.Symlink("../../file", filepath.Join(root, "a/b/up")))
			must(t, os.Symlink("a/b/up", filepath.Join(root, "viab")))
			outFi, err := os.Stat(filepath.Join(base, "file"))
			must(t, err)
			f := newFSAt(t, root, m.opts...)
			var stop atomic.Bool
			var moves atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				in, out := filepath.Join(root, "a/b"), filepath.Join(base, "outdir/b")
				for !stop.Load() {
					if os.Rename(in, out) == nil {
						moves.Add(1)
						os.Rename(out, in)
					}
				}
			})
			var reached, escapes atomic.Int64
			var workers sync.WaitGroup
			for w := range 2 {
				workers.Go(func() {
					for i := range iterations / 2 {
						name := []string{"a/b/up", "viab"}[(i+w)%2]
						if data, err := f.ReadFile(name); err == nil {
							reached.Add(1)
							if string(data) != "inside" {
								escapes.Add(1)
								t.Errorf("ReadFile(%s) read %q", name, data)
							}
						}
						if fi, err := f.Stat(name); err == nil && os.SameFile(fi, outFi) {
							escapes.Add(1)
							t.Errorf("Stat(%s) reached the outside file", name)
						}
						switch (i + w) % 3 {
						case 0:
							f.Chmod(name, 0o600)
						case 1:
							// The same bytes over root/file, so that
							// readers see no other.
							if fl, err := f.OpenFile(name, os.O_WRONLY, 0); err == nil {
								fl.Write([]byte("inside"))
								fl.Close()
							}
						case 2:
							f.Chtimes(name, probeEpoch, probeEpoch)
						}
					}
				})
			}
			workers.Wait()
			stop.Store(true)
			wg.Wait()
			fi, err := os.Stat(filepath.Join(base, "file"))
			must(t, err)
			data, err := os.ReadFile(filepath.Join(base, "file"))
			must(t, err)
			if string(data) != "outside" || fi.Mode() != 0o644 || !fi.ModTime().Equal(outFi.ModTime()) {
				escapes.Add(1)
				t.Errorf("base/file changed: %q, %v, %v", data, fi.Mode(), fi.ModTime())
			}
			t.Logf("%d iterations, %d moves, %d reads reached root/file, %d escapes", iterations, moves.Load(), reached.Load(), escapes.Load())
			if moves.Load() == 0 {
				t.Error("no move happened: the test tested nothing")
			}
		})
	}
}

// TestWalkLastSwapped swaps the last element of a name, a file, with a
// symlink out of the root (absolute, and climbing with ".."), atomically
// and without pause, while goroutines read, write, chmod, chown and chtimes
// the name: each call reaches the file or fails, and nothing outside
// changes.
func TestWalkLastSwapped(t *testing.T) {
	iterations := 1000
	switch {
	case !testsize.Short() && raceEnabled:
		// As TestCVE201815664: the movers take both cores.
		iterations = 4000
	case !testsize.Short():
		iterations = 20000
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			base := tempDir(t)
			root := filepath.Join(base, "root")
			must(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
			must(t, os.WriteFile(filepath.Join(base, "file"), []byte("outside"), 0o644))
			must(t, os.WriteFile(filepath.Join(root, "d/x"), []byte("inside"), 0o644))
			must(t, os.Symlink(filepath.Join(base, "file"), filepath.Join(root, "d/abs")))
			must(t, os.Symlink("../../file", filepath.Join(root, "d/rel")))
			outFi, err := os.Stat(filepath.Join(base, "file"))
			must(t, err)
			f := newFSAt(t, root, m.opts...)
			var stop atomic.Bool
			var swaps atomic.Int64
			var wg sync.WaitGroup
			for _, l := range []string{"abs", "rel"} {
				wg.Go(func() {
					x, link := filepath.Join(root, "d/x"), filepath.Join(root, "d", l)
					for !stop.Load() {
						if unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) == nil {
							swaps.Add(1)
						}
					}
				})
			}
			var workers sync.WaitGroup
			for w := range 2 {
				workers.Go(func() {
					for i := range iterations / 2 {
						name := []string{"d/x", "d/abs", "d/rel"}[(i+w)%3]
						if data, err := f.ReadFile(name); err == nil && string(data) != "inside" {
							t.Errorf("ReadFile(%s) read %q", name, data)
						}
						if fi, err := f.Stat(name); err == nil && os.SameFile(fi, outFi) {
							t.Errorf("Stat(%s) reached the outside file", name)
						}
						switch (i + w) % 5 {
						case 0:
							f.Chmod(name, 0o600)
						case 1:
							if fl, err := f.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
								fl.Write([]byte("inside"))
								fl.Close()
							}
						case 2:
							f.Chtimes(name, probeEpoch, probeEpoch)
						case 3:
							f.Chown(name, 1, 1)
						case 4:
							if fl, err := f.OpenFile(name, os.O_RDWR|syscall.O_NOFOLLOW, 0); err == nil {
								fl.Write([]byte("inside"))
								fl.Close()
							}
						}
					}
				})
			}
			workers.Wait()
			stop.Store(true)
			wg.Wait()
			fi, err := os.Stat(filepath.Join(base, "file"))
			must(t, err)
			data, err := os.ReadFile(filepath.Join(base, "file"))
			must(t, err)
			st := fi.Sys().(*syscall.Stat_t)
			if string(data) != "outside" || fi.Mode() != 0o644 || !fi.ModTime().Equal(outFi.ModTime()) || st.Uid != 0 {
				t.Errorf("base/file changed: %q, %v, %v, uid %d", data, fi.Mode(), fi.ModTime(), st.Uid)
			}
			list, err := os.ReadDir(base)
			must(t, err)
			if len(list) != 2 {
				t.Errorf("base holds %d entries, want root and file", len(list))
			}
			t.Logf("%d iterations, %d swaps", iterations, swaps.Load())
			if swaps.Load() == 0 {
				t.Error("no swap happened: the test tested nothing")
			}
		})
	}
}

// TestWalkRenamesElsewhereProbes gives the probes' calls that do not write
// to an FS beside a goroutine renaming a file outside the root without
// pause, on the names prefixed with "r/", a symlink whose target climbs
// with ".." 818 times back to the root, so that openat2 fails with EAGAIN
// (the kernel's answer to a lookup through ".." during a rename anywhere)
// and most names are walked as they come, not by option: every answer is
// the one os gives on the host path (openat2's, before the renames began,
// where os would leave the root).
func TestWalkRenamesElsewhereProbes(t *testing.T) {
	base := tempDir(t)
	root := buildProbeTree(t, base)
	must(t, os.Symlink(strings.Repeat("d/../", 818)+".", filepath.Join(root, "r")))
	f := newFSAt(t, root)
	var ops []probeOp
	for _, op := range probeOps() {
		if !op.writes {
			ops = append(ops, op)
		}
	}
	var names []probeLink
	for _, n := range probeNames(base) {
		if !strings.HasSuffix(n.name, "/new") && !strings.HasSuffix(n.name, "/f") {
			n.name = "r/" + n.name
			names = append(names, n)
		}
	}
	want := make([][]string, len(ops))
	for i, op := range ops {
		for _, n := range names {
			var ref probeFS = osProbe{root}
			if n.escapes {
				ref = f
			}
			want[i] = append(want[i], op.do(ref, n.name))
		}
	}
	other := t.TempDir()
	must(t, os.WriteFile(filepath.Join(other, "a"), nil, 0o644))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		a, b := filepath.Join(other, "a"), filepath.Join(other, "b")
		for !stop.Load() {
			os.Rename(a, b)
			os.Rename(b, a)
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()
	// Until 20 calls were walked, or for a bounded number of rounds on a
	// machine where the renames rarely overlap the lookups.
	rounds, enough := 8, int64(20)
	switch {
	case !testsize.Short() && raceEnabled:
		rounds, enough = 20, 2000
	case !testsize.Short():
		rounds, enough = 100, 20000
	case raceEnabled:
		rounds = 2
	}
	start := dirfs.Walks()
	r := 0
	for ; r < rounds && dirfs.Walks()-start < enough; r++ {
		for i, op := range ops {
			for j, n := range names {
				if got := op.do(f, n.name); got != want[i][j] {
					t.Errorf("round %d: %s(%q) = %q, want %q", r, op.name, short(n.name), got, want[i][j])
				}
			}
		}
	}
	t.Logf("%d rounds of %d calls, %d walked", r, len(ops)*len(names), dirfs.Walks()-start)
}

// TestProbeWalkDifferential makes every probe call on every name of the
// probe tree, through os on the host path, through openat2 and walking,
// and compares the answers and the trees left. The quick run makes the
// calls that write on a sixth of the names, a different sixth for each
// call, and the others on half; under the race detector, which slows them
// tenfold, on a twelfth and a third.
func TestProbeWalkDifferential(t *testing.T) {
	names := probeNames("/base")
	var calls, diffs int
	for i, op := range probeOps() {
		every := 1
		switch {
		case !testsize.Short() && raceEnabled && op.writes:
			every = 4
		case !testsize.Short() && raceEnabled:
			every = 2
		case !testsize.Short():
		case raceEnabled && op.writes:
			every = 12
		case raceEnabled:
			every = 3
		case op.writes:
			every = 6
		default:
			every = 2
		}
		var picked []probeLink
		for j, n := range names {
			if j%every == i%every {
				picked = append(picked, n)
			}
		}
		c, d := runProbes(t, []probeOp{op}, picked)
		calls, diffs = calls+c, diffs+d
	}
	t.Logf("%d calls, %d differences", calls, diffs)
}

// TestWalkRenamesElsewhereWrites is TestWalkRenamesElsewhereProbes for the
// calls that write, each on a tree of its own, through a link climbing 818
// times (each round on a 48th of the names, another each round, the quick
// run at most 4 rounds): the tree each leaves, and its answer, are os's.
func TestWalkRenamesElsewhereWrites(t *testing.T) {
	build := func(t testing.TB, base string) string {
		root := buildProbeTree(t, base)
		must(t, os.Symlink(strings.Repeat("d/../", 818)+".", filepath.Join(root, "r")))
		return root
	}
	var ops []probeOp
	for _, op := range probeOps() {
		if op.writes {
			ops = append(ops, op)
		}
	}
	every := 48
	if !testsize.Short() {
		every = 1
	}
	// Round r takes the names j with j%every == r%every.
	namesOf := func(r int) []probeLink {
		var names []probeLink
		for j, n := range probeNames("/base") {
			if j%every == r%every {
				n.name = "r/" + n.name
				names = append(names, n)
			}
		}
		return names
	}
	other := t.TempDir()
	must(t, os.WriteFile(filepath.Join(other, "a"), nil, 0o644))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		a, b := filepath.Join(other, "a"), filepath.Join(other, "b")
		for !stop.Load() {
			os.Rename(a, b)
			os.Rename(b, a)
		}
	})
	defer func() { stop.Store(true); wg.Wait() }()
	// Until 10 lookups were walked, or for a bounded number of rounds on
	// a machine where the renames rarely overlap the lookups.
	rounds, enough := 4, int64(10)
	switch {
	case !testsize.Short() && raceEnabled:
		rounds, enough = 5, 250
	case !testsize.Short():
		rounds, enough = 20, 1000
	}
	start := dirfs.Walks()
	var calls, diffs, r int
	for ; r < rounds && dirfs.Walks()-start < enough; r++ {
		c, d := runProbesOn(t, build, ops, namesOf(r), true)
		calls, diffs = calls+c, diffs+d
	}
	t.Logf("%d rounds, %d calls, %d differences, %d lookups walked", r, calls, diffs, dirfs.Walks()-start)
}
