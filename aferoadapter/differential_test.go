package aferoadapter_test

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

var (
	flagSeqs = flag.Int("aferoadapter.seqs", 0, "random sequences of the differential test (0: 500; 100 with -short)")
	flagSeed = flag.Uint64("aferoadapter.seed", 0, "run only this sequence of the differential test, logging each operation")
)

// The differential test applies random sequences of afero calls to the
// adapter over mem.New() and to afero's OsFs over a temporary directory,
// with paths in every spelling an afero user writes ("/a/b", "a/b", "./a",
// "a/", "a/../b", "", "/"), and compares after each call the error (class,
// Op, and that the adapter reports the path as given), the data and the
// information returned, and the whole trees every few calls and at the
// end. Handles are compared call by call: Read, ReadAt, Write, WriteAt,
// WriteString, Seek, Truncate, Stat, Sync, Readdir, Readdirnames, Close.
func TestDifferential(t *testing.T) {
	n := seeds(100, 500)
	if *flagSeqs > 0 {
		n = *flagSeqs
	}
	first := uint64(time.Now().UnixNano() % 1e6)
	if *flagSeed != 0 {
		first, n = *flagSeed, 1
	}
	t.Logf("seeds %d to %d (replay one with -run TestDifferential -aferoadapter.seed=N -v)", first, first+uint64(n)-1)
	diverged := 0
	for i := range n {
		seed := first + uint64(i)
		if msg := runDiff(t, seed, *flagSeed != 0, false); msg != "" {
			diverged++
			if diverged <= 3 {
				t.Errorf("seed %d diverges:\n%s", seed, msg)
			}
		}
	}
	if diverged > 0 {
		t.Errorf("%d of %d sequences diverge from the OS", diverged, n)
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

// path returns rel() in one of the spellings afero users write.
func (g *diffGen) path() string {
	p := g.rel()
	switch g.r.IntN(20) {
	case 0, 1, 2, 3, 4, 5, 6, 7:
		return "/" + p
	case 8, 9, 10, 11:
		return p
	case 12:
		return "./" + p
	case 13:
		return p + "/"
	case 14:
		return "/" + g.pick(diffNames...) + "/../" + p
	case 15:
		return "//" + strings.ReplaceAll(p, "/", "//")
	case 16:
		return "/./" + p + "/."
	case 17:
		return g.pick("", "/", ".", "/.")
	case 18:
		return "/../" + p // climbs above the root: an error on both
	}
	return p
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
	for _, b := range []int{os.O_CREATE, os.O_EXCL, os.O_TRUNC, os.O_APPEND} {
		if g.r.IntN(4) == 0 {
			c.flag |= b
		}
	}
	c.perm = []os.FileMode{0o644, 0o600, 0o755, 0o700}[g.r.IntN(4)]
	c.data = strings.Repeat(g.pick("x", "yz", "hello "), g.r.IntN(4))
	c.n = g.r.IntN(5) - 1
	c.off = int64(g.r.IntN(12)) - 1
	if c.op == "Symlink" {
		c.p1 = g.pick(diffNames...) // a target in the link's directory
	}
	return c
}

// side is one of the two file systems with its open handles.
type side struct {
	fs    afero.Fs
	files [3]afero.File
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
		if strings.HasPrefix(c.p1, "/../") || strings.HasPrefix(c.p2, "/../") {
			// BasePathFs names its ops its own way here ("openfile").
			return class(err)
		}
		return class(err) + " " + errOp(err)
	}
	info := func(fi os.FileInfo) string {
		if fi == nil {
			return "<nil>"
		}
		size := fi.Size()
		if fi.IsDir() {
			size = 0
		}
		return fmt.Sprint(fi.Mode(), size)
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
			s.files[c.h] = nf
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
	n := seeds(100, 400)
	if raceEnabled {
		n = seeds(50, 150) // each union call is several layer calls
	}
	if *flagSeqs > 0 {
		n = *flagSeqs
	}
	first := uint64(time.Now().UnixNano() % 1e6)
	if *flagSeed != 0 {
		first, n = *flagSeed, 1
	}
	t.Logf("seeds %d to %d (replay one with -run TestDifferentialUnion -aferoadapter.seed=N -v)", first, first+uint64(n)-1)
	before := diffSettles
	diverged := 0
	for i := range n {
		seed := first + uint64(i)
		if msg := runDiff(t, seed, *flagSeed != 0, true); msg != "" {
			diverged++
			if diverged <= 3 {
				t.Errorf("seed %d diverges:\n%s", seed, msg)
			}
		}
	}
	if diverged > 0 {
		t.Errorf("%d of %d sequences diverge from the OS", diverged, n)
	}
	t.Logf("%d settles", diffSettles-before)
	if diffSettles == before {
		t.Error("the union never settled")
	}
}

// diffSettles counts the times runDiff moved a union's state down.
var diffSettles int

// runDiff runs the sequence of seed and returns the first divergence. With
// union, the adapter side is a union that settles at random points.
func runDiff(t *testing.T, seed uint64, verbose, union bool) string {
	g := &diffGen{r: rand.New(rand.NewPCG(seed, 0x5eed))}
	settles := rand.New(rand.NewPCG(seed, 0x5e771e)) // leaves g's calls alone
	host := &side{fs: osFs(t)}
	back := &side{fs: adapterFs(t)}
	var u *packfs.FS
	if union {
		u = packfs.New(mem.New(), mem.New().Snapshot())
		back.fs = aferoadapter.New(u)
	}
	defer host.close()
	defer back.close()
	var log []string
	for i := range diffOps {
		if union && i > 0 && settles.IntN(6) == 0 {
			host.close()
			back.close()
			host.files, back.files = [3]afero.File{}, [3]afero.File{}
			var err error
			if u, err = settle(u); err != nil {
				t.Fatal(err)
			}
			back.fs = aferoadapter.New(u)
			diffSettles++
			log = append(log, fmt.Sprintf("%d settle (handles closed)", i))
			if verbose {
				t.Log(log[len(log)-1])
			}
		}
		c := g.call()
		if c.op == "Remove" || c.op == "RemoveAll" || c.op == "Rename" {
			// The OS side is a real directory: removing or renaming
			// its root is not what the adapter's root does (it
			// refuses). Those are tested by name.
			if isRoot(c.p1) {
				continue
			}
		}
		hostOut, _ := host.apply(c, false)
		backOut, perr := back.apply(c, true)
		log = append(log, fmt.Sprintf("%d %v -> %s", i, c, hostOut))
		if verbose {
			t.Log(log[len(log)-1])
		}
		if hostOut != backOut || perr != "" {
			return fmt.Sprintf("%s\n  adapter: %s %s", strings.Join(log, "\n"), backOut, perr)
		}
		if i%10 == 9 || i == diffOps-1 {
			h := tree(t, host.fs)
			b, err := treeOf(back.fs)
			if err != nil || !slices.Equal(h, b) {
				return fmt.Sprintf("%s\n  trees differ:\n  OS:      %q\n  adapter: %q %v", strings.Join(log, "\n"), h, b, err)
			}
		}
	}
	return ""
}

func isRoot(p string) bool {
	c := strings.Trim(strings.ReplaceAll(p, "/./", "/"), "/.")
	return c == "" || strings.HasPrefix(p, "/..") || strings.Contains(p, "..")
}
