package aferoadapter_test

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

var (
	flagSeqs = flag.Int("aferoadapter.seqs", 0, "random sequences of each differential test (0: the default, fewer with -short; 10000 for the full run)")
	flagSeed = flag.Uint64("aferoadapter.seed", 0, "run only this sequence of the differential tests, logging each operation")
)

// The differential tests apply random sequences of afero calls to the
// adapter over a stack (mem, a settling union, the store, dirfs in both
// modes) and to the Linux kernel through afero's OsFs, each name mapped
// into a temporary directory (hostFs), and compare after each call the
// error (class, Op, and that the adapter reports the path as given), the
// data and the information returned, and the whole trees every few calls
// and at the end. Every path argument of every call comes decorated as
// afero users write them (diffGen.path): leading, doubled and trailing
// slashes, "." and ".." inside and at the end, "", ".", "/", on existing
// and missing names and through symlinks whose targets are names in the
// link's directory, ".", "..", itself, a name with a slash, two names,
// or a name behind "..", "../.." or "."; opens add O_NOFOLLOW to the
// other flags. Handles
// are compared call by call: Read, ReadAt, Write, WriteAt, WriteString,
// Seek, Truncate, Stat, Sync, Readdir, Readdirnames, Close.
//
// A call the kernel would resolve above the temporary directory (".." at
// its root, which the adapter keeps at its root as a chroot does) or that
// removes, renames or creates the root itself is drawn again: those are
// named tests (TestIssue13Paths).
func TestDifferential(t *testing.T) {
	runDiffs(t, "mem", 150, 1000, func(t *testing.T) stack {
		return stack{fs: aferoadapter.New(mem.New())}
	})
}

// diffExclusions are the inputs the generator leaves out because a layer,
// not the adapter, diverges on them, each being fixed under issue 13 by
// the layer's owner; remove a line when its fix is merged. Each names the
// issue's item and what it leaves out (see excluded).
var diffExclusions = []string{
	// Not in issue 13, found here: dirfs (both modes) opens with O_CREAT
	// through a final symlink whose target ends in a slash as ENOENT or
	// ELOOP, where Linux gives EISDIR whatever the target names.
	"dirfs: O_CREAT through a final symlink to \"x/\" (createThroughSlashLink)",
	// Not in issue 13, found here: dirfs over os.Root opens a dangling
	// symlink with O_NOFOLLOW as ENOENT, where Linux gives ELOOP.
	"dirfs osroot: O_NOFOLLOW on a final symlink (noFollowLink)",
}

