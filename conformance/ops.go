package conformance

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// opKind is an operation of the differential test.
type opKind uint8

const (
	// Operations on handles, named by slot.
	opOpenFile opKind = iota
	opWrite
	opWriteAt
	opRead
	opReadAt
	opSeek
	opTruncate
	opClose
	opFStat
	opFReadDir
	opSync
	// Operations on paths.
	opWriteFile
	opReadFile
	opMkdir
	opMkdirAll
	opRemove
	opRemoveAll
	opRename
	opSymlink
	opReadlink
	opLstat
	opStat
	opReadDir
	opChmod
	opChtimes
	opChown
	opLchown
	opSettle
	numOpKinds
)

var opNames = [numOpKinds]string{
	"OpenFile", "Write", "WriteAt", "Read", "ReadAt", "Seek", "Truncate", "Close", "Stat", "ReadDir", "Sync",
	"WriteFile", "ReadFile", "Mkdir", "MkdirAll", "Remove", "RemoveAll", "Rename", "Symlink", "Readlink",
	"Lstat", "Stat", "ReadDir", "Chmod", "Chtimes", "Chown", "Lchown", "Settle",
}

// opWeights sets how often each kind is generated.
var opWeights = [numOpKinds]int{
	opOpenFile: 14, opWrite: 12, opWriteAt: 5, opRead: 7, opReadAt: 5, opSeek: 4, opTruncate: 4,
	opClose: 5, opFStat: 3, opFReadDir: 3, opSync: 1,
	opWriteFile: 8, opReadFile: 4, opMkdir: 9, opMkdirAll: 5, opRemove: 7, opRemoveAll: 3,
	opRename: 9, opSymlink: 7, opReadlink: 2, opLstat: 3, opStat: 3, opReadDir: 3,
	opChmod: 3, opChtimes: 3, opChown: 1, opLchown: 1, opSettle: 3,
}

// readOnlyWeights sets how often each kind is generated where only reads
// may run (see reads): opens are read-only, and a path is now and
// then decorated (see decorate).
var readOnlyWeights = [numOpKinds]int{
	opOpenFile: 14, opRead: 10, opReadAt: 7, opSeek: 6, opClose: 5, opFStat: 4, opFReadDir: 5,
	opSync: 1, opReadFile: 6, opReadlink: 5, opLstat: 6, opStat: 6, opReadDir: 5,
}

func (k opKind) onHandle() bool { return k < opWriteFile }

// maxHandles is the number of handle slots, f0 to f3.
const maxHandles = 4

// op is one operation of a random sequence. Which fields matter depends on
// Kind.
type op struct {
	Kind   opKind
	H      int    // handle slot
	Path   string // the name operated on; Rename's old name
	Path2  string // Rename's new name, Symlink's new name
	Flag   int    // OpenFile's flags; Close: keep the closed handle
	Perm   fs.FileMode
	Data   string // literal data to write
	Fill   byte   // with N: N bytes of Fill to write
	N      int    // bytes to read; ReadDir's n
	Off    int64  // offset, size, or Seek's offset
	Whence int
	Atime  int64 // Unix seconds; 0 is the zero time.Time
	Mtime  int64
	// With [WithOwners] (withOwners): Chown's and Lchown's ids, Chtimes
	// as Lchtimes, mode bits Chmod adds, and, on every op of the
	// sequence, that trees compare owners.
	Uid, Gid int
	NoFollow bool
	Extra    fs.FileMode
	Owners   bool
}

// data returns the bytes a write operation writes.
func (o op) data() []byte {
	if o.Data != "" || o.N == 0 {
		return []byte(o.Data)
	}
	return []byte(strings.Repeat(string(o.Fill), o.N))
}

