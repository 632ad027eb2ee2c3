package conformance

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs/layer"
)

// The read-only differential is the differential test for backends that
// cannot be written: each seed's tree is made on the host through os by
// the differential's own operations, the backend is built to serve the
// same tree, and the seed's read-only operations are applied to both and
// compared as the differential compares them.

// RunReadOnlyDifferential runs the differential test on a read-only
// backend. For each random sequence it builds a tree in a new host
// directory, through os, from the operations the differential test
// generates (nested directories, symlinks dangling, looping and climbing
// through "..", odd modes, empty, large and sparse files), then calls build
// with that directory to get the backend holding the same tree (a pack of
// it, say). It applies random read-only operations over the tree's names
// (OpenFile with O_RDONLY, Read, ReadAt, Seek, Close, Stat and
// ReadDir of handles, ReadFile, Readlink, Lstat, Stat, ReadDir; now and
// then on a path that is not an io/fs path or has a name past NAME_MAX)
// to the backend and, through os, to the directory, and compares every
// result and, every 10 operations and at the end, the whole trees, as
// the differential test does; a failing sequence is shrunk, its reads and
// then its tree, and printed as Go. It runs as many sequences as the
// differential test.
//
// build may register cleanups with t, which are run when the batch of
// sequences ends, and should be cheap: it is called for every sequence,
// and again while shrinking a failure. The directory is removed once its
// sequence has run.
//
// Of opts, [WithSeeds], [WithOps] (the operations of the tree and, as
// many, the reads) and [WithOwners] apply, as do the flags
// -conformance.seeds, -conformance.ops and -conformance.seed. It sets the
// process umask to 0 while it runs, so it must not run in parallel with
// other tests of the same process that create files through package os.
func RunReadOnlyDifferential(t *testing.T, build func(t *testing.T, dir string) fs.FS, opts ...Option) {
	if runtime.GOOS != "linux" {
		t.Skip("the differential test compares with Linux through package os")
	}
	c := newConfig(opts)
	withUmask0(t)
	base := hostBase(t)
	opsOf := func(seed int64) (tree, reads []op) { return readOnlyOps(t, base, seed, c) }
	seqs := func(t *testing.T) readOnlySequences { return readOnlySequences{t: t, build: build, base: base} }
	runSeeds(t, c, seedSequences{
		run: func(t *testing.T, seed int64, trace tracer) *divergence {
			tree, reads := opsOf(seed)
			return seqs(t).run(tree, reads, nil, trace)
		},
		annotate: func(t *testing.T, seed int64) string {
			return seqs(t).annotate(opsOf(seed))
		},
		report: func(t *testing.T, name string, seed int64, d *divergence) {
			tree, reads := opsOf(seed)
			seqs(t).report(name, seed, tree, upTo(reads, d), d)
		},
	})
}

// readOnlyOps returns the operations of seed that build a tree and those
// that read it, over the paths of its entries, which it builds in a
// directory under base to find.
func readOnlyOps(t *testing.T, base string, seed int64, c *config) (tree, reads []op) {
	tree, g := readOnlyTree(seed, c.ops)
	if c.owners {
		tree = withOwners(seed, tree)
	}
	reads = g.reads(treePaths(sequenceDir(t, base), tree), c.ops)
	for i := range reads {
		reads[i].Owners = c.owners // the trees compare owners
	}
	return tree, reads
}

// treePaths makes tree in dir, returns the paths of its entries, and
// removes dir.
func treePaths(dir string, tree []op) []string {
	defer os.RemoveAll(dir)
	r := &runner{host: &hostFS{dir: dir}}
	r.build(tree, nil)
	var paths []string
	entries, _ := readTree(r.host, false)
	for _, e := range entries[1:] { // not "."
		paths = append(paths, e.Path)
	}
	return paths
}

// readOnlySequences runs sequences of the read-only differential in host
// directories under base.
type readOnlySequences struct {
	t     *testing.T
	build func(t *testing.T, dir string) fs.FS
	base  string
}

// run makes tree in a new host directory through os, has build serve it,
// and applies reads to both as runSequence applies a sequence. traceTree,
// if not nil, sees the operations that made the tree, with os's result on
// both sides.
func (s readOnlySequences) run(tree, reads []op, traceTree, trace tracer) *divergence {
	dir := sequenceDir(s.t, s.base)
	defer os.RemoveAll(dir)
	r := &runner{host: &hostFS{dir: dir}, ops: reads}
	r.build(tree, traceTree)
	r.back = readOnlyLayer{s.build(s.t, dir)}
	defer r.closeAll()
	return r.run(trace)
}

