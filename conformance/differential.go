package conformance

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs/layer"
)

var _ = register("Differential", testDifferential)

// The differential test applies random sequences of operations (see
// ops.go) to the backend and, through package os, to a directory of the
// host, and compares after every operation the error (class, type, Op and
// paths), the data read and the information returned; after every
// checkEvery operations and at the end it compares the whole trees. A
// failing sequence is shrunk (shrink.go) and printed as Go.

const (
	checkEvery  = 10 // operations between comparisons of the whole trees
	batchSize   = 250
	maxReported = 3 // failing sequences shrunk and reported, with distinct signatures
)

func testDifferential(t *testing.T, newFS NewFS, c *config) {
	if runtime.GOOS != "linux" {
		t.Skip("the differential test compares with Linux through package os")
	}
	withUmask0(t)
	base := hostBase(t)
	opsOf := func(seed int64) []op {
		ops := genOps(seed, c.ops)
		if c.owners {
			ops = withOwners(seed, ops)
		}
		return ops
	}
	replayOn := func(t *testing.T) replay {
		return func(ops []op, trace tracer) *divergence { return runSequence(t, newFS, base, ops, trace) }
	}
	const header = "\tfsys := newFS(t)\n"
	runSeeds(t, c, seedSequences{
		run: func(t *testing.T, seed int64, trace tracer) *divergence {
			return replayOn(t)(opsOf(seed), trace)
		},
		annotate: func(t *testing.T, seed int64) string {
			return header + annotate(replayOn(t), opsOf(seed))
		},
		report: func(t *testing.T, name string, seed int64, d *divergence) {
			ops := upTo(opsOf(seed), d)
			small, final := shrinkFailure(replayOn(t), ops, d)
			t.Errorf("seed %d diverges from os (%s) after %d operations; shrunk to %d (replay: -run '%s' -conformance.seed=%d -v):\n%s%s\n%s",
				seed, d.sig, len(ops), len(small), name, seed, header, annotate(replayOn(t), small), final.diff)
		},
	})
}

// seedSequences says how runSeeds runs the sequence of a seed: run applies
// it and returns its first divergence, trace seeing every operation;
// annotate returns it as Go, with the results; report shrinks and reports
// a divergence, name being the test's, to replay it.
type seedSequences struct {
	run      func(t *testing.T, seed int64, trace tracer) *divergence
	annotate func(t *testing.T, seed int64) string
	report   func(t *testing.T, name string, seed int64, d *divergence)
}

// runSeeds runs the sequences of c's seeds, or of the one seed
// -conformance.seed replays (logging it), in subtests of batchSize seeds,
// and reports the first maxReported divergences of distinct signatures.
func runSeeds(t *testing.T, c *config, seqs seedSequences) {
	var seeds []int64
	if *flagSeed != 0 {
		seeds = []int64{*flagSeed}
	} else {
		for s := range c.seeds {
			seeds = append(seeds, int64(s+1))
		}
	}
	replay := *flagSeed != 0
	failed, reported := 0, map[string]bool{}
	stats := &seqStats{}
	name := t.Name()
	start := time.Now()
	for lo := 0; lo < len(seeds); lo += batchSize {
		batch := seeds[lo:min(lo+batchSize, len(seeds))]
		t.Run(fmt.Sprintf("seeds_%d-%d", batch[0], batch[len(batch)-1]), func(t *testing.T) {
			for _, seed := range batch {
				d := seqs.run(t, seed, stats.count)
				if replay {
					t.Logf("seed %d:\n%s", seed, seqs.annotate(t, seed))
				}
				if d == nil {
					continue
				}
				failed++
				if reported[d.sig] || len(reported) >= maxReported {
					t.Errorf("seed %d diverges too (%s)", seed, d.sig)
					continue
				}
				reported[d.sig] = true
				seqs.report(t, name, seed, d)
			}
		})
	}
	if failed > 0 {
		t.Errorf("%d of %d sequences diverge from os; replay one with -run '%s' -conformance.seed=N -v", failed, len(seeds), name)
	}
	t.Logf("%d sequences of %d operations in %v; %v", len(seeds), c.ops, time.Since(start).Round(time.Millisecond), stats)
}