// String returns o as a line of Go.
func (o op) String() string {
	f := fmt.Sprintf("f%d", o.H)
	data := func() string {
		if o.Data != "" || o.N == 0 {
			return fmt.Sprintf("[]byte(%q)", o.Data)
		}
		return fmt.Sprintf("bytes.Repeat([]byte(%q), %d)", string(o.Fill), o.N)
	}
	q := strconv.Quote
	switch o.Kind {
	case opOpenFile:
		return fmt.Sprintf("%s, err = fsys.OpenFile(%s, %s, %#o)", f, q(o.Path), flagString(o.Flag), o.Perm)
	case opWrite:
		return fmt.Sprintf("n, err = %s.Write(%s)", f, data())
	case opWriteAt:
		return fmt.Sprintf("n, err = %s.WriteAt(%s, %d)", f, data(), o.Off)
	case opRead:
		return fmt.Sprintf("n, err = %s.Read(make([]byte, %d))", f, o.N)
	case opReadAt:
		return fmt.Sprintf("n, err = %s.ReadAt(make([]byte, %d), %d)", f, o.N, o.Off)
	case opSeek:
		return fmt.Sprintf("off, err = %s.Seek(%d, %s)", f, o.Off, [...]string{"io.SeekStart", "io.SeekCurrent", "io.SeekEnd"}[o.Whence])
	case opTruncate:
		return fmt.Sprintf("err = %s.Truncate(%d)", f, o.Off)
	case opClose:
		if o.Flag != 0 {
			return fmt.Sprintf("err = %s.Close() // kept, to use closed", f)
		}
		return fmt.Sprintf("err = %s.Close()", f)
	case opFStat:
		return fmt.Sprintf("fi, err = %s.Stat()", f)
	case opFReadDir:
		return fmt.Sprintf("list, err = %s.ReadDir(%d)", f, o.N)
	case opSync:
		return fmt.Sprintf("err = %s.Sync()", f)
	case opWriteFile:
		return fmt.Sprintf("err = fsys.WriteFile(%s, %s, %#o)", q(o.Path), data(), o.Perm)
	case opReadFile:
		return fmt.Sprintf("data, err = fsys.ReadFile(%s)", q(o.Path))
	case opMkdir:
		return fmt.Sprintf("err = fsys.Mkdir(%s, %#o)", q(o.Path), o.Perm)
	case opMkdirAll:
		return fmt.Sprintf("err = fsys.MkdirAll(%s, %#o)", q(o.Path), o.Perm)
	case opRemove:
		return fmt.Sprintf("err = fsys.Remove(%s)", q(o.Path))
	case opRemoveAll:
		return fmt.Sprintf("err = fsys.RemoveAll(%s)", q(o.Path))
	case opRename:
		return fmt.Sprintf("err = fsys.Rename(%s, %s)", q(o.Path), q(o.Path2))
	case opSymlink:
		return fmt.Sprintf("err = fsys.Symlink(%s, %s)", q(o.Path), q(o.Path2))
	case opReadlink:
		return fmt.Sprintf("target, err = fsys.Readlink(%s)", q(o.Path))
	case opLstat:
		return fmt.Sprintf("fi, err = fsys.Lstat(%s)", q(o.Path))
	case opStat:
		return fmt.Sprintf("fi, err = fsys.Stat(%s)", q(o.Path))
	case opReadDir:
		return fmt.Sprintf("list, err = fsys.ReadDir(%s)", q(o.Path))
	case opChmod:
		if o.Extra != 0 {
			return fmt.Sprintf("err = fsys.Chmod(%s, %#o|%s)", q(o.Path), o.Perm, modeString(o.Extra))
		}
		return fmt.Sprintf("err = fsys.Chmod(%s, %#o)", q(o.Path), o.Perm)
	case opChtimes:
		call := "fsys.Chtimes"
		if o.NoFollow {
			call = "layer.Lchtimes(fsys, "
		} else {
			call += "("
		}
		return fmt.Sprintf("err = %s%s, %s, %s)", call, q(o.Path), timeString(o.Atime), timeString(o.Mtime))
	case opChown:
		return fmt.Sprintf("err = fsys.Chown(%s, %d, %d)", q(o.Path), o.ids()[0], o.ids()[1])
	case opLchown:
		return fmt.Sprintf("err = fsys.Lchown(%s, %d, %d)", q(o.Path), o.ids()[0], o.ids()[1])
	case opSettle:
		return "err = fsys.(conformance.Settler).Settle() // nothing on os"
	}
	return fmt.Sprintf("unknown op %d", o.Kind)
}

// ids returns Chown's ids: -1, unchanged, unless the sequence gives
// owners.
func (o op) ids() [2]int {
	if !o.Owners {
		return [2]int{-1, -1}
	}
	return [2]int{o.Uid, o.Gid}
}

func modeString(m fs.FileMode) string {
	var parts []string
	if m&fs.ModeSetuid != 0 {
		parts = append(parts, "fs.ModeSetuid")
	}
	if m&fs.ModeSetgid != 0 {
		parts = append(parts, "fs.ModeSetgid")
	}
	return strings.Join(parts, "|")
}