// noFollowLink is an open with O_NOFOLLOW of a name whose last element is
// a symlink on the host: diffExclusions.
func (h *hostFs) noFollowLink(c call) bool {
	if c.op != "OpenFile" || c.flag&syscall.O_NOFOLLOW == 0 {
		return false
	}
	fi, err := os.Lstat(h.real(c.p1))
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// createThroughSlashLink is an open with O_CREAT of a plain name whose
// last element is a symlink whose target ends in a slash: diffExclusions.
func (h *hostFs) createThroughSlashLink(c call) bool {
	create := c.op == "Create" || c.op == "WriteFile" || c.op == "OpenFile" && c.flag&os.O_CREATE != 0
	if !create || !isPlain(c.p1) {
		return false
	}
	_, slashLink, _ := h.walk(c.p1)
	return slashLink
}

// excludeSlashLinks leaves out the calls that follow, as the last element
// of a plain name, a symlink whose target ends in a slash, and MkdirAll's
// that follow one anywhere (os's algorithm stats the name's prefixes,
// which may be plain): diffExclusions. The adapter resolves a
// decorated name itself and gets those right.
const excludeSlashLinks = false

// isPlain reports whether the adapter passes name to the layer as it is:
// past leading slashes, names only, without a trailing slash.
func isPlain(name string) bool {
	rest := strings.TrimLeft(name, "/")
	if rest == "" || strings.HasSuffix(rest, "/") {
		return false
	}
	for _, e := range strings.Split(rest, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// stack is a file system under test; settle, when set, moves its state
// down into a new lower layer, with every handle closed first; exclude,
// when set, names the calls of diffExclusions this stack leaves out;
// close, when set, releases it at the end of its sequence.
type stack struct {
	fs      afero.Fs
	settle  func() (afero.Fs, error)
	exclude func(call) bool
	// excludeHost is exclude for inputs that depend on the tree.
	excludeHost func(*hostFs, call) bool
	close       func()
}

// seqDir returns a new temporary directory for one sequence, which
// the caller removes.
func seqDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "aferoadapter-seq-")
	if err != nil {
		if dir, err = os.MkdirTemp("", "aferoadapter-seq-"); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runDiffs runs the differential test's sequences over the stacks mk
// makes, short of them with -short (and under -race, a third of the
// default), or -aferoadapter.seqs of them.
func runDiffs(t *testing.T, name string, short, long int, mk func(*testing.T) stack) {
	n := seeds(short, long)
	if raceEnabled {
		n = max(n/3, 10)
	}
	if *flagSeqs > 0 {
		n = *flagSeqs
	}
	first := uint64(time.Now().UnixNano() % 1e6)
	if *flagSeed != 0 {
		first, n = *flagSeed, 1
	}
	for _, e := range diffExclusions {
		t.Logf("%s: left out until a layer's fix is merged: %s", name, e)
	}
	t.Logf("%s: seeds %d to %d (replay one with -run '%s$' -aferoadapter.seed=N -v)", name, first, first+uint64(n)-1, t.Name())
	diverged, calls := 0, 0
	for i := range n {
		seed := first + uint64(i)
		msg, c := runDiff(t, seed, *flagSeed != 0, mk)
		calls += c
		if msg != "" {
			diverged++
			if diverged <= 3 {
				t.Errorf("seed %d diverges:\n%s", seed, msg)
			}
		}
	}
	t.Logf("%s: %d of %d sequences diverge from Linux (%d calls compared)", name, diverged, n, calls)
	if diverged > 0 {
		t.Errorf("%d of %d sequences diverge from Linux", diverged, n)
	}
}

const diffOps = 40

// diffNames are the names a sequence uses: few, so that they collide.
var diffNames = []string{"a", "b", "d", "e"}

type diffGen struct{ r *rand.Rand }

func (g *diffGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

// rel returns a relative io/fs-like path of one to three elements.
func (g *diffGen) rel() string {
	p := g.pick(diffNames...)
	for range g.r.IntN(3) {
		p = g.pick(diffNames...) + "/" + p
	}
	return p
}

// path returns a name as afero users write them: a third plain ("/a/b",
// "a/b"), the rest decorated in every way the kernel resolves.
func (g *diffGen) path() string {
	switch g.r.IntN(30) {
	case 0, 1:
		return g.pick("", ".", "/", "//", "/.", "./", "./.", "..", "/..", "./..")
	case 2, 3, 4, 5, 6, 7, 8, 9:
		return "/" + g.rel()
	case 10, 11:
		return g.rel()
	}
	var b strings.Builder
	b.WriteString(g.pick("/", "/", "/", "", "", "//", "./", "/./", "/a/../"))
	for i := range 1 + g.r.IntN(3) {
		if i > 0 {
			b.WriteString(g.pick("/", "/", "/", "/", "//", "/./", "/../"))
		}
		switch g.r.IntN(10) {
		case 0:
			b.WriteString(".")
		case 1:
			b.WriteString("..")
		default:
			b.WriteString(g.pick(diffNames...))
		}
	}
	b.WriteString(g.pick("", "", "", "/", "/", "//", "/.", "/..", "/./", "/../", "/.//"))
	return b.String()
}

// target returns a symlink target for a link named newname: a name in the
// link's directory (perhaps with a slash), ".", "..", the link itself, "",
// two names, or a name behind "../", "../../" or "./" (unfit draws again
// a call that would climb above the host's directory through one).
func (g *diffGen) target(newname string) string {
	switch g.r.IntN(12) {
	case 0:
		return "."
	case 1:
		return ".."
	case 2:
		el := strings.FieldsFunc(newname, func(r rune) bool { return r == '/' })
		if len(el) > 0 {
			return el[len(el)-1] // a loop
		}
	case 3:
		return g.pick(diffNames...) + "/"
	case 4:
		if g.r.IntN(4) == 0 {
			return ""
		}
	case 5:
		return g.pick(diffNames...) + "/" + g.pick(diffNames...)
	case 6:
		return g.pick("../", "./", "../../") + g.pick(diffNames...)
	}
	return g.pick(diffNames...)
}

// call is one afero call of a sequence.
type call struct {
	op   string
	p1   string
	p2   string
	flag int
	perm os.FileMode
	data string
	n    int
	off  int64
	h    int
}

func (c call) String() string {
	return fmt.Sprintf("%s(%q %q flag=%#x perm=%v data=%q n=%d off=%d h=%d)", c.op, c.p1, c.p2, c.flag, c.perm, c.data, c.n, c.off, c.h)
}

var diffOpsList = []string{
	"OpenFile", "OpenFile", "Create", "Open", "Mkdir", "MkdirAll", "Remove", "RemoveAll", "Rename",
	"Stat", "Lstat", "Chmod", "Chtimes", "Symlink", "Readlink", "WriteFile", "ReadFile", "ReadDir",
	"Write", "Write", "WriteAt", "WriteString", "Read", "ReadAt", "Seek", "Truncate", "FStat", "Sync",
	"Readdir", "Readdirnames", "Close",
}

func (g *diffGen) call() call {
	c := call{op: g.pick(diffOpsList...), p1: g.path(), p2: g.path(), h: g.r.IntN(3)}
	c.flag = []int{os.O_RDONLY, os.O_WRONLY, os.O_RDWR}[g.r.IntN(3)]
	for _, b := range []int{os.O_CREATE, os.O_EXCL, os.O_TRUNC, os.O_APPEND, syscall.O_NOFOLLOW} {
		if g.r.IntN(4) == 0 {
			c.flag |= b
		}
	}
	c.perm = []os.FileMode{0o644, 0o600, 0o755, 0o700}[g.r.IntN(4)]
	c.data = strings.Repeat(g.pick("x", "yz", "hello "), g.r.IntN(4))
	c.n = g.r.IntN(5) - 1
	c.off = int64(g.r.IntN(12)) - 1
	if c.op == "Symlink" {
		c.p1 = g.target(c.p2)
	}
	return c
}

// side is one of the two file systems with its open handles.
type side struct {
	fs    afero.Fs
	files [3]afero.File
	names [3]string // what each file was opened by
}

func (s *side) close() {
	for _, f := range s.files {
		if f != nil {
			f.Close()
		}
	}
}

// apply runs c on s and describes what it saw. adapter is set for the
// adapter side, whose error paths must be the names passed.
func (s *side) apply(c call, adapter bool) (out string, pathErr string) {
	f := s.files[c.h]
	desc := func(err error) string {
		var pe *fs.PathError
		if adapter && errors.As(err, &pe) && c.op != "Rename" && c.op != "Symlink" && c.op != "MkdirAll" && f == nil {
			// MkdirAll reports the element that failed, as os does.
			if pe.Path != c.p1 {
				pathErr = fmt.Sprintf("error path %q, want %q as passed", pe.Path, c.p1)
			}
		}
		return class(err) + " " + errOp(err)
	}
	info := func(fi os.FileInfo) string {
		if fi == nil {
			return "<nil>"
		}
		name := fi.Name()
		if by := c.p1; by != "" && strings.Trim(by, "/") == "" || c.op == "FStat" && strings.Trim(s.names[c.h], "/") == "" {
			// The root by slashes alone: os names it "/", and the
			// host's directory by its own name.
			name = "(root)"
		}
		size := fi.Size()
		if fi.IsDir() {
			size = 0
		}
		return fmt.Sprint(name, " ", fi.Mode(), " ", size)
	}
	handle := func() bool { return f != nil }
	switch c.op {
	case "OpenFile", "Create", "Open":
		if f != nil {
			f.Close()
			s.files[c.h] = nil
		}
		var nf afero.File
		var err error
		switch c.op {
		case "OpenFile":
			nf, err = s.fs.OpenFile(c.p1, c.flag, c.perm)
		case "Create":
			nf, err = s.fs.Create(c.p1)
		default:
			nf, err = s.fs.Open(c.p1)
		}
		f = nil
		if err == nil {
			s.files[c.h], s.names[c.h] = nf, c.p1
		}
		return desc(err), pathErr
	case "Mkdir":
		return desc(s.fs.Mkdir(c.p1, c.perm)), pathErr
	case "MkdirAll":
		return desc(s.fs.MkdirAll(c.p1, c.perm)), pathErr
	case "Remove":
		return desc(s.fs.Remove(c.p1)), pathErr
	case "RemoveAll":
		return class(s.fs.RemoveAll(c.p1)), ""
	case "Rename":
		return desc(s.fs.Rename(c.p1, c.p2)), ""
	case "Stat":
		fi, err := s.fs.Stat(c.p1)
		return desc(err) + " " + info(fi), pathErr
	case "Lstat":
		fi, _, err := s.fs.(afero.Lstater).LstatIfPossible(c.p1)
		return desc(err) + " " + info(fi), pathErr
	case "Chmod":
		return desc(s.fs.Chmod(c.p1, c.perm|0o700)), pathErr
	case "Chtimes":
		when := time.Unix(1e9+int64(c.off)*86400, 0)
		err := s.fs.Chtimes(c.p1, when, when)
		fi, _ := s.fs.Stat(c.p1)
		mt := ""
		if fi != nil {
			mt = fi.ModTime().UTC().Format(time.RFC3339)
		}
		return desc(err) + " " + mt, pathErr
	case "Symlink":
		return desc(s.fs.(afero.Linker).SymlinkIfPossible(c.p1, c.p2)), ""
	case "Readlink":
		target, err := s.fs.(afero.LinkReader).ReadlinkIfPossible(c.p1)
		return desc(err) + " " + target, pathErr
	case "WriteFile":
		return desc(afero.WriteFile(s.fs, c.p1, []byte(c.data), c.perm)), pathErr
	case "ReadFile":
		data, err := afero.ReadFile(s.fs, c.p1)
		return desc(err) + " " + string(data), pathErr
	case "ReadDir":
		list, err := afero.ReadDir(s.fs, c.p1)
		var names []string
		for _, fi := range list {
			names = append(names, fi.Name()+" "+info(fi))
		}
		return desc(err) + " " + strings.Join(names, ","), pathErr
	}
	if !handle() {
		return "no handle", ""
	}
	switch c.op {
	case "Write":
		n, err := f.Write([]byte(c.data))
		return fmt.Sprint(n, " ", desc(err)), ""
	case "WriteString":
		n, err := f.WriteString(c.data)
		return fmt.Sprint(n, " ", desc(err)), ""
	case "WriteAt":
		n, err := f.WriteAt([]byte(c.data), c.off)
		return fmt.Sprint(n, " ", class(err)), ""
	case "Read":
		buf := make([]byte, max(c.n, 0)+3)
		n, err := f.Read(buf)
		return fmt.Sprint(n, " ", string(buf[:n]), " ", desc(err)), ""
	case "ReadAt":
		buf := make([]byte, max(c.n, 0)+3)
		n, err := f.ReadAt(buf, c.off)
		return fmt.Sprint(n, " ", string(buf[:n]), " ", class(err)), ""
	case "Seek":
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			return "seek on a directory: the system's choice", ""
		}
		off, err := f.Seek(c.off, c.h%3)
		return fmt.Sprint(off, " ", class(err)), ""
	case "Truncate":
		return desc(f.Truncate(c.off)), ""
	case "FStat":
		fi, err := f.Stat()
		return desc(err) + " " + info(fi), ""
	case "Sync":
		return desc(f.Sync()), ""
	case "Readdir", "Readdirnames":
		// Read to the end in pages of c.n, as os's io.EOF rules say,
		// and compare the sorted names and the page pattern.
		var all []string
		var pages []string
		for range 10 {
			var names []string
			var err error
			if c.op == "Readdir" {
				var list []os.FileInfo
				list, err = f.Readdir(c.n)
				if list == nil {
					pages = append(pages, "nil slice")
				}
				for _, fi := range list {
					names = append(names, fi.Name())
				}
			} else {
				names, err = f.Readdirnames(c.n)
				if names == nil {
					pages = append(pages, "nil slice")
				}
			}
			all = append(all, names...)
			pages = append(pages, fmt.Sprint(len(names), class(err)))
			if err != nil || c.n <= 0 {
				break
			}
		}
		slices.Sort(all)
		return strings.Join(pages, ",") + " " + strings.Join(all, ","), ""
	case "Close":
		err := f.Close()
		s.files[c.h] = nil
		return desc(err), ""
	}
	return "unknown op", ""
}

// TestDifferentialUnion is TestDifferential over a union (mem over a
// snapshot) whose state moves down into a new lower layer at random points
// of each sequence, with every handle closed on both sides first: later
// calls then act on lower files and directories, through copy-up,
// whiteouts, opaque directories and merged listings.
func TestDifferentialUnion(t *testing.T) {
	before := diffSettles
	runDiffs(t, "union", 100, 400, func(t *testing.T) stack {
		u := packfs.New(mem.New(), mem.New().Snapshot())
		var s stack
		s.fs = aferoadapter.New(u)
		s.settle = func() (afero.Fs, error) {
			var err error
			if u, err = settle(u); err != nil {
				return nil, err
			}
			return aferoadapter.New(u), nil
		}
		return s
	})
	t.Logf("%d settles", diffSettles-before)
	if diffSettles == before {
		t.Error("the union never settled")
	}
}

// TestDifferentialStore is TestDifferential over the durable store in a
// temporary directory.
func TestDifferentialStore(t *testing.T) {
	runDiffs(t, "store", 30, 200, func(t *testing.T) stack {
		dir := seqDir(t)
		s, err := packfs.Open(dir, &packfs.Options{Sync: packfs.SyncNone})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Chmod(".", 0o755); err != nil {
			t.Fatal(err)
		}
		return stack{fs: aferoadapter.New(s), close: func() {
			s.Close()
			os.RemoveAll(dir)
		}}
	})
}

// TestDifferentialDirfs is TestDifferential over dirfs in both of its
// modes, openat2 and os.Root.
func TestDifferentialDirfs(t *testing.T) {
	for _, m := range []struct {
		name string
		opts []dirfs.Option
	}{
		{"openat2", nil},
		{"osroot", []dirfs.Option{dirfs.ForceRoot()}},
	} {
		t.Run(m.name, func(t *testing.T) {
			runDiffs(t, "dirfs-"+m.name, 30, 200, func(t *testing.T) stack {
				dir := seqDir(t)
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				d, err := dirfs.New(dir, m.opts...)
				if err != nil {
					t.Fatal(err)
				}
				st := stack{fs: aferoadapter.New(d), close: func() {
					d.Close()
					os.RemoveAll(dir)
				}}
				st.excludeHost = (*hostFs).createThroughSlashLink
				if m.name == "osroot" {
					st.excludeHost = func(h *hostFs, c call) bool {
						return h.noFollowLink(c) || h.createThroughSlashLink(c)
					}
				}
				return st
			})
		})
	}
}

// diffSettles counts the times runDiff moved a union's state down.
var diffSettles int

// runDiff runs the sequence of seed over a new stack and the kernel and
// returns the first divergence, and how many calls it compared.
func runDiff(t *testing.T, seed uint64, verbose bool, mk func(*testing.T) stack) (string, int) {
	g := &diffGen{r: rand.New(rand.NewPCG(seed, 0x5eed))}
	settles := rand.New(rand.NewPCG(seed, 0x5e771e)) // leaves g's calls alone
	base := seqDir(t)
	defer os.RemoveAll(base)
	hfs, err := newHostFsIn(base)
	if err != nil {
		t.Fatal(err)
	}
	host := &side{fs: hfs}
	st := mk(t)
	back := &side{fs: st.fs}
	if st.close != nil {
		defer st.close()
	}
	defer host.close()
	defer back.close()
	var log []string
	calls := 0
	for i := range diffOps {
		if st.settle != nil && i > 0 && settles.IntN(6) == 0 {
			host.close()
			back.close()
			host.files, back.files = [3]afero.File{}, [3]afero.File{}
			var err error
			if back.fs, err = st.settle(); err != nil {
				t.Fatal(err)
			}
			diffSettles++
			log = append(log, fmt.Sprintf("%d settle (handles closed)", i))
			if verbose {
				t.Log(log[len(log)-1])
			}
		}
		c := g.call()
		for hfs.unfit(c) || st.exclude != nil && st.exclude(c) || st.excludeHost != nil && st.excludeHost(hfs, c) {
			c = g.call()
		}
		calls++
		hostOut, _ := host.apply(c, false)
		backOut, perr := back.apply(c, true)
		log = append(log, fmt.Sprintf("%d %v -> %s", i, c, hostOut))
		if verbose {
			t.Log(log[len(log)-1])
		}
		if hostOut != backOut || perr != "" {
			return fmt.Sprintf("%s\n  adapter: %s %s", strings.Join(log, "\n"), backOut, perr), calls
		}
		if i%10 == 9 || i == diffOps-1 {
			if err := hfs.checkSandbox(); err != nil {
				t.Fatalf("seed %d: %v\n%s", seed, err, strings.Join(log, "\n"))
			}
			h := tree(t, host.fs)
			b, err := treeOf(back.fs)
			if err != nil || !slices.Equal(h, b) {
				return fmt.Sprintf("%s\n  trees differ:\n  Linux:   %q\n  adapter: %q %v", strings.Join(log, "\n"), h, b, err), calls
			}
		}
	}
	return "", calls
}

// pathOps are the calls whose p1 is a path (and Rename's and Symlink's p2).
var pathOps = map[string]bool{
	"OpenFile": true, "Create": true, "Open": true, "Mkdir": true, "MkdirAll": true, "Remove": true,
	"RemoveAll": true, "Rename": true, "Stat": true, "Lstat": true, "Chmod": true, "Chtimes": true,
	"Symlink": true, "Readlink": true, "WriteFile": true, "ReadFile": true, "ReadDir": true,
}

// unfit reports whether the kernel cannot be the reference for c over
// the temporary directory: a path resolves ".." at the directory's root
// (the kernel climbs out, the adapter stays, as a chroot does), or names
// the root by slashes alone where c would create, remove or rename it
// (the directory is a name in its parent to the kernel, the adapter's
// root is not); or c is an input of diffExclusions.
func (h *hostFs) unfit(c call) bool {
	if !pathOps[c.op] {
		return false
	}
	names := []string{c.p1}
	if c.op == "Rename" || c.op == "Symlink" {
		names = []string{c.p2}
		if c.op == "Rename" {
			names = append(names, c.p1)
		}
	}
	for _, n := range names {
		climbs, slashLink, slashAny := h.walk(n)
		if climbs || excludeSlashLinks && (slashLink && isPlain(n) || slashAny && c.op == "MkdirAll") {
			return true
		}
		if n != "" && strings.Trim(n, "/") == "" {
			switch c.op {
			case "OpenFile", "Create", "Remove", "RemoveAll", "Rename", "WriteFile":
				return true
			}
		}
	}
	return false
}

// walk resolves name in h's directory as the kernel would, following
// every symlink, final ones too, and reports whether it might take ".."
// at the directory's root (an element that is missing or not a directory
// counts as a directory, as a call may create it on the way: MkdirAll
// does), whether it follows, as the last element, a symlink whose target
// ends in a slash, and whether it follows one anywhere.
func (h *hostFs) walk(name string) (climbs, slashLink, slashAny bool) {
	var stack []string // the directories below the root
	el := strings.FieldsFunc(name, func(r rune) bool { return r == '/' })
	for hops := 0; len(el) > 0 && hops <= 40; {
		e := el[0]
		el = el[1:]
		switch e {
		case ".":
			continue
		case "..":
			if len(stack) == 0 {
				return true, slashLink, slashAny
			}
			stack = stack[:len(stack)-1]
			continue
		}
		p := filepath.Join(append([]string{h.dir}, append(stack, e)...)...)
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil || strings.HasPrefix(target, "/") {
				return true, slashLink, slashAny
			}
			if strings.HasSuffix(target, "/") {
				slashLink = slashLink || len(el) == 0
				slashAny = true
			}
			hops++
			el = append(strings.FieldsFunc(target, func(r rune) bool { return r == '/' }), el...)
			continue
		}
		stack = append(stack, e)
	}
	return false, slashLink, slashAny
}