// seqStats counts what the sequences did, to show how well they cover.
type seqStats struct {
	ran, skipped, failed int
	classes              map[string]int
}

func (s *seqStats) count(_ int, _ op, ran bool, host, _ result) {
	if !ran {
		s.skipped++
		return
	}
	s.ran++
	if host.Err.Class != classNil {
		s.failed++
		if s.classes == nil {
			s.classes = map[string]int{}
		}
		s.classes[host.Err.Class]++
	}
}

func (s *seqStats) String() string {
	return fmt.Sprintf("%d operations ran (%d skipped), %d failed on os: %v", s.ran, s.skipped, s.failed, s.classes)
}

// hostBase returns a directory for the host side: under /dev/shm when it
// is a writable tmpfs, for speed, else under t.TempDir().
func hostBase(t *testing.T) string {
	if dir, err := os.MkdirTemp("/dev/shm", "conformance-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

// divergence is the first difference found in a sequence.
type divergence struct {
	index int    // the operation after which it was found
	sig   string // what differs: the operation kind and the field, or "tree"
	diff  string
}

// result is what the suite compares of one operation.
type result struct {
	Err    errDesc
	N      int64     `json:",omitempty"`
	Data   string    `json:",omitempty"`
	Name   string    `json:",omitempty"`
	Info   *infoDesc `json:",omitempty"`
	List   []string  `json:",omitempty"`
	Target string    `json:",omitempty"`
}

// infoDesc is what the suite compares of an fs.FileInfo: modification
// times only when Chtimes set them (see setByChtimes), sizes not of
// directories.
type infoDesc struct {
	Name  string
	Mode  string
	Size  int64
	Mtime string
}

func describeInfo(fi fs.FileInfo) *infoDesc {
	if fi == nil {
		return nil
	}
	d := &infoDesc{Name: fi.Name(), Mode: fi.Mode().String(), Size: fi.Size()}
	if fi.IsDir() {
		d.Size = 0
	}
	if setByChtimes(fi.ModTime()) {
		d.Mtime = formatTime(fi.ModTime())
	}
	return d
}

func summarize(data []byte) string {
	if len(data) <= 64 {
		return fmt.Sprintf("%q", data)
	}
	return fmt.Sprintf("%d bytes, sha256 %.16x, starting %q", len(data), sha256.Sum256(data), data[:16])
}

func describeList(list []fs.DirEntry) []string {
	names := make([]string, len(list))
	for i, e := range list {
		names[i] = e.Name() + " " + e.Type().String()
	}
	return names
}

// slot is the state of one handle slot, the same on both sides.
type slot struct {
	open    bool // holds an open handle
	closed  bool // holds a handle closed on purpose, to use
	dir     bool // the handle is a directory
	gen     int  // mutations when it was opened
	dirRead bool // ReadDir was called on it
}

// runner applies a sequence to both sides.
type runner struct {
	host      *hostFS
	back      layer.FS
	hostFiles [maxHandles]layer.File
	backFiles [maxHandles]layer.File
	slots     [maxHandles]slot
	mutations int
	panicked  string // the backend's first panic, with its stack
	ops       []op   // the sequence
}

// tracer sees each operation of a sequence: whether it ran, and what each
// side gave.
type tracer func(i int, o op, ran bool, host, back result)

// replay applies a sequence to fresh file systems and returns its first
// divergence, or nil: shrinking and reporting call it again and again.
type replay func(ops []op, trace tracer) *divergence

// runSequence applies ops to a fresh backend and a fresh host directory
// and returns the first divergence, or nil. trace, if not nil, sees every
// operation run.
func runSequence(t *testing.T, newFS NewFS, base string, ops []op, trace tracer) *divergence {
	t.Helper()
	dir := sequenceDir(t, base)
	defer os.RemoveAll(dir)
	r := &runner{host: &hostFS{dir: dir}, back: newFS(t), ops: ops}
	defer r.closeAll()
	if err := r.back.Chmod(".", 0o755); err != nil {
		return &divergence{index: -1, sig: "setup", diff: fmt.Sprintf(`Chmod(".", 0o755) of the backend's root: %v`, err)}
	}
	return r.run(trace)
}

// sequenceDir returns a new host directory under base, of mode 0o755.
func sequenceDir(t *testing.T, base string) string {
	t.Helper()
	dir, err := os.MkdirTemp(base, "seq")
	if err != nil {
		t.Fatalf("host directory: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	return dir
}

// run applies r.ops to both sides, comparing each result and, every
// checkEvery operations and at the end, the whole trees.
func (r *runner) run(trace tracer) *divergence {
	ops := r.ops
	for i, o := range ops {
		o, skip := r.prepare(o)
		if skip {
			if trace != nil {
				trace(i, o, false, result{}, result{})
			}
			continue
		}
		hostRes := r.apply(r.host, &r.hostFiles, o, false)
		backRes := r.apply(r.back, &r.backFiles, o, true)
		r.after(o, &hostRes, &backRes)
		if trace != nil {
			trace(i, o, true, hostRes, backRes)
		}
		if diff := cmp.Diff(hostRes, backRes); diff != "" {
			return &divergence{index: i, sig: signature(o, hostRes, backRes), diff: diff + r.panicked}
		}
		if (i+1)%checkEvery == 0 || i == len(ops)-1 {
			if d := r.compareTrees(i); d != nil {
				return d
			}
		}
	}
	return r.compareTrees(len(ops))
}

// signature names what differs, to tell failures apart.
func signature(o op, host, back result) string {
	var fields []string
	if host.Err.Class != back.Err.Class {
		fields = append(fields, "class "+host.Err.Class+"/"+back.Err.Class)
	} else if host.Err != back.Err {
		fields = append(fields, "error")
	}
	if host.N != back.N || host.Data != back.Data || host.Target != back.Target || host.Name != back.Name {
		fields = append(fields, "value")
	}
	if !cmp.Equal(host.Info, back.Info) {
		fields = append(fields, "info")
	}
	if !slices.Equal(host.List, back.List) {
		fields = append(fields, "list")
	}
	return opNames[o.Kind] + ": " + strings.Join(fields, ", ")
}

func (r *runner) closeAll() {
	for i := range maxHandles {
		for _, f := range []layer.File{r.hostFiles[i], r.backFiles[i]} {
			if f != nil {
				func() {
					defer func() { _ = recover() }()
					f.Close()
				}()
			}
		}
	}
}

// prepare decides whether o runs, and adjusts it to the host's state:
// directories keep their owner's rwx under Chmod.
func (r *runner) prepare(o op) (op, bool) {
	if o.Kind.onHandle() {
		if o.Kind == opOpenFile {
			return o, r.escapes(o.Path, true)
		}
		// An empty slot stands for the next one that holds an open
		// handle, or else a closed one.
		for _, open := range []bool{true, false} {
			for i := range maxHandles {
				h := (o.H + i) % maxHandles
				if s := r.slots[h]; s.open == open && (s.open || s.closed) {
					o.H = h
					// Seek on a directory is left to each system.
					return o, o.Kind == opSeek && s.dir && s.open
				}
			}
		}
		return o, true
	}
	switch o.Kind {
	case opSettle:
		// Handles stay with the layer they were opened on: settle only
		// with none open.
		for _, s := range r.slots {
			if s.open {
				return o, true
			}
		}
		return o, false
	case opRename:
		return o, r.escapes(o.Path, false) || r.escapes(o.Path2, false)
	case opSymlink:
		return o, r.escapes(o.Path2, false)
	case opRemove, opRemoveAll, opLstat, opReadlink, opLchown, opMkdir:
		return o, r.escapes(o.Path, false)
	case opChtimes:
		return o, r.escapes(o.Path, !o.NoFollow)
	case opChmod:
		if fi, err := os.Stat(r.host.join(o.Path)); err == nil && fi.IsDir() {
			o.Perm |= 0o700
		}
	}
	return o, r.escapes(o.Path, true)
}

func (r *runner) escapes(name string, followLast bool) bool {
	return r.host.escapes(name, followLast)
}

// mutates reports whether o may change a directory.
func mutates(o op) bool {
	switch o.Kind {
	case opOpenFile:
		return o.Flag&os.O_CREATE != 0
	case opWriteFile, opMkdir, opMkdirAll, opRemove, opRemoveAll, opRename, opSymlink, opSettle:
		return true
	}
	return false
}

// apply runs o on one side. A panic of the backend becomes an error of
// class "panic".
func (r *runner) apply(fsys layer.FS, files *[maxHandles]layer.File, o op, backend bool) (res result) {
	if backend {
		defer func() {
			if p := recover(); p != nil {
				res = result{Err: errDesc{Class: fmt.Sprintf("panic: %v", p)}}
				if r.panicked == "" {
					r.panicked = fmt.Sprintf("\nbackend panic: %v\n%s", p, debug.Stack())
				}
				if o.Kind == opOpenFile {
					files[o.H] = nil
				}
			}
		}()
	}
	f := files[o.H]
	var err error
	switch o.Kind {
	case opOpenFile:
		if f != nil {
			f.Close()
			files[o.H] = nil
		}
		var nf layer.File
		nf, err = fsys.OpenFile(o.Path, o.Flag, o.Perm)
		if err == nil {
			files[o.H] = nf
			res.Name = nf.Name()
			fi, serr := nf.Stat()
			if serr != nil {
				res.Data = "Stat after OpenFile: " + describeErr(serr).String()
			}
			res.Info = describeInfo(fi)
		}
	case opWrite:
		var n int
		n, err = f.Write(o.data())
		res.N = int64(n)
	case opWriteAt:
		var n int
		n, err = f.WriteAt(o.data(), o.Off)
		res.N = int64(n)
	case opRead:
		buf := make([]byte, o.N)
		var n int
		n, err = f.Read(buf)
		res.N, res.Data = int64(n), summarize(buf[:n])
	case opReadAt:
		buf := make([]byte, o.N)
		var n int
		n, err = f.ReadAt(buf, o.Off)
		res.N, res.Data = int64(n), summarize(buf[:n])
	case opSeek:
		res.N, err = f.Seek(o.Off, o.Whence)
	case opTruncate:
		err = f.Truncate(o.Off)
	case opClose:
		err = f.Close()
	case opFStat:
		var fi fs.FileInfo
		fi, err = f.Stat()
		res.Info = describeInfo(fi)
	case opFReadDir:
		var list []fs.DirEntry
		list, err = f.ReadDir(o.N)
		res.List = describeList(list)
		slices.Sort(res.List) // the order of a handle's listing is the system's
	case opSync:
		err = f.Sync()
	case opWriteFile:
		err = fsys.WriteFile(o.Path, o.data(), o.Perm)
	case opReadFile:
		var data []byte
		data, err = fsys.ReadFile(o.Path)
		res.Data = summarize(data)
	case opMkdir:
		err = fsys.Mkdir(o.Path, o.Perm)
	case opMkdirAll:
		err = fsys.MkdirAll(o.Path, o.Perm)
	case opRemove:
		err = fsys.Remove(o.Path)
	case opRemoveAll:
		err = fsys.RemoveAll(o.Path)
	case opRename:
		err = fsys.Rename(o.Path, o.Path2)
	case opSymlink:
		err = fsys.Symlink(o.Path, o.Path2)
	case opReadlink:
		res.Target, err = fsys.Readlink(o.Path)
		if target2, err2 := fsys.ReadLink(o.Path); target2 != res.Target || describeErr(err2) != describeErr(err) {
			res.Data = fmt.Sprintf("ReadLink gives %q, %v", target2, describeErr(err2))
		}
	case opLstat, opStat:
		var fi fs.FileInfo
		if o.Kind == opLstat {
			fi, err = fsys.Lstat(o.Path)
		} else {
			fi, err = fsys.Stat(o.Path)
		}
		res.Info = describeInfo(fi)
	case opReadDir:
		var list []fs.DirEntry
		list, err = fsys.ReadDir(o.Path)
		res.List = describeList(list)
	case opChmod:
		err = fsys.Chmod(o.Path, o.Perm|o.Extra)
	case opChtimes:
		var at, mt time.Time
		if o.Atime != 0 {
			at = time.Unix(o.Atime, 0)
		}
		if o.Mtime != 0 {
			mt = time.Unix(o.Mtime, 0)
		}
		if o.NoFollow {
			err = layer.Lchtimes(fsys, o.Path, at, mt)
		} else {
			err = fsys.Chtimes(o.Path, at, mt)
		}
	case opChown:
		err = fsys.Chown(o.Path, o.ids()[0], o.ids()[1])
	case opLchown:
		err = fsys.Lchown(o.Path, o.ids()[0], o.ids()[1])
	case opSettle:
		if s, ok := fsys.(Settler); ok && backend {
			err = s.Settle()
		}
	}
	res.Err = describeErr(err)
	switch {
	case res.Err.Class == classOther:
		// Errors of no class (EBUSY, os's refusal of WriteAt in append
		// mode) are compared by class only.
		res.Err = errDesc{Class: classOther}
	case o.Kind == opRemoveAll:
		// os.RemoveAll reports the step that failed: the Op and path of
		// an open of the parent, an unlinkat, ...
		res.Err = errDesc{Class: res.Err.Class}
	}
	return res
}

// after updates the slots once o ran on both sides, and drops from the
// results what the two systems may legitimately disagree on.
func (r *runner) after(o op, host, back *result) {
	if mutates(o) {
		r.mutations++
	}
	s := &r.slots[o.H]
	if zeroLength(o) {
		// os makes no system call for an empty buffer, so it reports
		// no error where the call would fail (a closed handle, a
		// read-only one, append mode): either answer is accepted.
		host.Err, back.Err = errDesc{Class: classNil}, errDesc{Class: classNil}
	}
	if s.closed && o.Kind == opWriteAt {
		// os refuses WriteAt in append mode before it looks at the
		// handle: on a closed handle, that error and ErrClosed are
		// both right.
		for _, res := range []*result{host, back} {
			if res.Err.Class == classOther || res.Err.Class == classClosed {
				res.Err = errDesc{Class: classClosed}
			}
		}
	}
	if s.dir && (o.Kind == opRead || o.Kind == opReadAt) {
		// Reading a directory is EISDIR, but ext4 says EINVAL once
		// the handle has listed entries: the host's file system shows.
		for _, res := range []*result{host, back} {
			if res.Err.Class == classEINVAL {
				res.Err.Class = classIsDir
			}
		}
	}
	switch o.Kind {
	case opOpenFile:
		*s = slot{}
		if r.hostFiles[o.H] != nil && r.backFiles[o.H] != nil {
			*s = slot{open: true, dir: host.Info != nil && strings.HasPrefix(host.Info.Mode, "d"), gen: r.mutations}
			return
		}
		for _, files := range []*[maxHandles]layer.File{&r.hostFiles, &r.backFiles} {
			if files[o.H] != nil {
				files[o.H].Close()
				files[o.H] = nil
			}
		}
	case opClose:
		if o.Flag != 0 && s.open {
			*s = slot{closed: true}
			return
		}
		*s = slot{}
		r.hostFiles[o.H], r.backFiles[o.H] = nil, nil
	case opFReadDir:
		comparable := s.open && s.gen == r.mutations
		fresh := !s.dirRead
		s.dirRead = true
		switch {
		case !comparable:
			// The directory changed since the handle opened: which
			// entries a listing shows is the system's choice.
			for _, res := range []*result{host, back} {
				res.List = nil
				if res.Err.Class == classEOF {
					res.Err = errDesc{Class: classNil}
				}
			}
		case fresh && o.N <= 0:
		default:
			// Pages come in the system's order: compare their sizes.
			host.N, back.N = int64(len(host.List)), int64(len(back.List))
			host.List, back.List = nil, nil
		}
	}
}

// zeroLength reports a read or write of no bytes.
func zeroLength(o op) bool {
	switch o.Kind {
	case opRead, opReadAt:
		return o.N == 0
	case opWrite, opWriteAt:
		return len(o.data()) == 0
	}
	return false
}

// treeEntry is what the suite compares of one entry of a whole tree.
type treeEntry struct {
	Path    string
	Mode    string
	Size    int64
	Mtime   string
	Content string
	Target  string
	Owner   string // "uid:gid", compared with WithOwners
}

// readTree reads every entry of fsys through its own methods, without
// following symlinks; with owners, each entry's owner too.
func readTree(fsys layer.FS, owners bool) ([]treeEntry, error) {
	var entries []treeEntry
	var walk func(dir string) error
	walk = func(p string) error {
		fi, err := fsys.Lstat(p)
		if err != nil {
			return err
		}
		e := treeEntry{Path: p, Mode: fi.Mode().String()}
		if owners {
			e.Owner = ownerString(fi)
		}
		if setByChtimes(fi.ModTime()) {
			e.Mtime = formatTime(fi.ModTime())
		}
		switch fi.Mode().Type() {
		case 0:
			data, err := fsys.ReadFile(p)
			if err != nil {
				return err
			}
			e.Size, e.Content = fi.Size(), summarize(data)
		case fs.ModeSymlink:
			e.Size = fi.Size()
			if e.Target, err = fsys.Readlink(p); err != nil {
				return err
			}
		case fs.ModeDir:
			entries = append(entries, e)
			list, err := fsys.ReadDir(p)
			if err != nil {
				return err
			}
			for _, child := range list {
				name := child.Name()
				if p != "." {
					name = p + "/" + name
				}
				if err := walk(name); err != nil {
					return err
				}
			}
			return nil
		}
		entries = append(entries, e)
		return nil
	}
	err := walk(".")
	return entries, err
}

// ownerString is fi's owner as "uid:gid", where an id the layer does not
// record (layer.NoOwner) reads as the process's: what a file made by this
// process on the host has.
func ownerString(fi fs.FileInfo) string {
	uid, gid, _ := layer.OwnerOf(fi)
	if uid == layer.NoOwner {
		uid = uint32(os.Getuid())
	}
	if gid == layer.NoOwner {
		gid = uint32(os.Getgid())
	}
	return fmt.Sprintf("%d:%d", uid, gid)
}

func (r *runner) compareTrees(index int) (d *divergence) {
	owners := false
	for _, o := range r.ops {
		owners = owners || o.Owners
	}
	hostTree, err := readTree(r.host, owners)
	if err != nil {
		return &divergence{index: index, sig: "tree", diff: fmt.Sprintf("reading the host's tree: %v", err)}
	}
	defer func() {
		if p := recover(); p != nil {
			d = &divergence{index: index, sig: "tree: panic", diff: fmt.Sprintf("reading the backend's tree: panic: %v\n%s", p, debug.Stack())}
		}
	}()
	backTree, err := readTree(r.back, owners)
	if err != nil {
		return &divergence{index: index, sig: "tree: read error", diff: fmt.Sprintf("reading the backend's tree: %v", err)}
	}
	if diff := cmp.Diff(hostTree, backTree); diff != "" {
		return &divergence{index: index, sig: "tree", diff: "whole tree (-os +backend):\n" + diff}
	}
	return nil
}