func timeString(sec int64) string {
	if sec == 0 {
		return "time.Time{}"
	}
	return fmt.Sprintf("time.Unix(%d, 0)", sec)
}

func flagString(flag int) string {
	var parts []string
	switch flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR) {
	case os.O_RDONLY:
		parts = append(parts, "os.O_RDONLY")
	case os.O_WRONLY:
		parts = append(parts, "os.O_WRONLY")
	case os.O_RDWR:
		parts = append(parts, "os.O_RDWR")
	}
	for _, b := range []struct {
		bit  int
		name string
	}{{os.O_CREATE, "os.O_CREATE"}, {os.O_EXCL, "os.O_EXCL"}, {os.O_TRUNC, "os.O_TRUNC"}, {os.O_APPEND, "os.O_APPEND"}} {
		if flag&b.bit != 0 {
			parts = append(parts, b.name)
		}
	}
	return strings.Join(parts, "|")
}

// chtimesBase is the first time Chtimes sets: times before 2005 are the
// suite's own, so a modification time in that range was set by Chtimes and
// is compared; later ones are the clock's and are not.
var chtimesBase = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

func setByChtimes(t time.Time) bool { return t.Year() < 2005 }

// generator makes random operations over a small name space, so that
// names collide often: files a, b, c and directories d, e, at most three
// deep.
type generator struct {
	r        *rand.Rand
	weights  *[numOpKinds]int
	total    int      // the sum of weights
	readOnly bool     // generate only reads (see reads)
	root     bool     // running as root: any permission bits
	names    []string // paths earlier operations created, or may have
	dirs     []string // the directories among them
}

func newGenerator(seed int64) *generator {
	g := &generator{r: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)), root: isRoot()}
	g.setWeights(&opWeights)
	return g
}

func (g *generator) setWeights(w *[numOpKinds]int) {
	g.weights, g.total = w, 0
	for _, n := range w {
		g.total += n
	}
}

func (g *generator) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g *generator) chance(percent int) bool { return g.r.IntN(100) < percent }

// path returns a path whose last element is, most of the time, a file name
// (or a directory name when dir is set).
func (g *generator) path(dir bool) string {
	last := func() string {
		if g.chance(70) == dir {
			return g.pick("d", "e")
		}
		return g.pick("a", "b", "c")
	}
	if g.chance(2) {
		return "."
	}
	mid := func() string {
		if g.chance(10) {
			return g.pick("a", "b")
		}
		return g.pick("d", "e")
	}
	switch n := g.r.IntN(100); {
	case n < 45:
		return last()
	case n < 88:
		return mid() + "/" + last()
	default:
		return mid() + "/" + mid() + "/" + last()
	}
}

// create returns a path for an operation that creates an entry, often
// inside a directory an earlier operation made, and remembers it for later
// operations to use.
func (g *generator) create(dir bool) string {
	p := g.path(dir)
	if len(g.dirs) > 0 && g.chance(50) {
		if d := g.dirs[g.r.IntN(len(g.dirs))]; strings.Count(d, "/") < 2 && d != "." {
			p = d + "/" + path.Base(strings.Replace(g.path(dir), ".", "a", 1))
		}
	}
	if p != "." && !slices.Contains(g.names, p) {
		g.names = append(g.names, p)
		if dir {
			g.dirs = append(g.dirs, p)
		}
	}
	return p
}

// use returns a path for an operation on an existing entry: often one an
// earlier operation created.
func (g *generator) use(dir bool) string {
	if len(g.names) > 0 && g.chance(60) {
		return g.names[g.r.IntN(len(g.names))]
	}
	return g.path(dir)
}

// target returns a relative symlink target: mostly a sibling or a path
// below, sometimes climbing with "..", sometimes "." or the link itself.
// Never one ending in "/": os.Root and os disagree on creating through
// such a dangling link (EISDIR from os), too fine a point to hold a
// backend to.
func (g *generator) target(link string) string {
	switch n := g.r.IntN(100); {
	case n < 3:
		return "."
	case n < 8:
		return link[strings.LastIndex(link, "/")+1:]
	case n < 20:
		return "../" + g.path(g.chance(50))
	case n < 23:
		return "../../" + g.path(g.chance(50))
	case n < 60:
		// An entry named from the root, reached from the link's
		// directory.
		return strings.Repeat("../", strings.Count(link, "/")) + g.use(g.chance(50))
	}
	return g.path(g.chance(40))
}