// report shrinks the failing sequence of seed, its reads first and then
// its tree, and reports it as Go.
func (s readOnlySequences) report(name string, seed int64, tree, reads []op, d *divergence) {
	s.t.Helper()
	small, final := shrinkFailure(func(ops []op, trace tracer) *divergence { return s.run(tree, ops, nil, trace) }, reads, d)
	smallTree, final := shrinkFailure(func(ops []op, trace tracer) *divergence { return s.run(ops, small, nil, trace) }, tree, final)
	s.t.Errorf("seed %d diverges from os (%s) after %d reads of a tree of %d operations; shrunk to %d of a tree of %d (replay: -run '%s' -conformance.seed=%d -v):\n%s\n%s",
		seed, d.sig, len(reads), len(tree), len(small), len(smallTree), name, seed, s.annotate(smallTree, small), final.diff)
}

// annotate runs tree and reads again and returns them as Go, each
// operation with the result of os and, where it differs, of the backend.
func (s readOnlySequences) annotate(tree, reads []op) string {
	var made, read strings.Builder
	s.run(tree, reads, annotateTo(&made), annotateTo(&read))
	return "\t// The tree, made through os in a host directory dir:\n" + made.String() +
		"\tfsys = build(t, dir)\n" + read.String()
}

// build applies ops to the host side alone, as the differential applies
// them but with their results ignored, and closes the handles they leave
// open: the tree a read-only sequence then reads. trace, if not nil, sees
// each operation with os's result on both sides.
func (r *runner) build(ops []op, trace tracer) {
	for i, o := range ops {
		o, skip := r.prepare(o)
		var res result
		if !skip {
			res = r.apply(r.host, &r.hostFiles, o, false)
			r.backFiles = r.hostFiles // one side: the slots follow its handles
			r.after(o, &res, &res)
		}
		if trace != nil {
			trace(i, o, !skip, res, res)
		}
	}
	r.backFiles = [maxHandles]layer.File{}
	r.closeAll()
	r.hostFiles, r.slots, r.mutations = [maxHandles]layer.File{}, [maxHandles]slot{}, 0
}

// readOnlyLayer presents a read-only backend as the layer.FS the runner
// drives: reads go through the io/fs and layer helpers, which use the
// backend's own methods where it has them (OpenFile with O_RDONLY is its
// Open, or its OpenFile), and writes, which the read-only differential
// never makes, are unsupported.
type readOnlyLayer struct {
	fs.FS
}

var _ layer.FS = readOnlyLayer{}

func (l readOnlyLayer) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	return layer.OpenFile(l.FS, name, flag, perm)
}

func (l readOnlyLayer) ReadFile(name string) ([]byte, error)       { return fs.ReadFile(l.FS, name) }
func (l readOnlyLayer) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(l.FS, name) }
func (l readOnlyLayer) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(l.FS, name) }
func (l readOnlyLayer) Lstat(name string) (fs.FileInfo, error)     { return fs.Lstat(l.FS, name) }
func (l readOnlyLayer) ReadLink(name string) (string, error)       { return fs.ReadLink(l.FS, name) }
func (l readOnlyLayer) Readlink(name string) (string, error)       { return layer.Readlink(l.FS, name) }

// The writes.

func (l readOnlyLayer) Create(name string) (layer.File, error) {
	return nil, layer.Unsupported("open", name)
}

func (l readOnlyLayer) WriteFile(name string, _ []byte, _ fs.FileMode) error {
	return layer.Unsupported("open", name)
}

func (l readOnlyLayer) Mkdir(name string, _ fs.FileMode) error {
	return layer.Unsupported("mkdir", name)
}

func (l readOnlyLayer) MkdirAll(name string, _ fs.FileMode) error {
	return layer.Unsupported("mkdir", name)
}

func (l readOnlyLayer) Remove(name string) error { return layer.Unsupported("remove", name) }

func (l readOnlyLayer) RemoveAll(name string) error { return layer.Unsupported("RemoveAll", name) }

func (l readOnlyLayer) Chmod(name string, _ fs.FileMode) error {
	return layer.Unsupported("chmod", name)
}

func (l readOnlyLayer) Chown(name string, _, _ int) error { return layer.Unsupported("chown", name) }

func (l readOnlyLayer) Lchown(name string, _, _ int) error { return layer.Unsupported("lchown", name) }

func (l readOnlyLayer) Chtimes(name string, _, _ time.Time) error {
	return layer.Unsupported("chtimes", name)
}

func (l readOnlyLayer) Whiteout(name string) error { return layer.Unsupported("whiteout", name) }

func (l readOnlyLayer) Rename(oldname, newname string) error {
	return layer.LinkError("rename", oldname, newname, errors.ErrUnsupported)
}

func (l readOnlyLayer) Symlink(oldname, newname string) error {
	return layer.LinkError("symlink", oldname, newname, errors.ErrUnsupported)
}