func (g *generator) filePerm() fs.FileMode {
	perms := []fs.FileMode{0o644, 0o600, 0o755, 0o640, 0o777, 0o444, 0o000, 0o604}
	p := perms[g.r.IntN(len(perms))]
	if !g.root {
		p |= 0o600 // permissions bind a non-root os side only
	}
	return p
}

func (g *generator) dirPerm() fs.FileMode {
	perms := []fs.FileMode{0o755, 0o700, 0o777, 0o750, 0o711, 0o705}
	return perms[g.r.IntN(len(perms))]
}

func (g *generator) offset() int64 {
	switch n := g.r.IntN(100); {
	case n < 75:
		return int64(g.r.IntN(24))
	case n < 92:
		return 65536 + int64(g.r.IntN(9)) - 4
	default:
		return 1<<20 + int64(g.r.IntN(5))
	}
}

// fill sets the data of a write: mostly a few letters, sometimes a block
// that crosses 64 KiB.
func (g *generator) fill(o *op) {
	if g.chance(8) {
		o.Fill, o.N = byte('A'+g.r.IntN(26)), 60000+g.r.IntN(20000)
		return
	}
	b := make([]byte, g.r.IntN(12))
	for i := range b {
		b[i] = byte('a' + g.r.IntN(26))
	}
	o.Data = string(b)
}

func (g *generator) time() int64 {
	return chtimesBase + int64(g.r.IntN(1000))*86400 + int64(g.r.IntN(86400))
}

func (g *generator) op() op {
	n := g.r.IntN(g.total)
	var k opKind
	for k = 0; n >= g.weights[k]; k++ {
		n -= g.weights[k]
	}
	o := op{Kind: k, H: g.r.IntN(maxHandles)}
	switch k {
	case opOpenFile:
		o.Flag = []int{os.O_RDONLY, os.O_WRONLY, os.O_RDWR, os.O_RDWR}[g.r.IntN(4)]
		for _, b := range []struct {
			bit, percent int
		}{{os.O_CREATE, 55}, {os.O_EXCL, 12}, {os.O_TRUNC, 20}, {os.O_APPEND, 20}} {
			if g.chance(b.percent) {
				o.Flag |= b.bit
			}
		}
		if g.readOnly {
			o.Flag = os.O_RDONLY
		}
		o.Perm = g.filePerm()
		if o.Flag&os.O_CREATE != 0 {
			o.Path = g.create(g.chance(10))
		} else {
			o.Path = g.use(g.chance(15))
		}
	case opWrite:
		g.fill(&o)
	case opWriteAt:
		g.fill(&o)
		o.Off = g.offset()
	case opRead, opReadAt:
		o.N = g.r.IntN(20)
		if g.chance(10) {
			o.N = 70000
		}
		o.Off = g.offset()
	case opSeek:
		o.Whence = g.r.IntN(3)
		o.Off = g.offset() - 8
	case opTruncate:
		o.Off = g.offset()
	case opClose:
		if g.chance(30) {
			o.Flag = 1
		}
	case opFReadDir:
		o.N = []int{-1, 0, 1, 2, 5}[g.r.IntN(5)]
	case opWriteFile:
		o.Path = g.create(false)
		g.fill(&o)
		o.Perm = g.filePerm()
	case opMkdir, opMkdirAll:
		o.Path = g.create(true)
		o.Perm = g.dirPerm()
	case opRename:
		isDir := g.chance(40)
		o.Path = g.use(isDir)
		if g.chance(50) {
			o.Path2 = g.use(isDir != g.chance(20))
		} else {
			o.Path2 = g.create(isDir != g.chance(20))
		}
		if g.chance(10) && o.Path != "." {
			o.Path2 = o.Path + "/" + g.pick("a", "d")
		}
	case opSymlink:
		o.Path2 = g.create(g.chance(30))
		o.Path = g.target(o.Path2)
	case opChmod:
		// The perm is adjusted when the operation runs: directories keep
		// their owner's rwx.
		o.Path = g.use(g.chance(30))
		o.Perm = g.filePerm()
	case opChtimes:
		o.Path = g.use(g.chance(30))
		o.Mtime = g.time()
		if g.chance(80) {
			o.Atime = g.time()
		}
		if g.chance(10) {
			o.Mtime, o.Atime = 0, g.time()
		}
	default:
		o.Path = g.use(g.chance(40))
	}
	if g.readOnly && o.Path != "" && g.chance(6) {
		o.Path = g.decorate(o.Path)
	}
	return o
}

// decorate returns p made into a path io/fs refuses (a trailing slash,
// "." and ".." elements, a doubled or leading slash, the empty path), or
// given a last element longer than NAME_MAX: paths a backend must refuse
// as os does, before or instead of looking them up.
func (g *generator) decorate(p string) string {
	switch g.r.IntN(9) {
	case 0:
		return p + "/"
	case 1:
		return "./" + p
	case 2:
		return p + "/."
	case 3:
		return p + "/../" + path.Base(p)
	case 4:
		return "d//" + path.Base(p)
	case 5:
		return "/" + p
	case 6:
		return ""
	case 7:
		return p + "/" + strings.Repeat("n", 256)
	}
	return strings.Repeat("n", 256)
}

// prologue returns an operation that builds: the first few operations of a
// sequence make directories, files, links and handles for the rest to use.
func (g *generator) prologue(i int) op {
	switch g.r.IntN(6) {
	case 0, 1:
		return op{Kind: opMkdir, Path: g.create(true), Perm: g.dirPerm()}
	case 2, 3:
		o := op{Kind: opWriteFile, Path: g.create(false), Perm: g.filePerm()}
		g.fill(&o)
		return o
	case 4:
		o := op{Kind: opSymlink, Path2: g.create(g.chance(30))}
		o.Path = g.target(o.Path2)
		return o
	}
	return op{Kind: opOpenFile, H: i % maxHandles, Path: g.create(false), Flag: os.O_RDWR | os.O_CREATE, Perm: g.filePerm()}
}

// withOwners returns ops, the operations of seed, as [WithOwners] runs
// them: from a random source of their own, so that the sequence is the
// same otherwise, Chown and Lchown get ids (as root: any; else only -1),
// half the Stats and Lstats become Chowns and Lchowns (often of a name
// given setuid or setgid), a quarter of the
// Chtimes become Lchtimes, and, as root, half the
// Chmods add setuid or setgid bits, which Chown drops and setgid
// directories pass on.
func withOwners(seed int64, ops []op) []op {
	r := rand.New(rand.NewPCG(uint64(seed), 0x0de7))
	root := isRoot()
	id := func() int {
		if !root {
			return -1
		}
		return []int{-1, -1, 0, 1000, 65534}[r.IntN(5)]
	}
	out := make([]op, len(ops))
	suid := ""
	for i, o := range ops {
		o.Owners = true
		// Half the Stats and Lstats become Chowns and Lchowns, which
		// the base weights make rare: of the same name, or of the last
		// one a Chmod gave setuid or setgid.
		if (o.Kind == opStat || o.Kind == opLstat) && r.IntN(2) == 0 {
			o.Kind = map[opKind]opKind{opStat: opChown, opLstat: opLchown}[o.Kind]
			if suid != "" && r.IntN(2) == 0 {
				o.Path = suid
			}
		}
		switch o.Kind {
		case opChown, opLchown:
			o.Uid, o.Gid = id(), id()
		case opChtimes:
			o.NoFollow = r.IntN(4) == 0
		case opChmod:
			if root && r.IntN(2) == 0 {
				o.Extra = []fs.FileMode{fs.ModeSetuid, fs.ModeSetgid, fs.ModeSetuid | fs.ModeSetgid}[r.IntN(3)]
				suid = o.Path
			}
		}
		out[i] = o
	}
	return out
}

// genOps returns the operations of seed.
func genOps(seed int64, n int) []op {
	return newGenerator(seed).sequence(n)
}

// sequence returns n operations: a prologue that builds, then any.
func (g *generator) sequence(n int) []op {
	ops := make([]op, n)
	start := min(n, 6+g.r.IntN(8))
	for i := range start {
		ops[i] = g.prologue(i)
	}
	for i := start; i < n; i++ {
		ops[i] = g.op()
	}
	return ops
}

// readOnlyTree returns the operations of seed that build a tree for the
// read-only differential, the n operations of genOps, and the generator
// after them, to generate the reads (see reads).
func readOnlyTree(seed int64, n int) ([]op, *generator) {
	g := newGenerator(seed)
	return g.sequence(n), g
}

// reads returns n read-only operations over names, the paths of the
// entries of the tree: most hit one, the rest miss or go through files
// and symlinks, as random paths do.
func (g *generator) reads(names []string, n int) []op {
	g.readOnly, g.names, g.dirs = true, names, nil
	g.setWeights(&readOnlyWeights)
	ops := make([]op, n)
	for i := range ops {
		ops[i] = g.op()
	}
	return ops
}
