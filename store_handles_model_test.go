package packfs_test

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
)

var handleModelSeeds = flag.Int("handle-model-seeds", 0, "seeds of TestStoreHandlesModel (0: the default)")
var handleModelTail = flag.Int("handle-model-tail", 12, "steps TestStoreHandlesModel prints on failure")

// errClass names the error of an operation as the comparison with os
// needs it: the sentinel or errno it wraps, not its text.
func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"closed", fs.ErrClosed},
		{"ENOTEMPTY", syscall.ENOTEMPTY},
		{"EISDIR", syscall.EISDIR},
		{"ENOTDIR", syscall.ENOTDIR},
		{"EINVAL", syscall.EINVAL},
		{"EBADF", syscall.EBADF},
		{"ENAMETOOLONG", syscall.ENAMETOOLONG},
		{"ELOOP", syscall.ELOOP},
		{"EXDEV", syscall.EXDEV},
		{"notexist", fs.ErrNotExist},
		{"exist", fs.ErrExist},
		{"invalid", fs.ErrInvalid},
		{"permission", fs.ErrPermission},
		{"EOF", io.EOF},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other(" + err.Error() + ")"
}

// modelHandle is one file opened the same way in the store and in a host
// directory.
type modelHandle struct {
	name   string
	flag   int
	dir    bool
	s      layer.File
	o      *os.File
	closed bool
	listed bool
}

func (h *modelHandle) String() string {
	return fmt.Sprintf("%s(flag %#x, dir %v, closed %v)", h.name, h.flag, h.dir, h.closed)
}

// TestStoreHandlesModel: many handles on a store (read-only, read-write,
// write-only, O_APPEND, directories) opened and closed in random orders,
// some closed twice, beside renames (of files over open files, of their
// parent directories, onto themselves, through a symlink's alias),
// removes, whole-file writes, checkpoints and transactions committed or
// undone; the same sequence runs in a host directory through os. After
// each step every handle still open must read, stat and list what its os
// twin does, and a closed handle must fail with fs.ErrClosed.
func TestStoreHandlesModel(t *testing.T) {
	seeds, steps := 6, 400
	if testsize.Short() || raceEnabled {
		seeds, steps = 3, 250
	}
	if *handleModelSeeds > 0 {
		seeds = *handleModelSeeds
	}
	// aliases: files open for reading by names through the symlink too,
	// which TestStoreReadOnlyHandleByAlias takes case by case; the run
	// without them goes on past that to everything else.
	for _, aliases := range []bool{false, true} {
		for seed := range seeds {
			t.Run(fmt.Sprintf("aliases=%v/seed%d", aliases, seed), func(t *testing.T) {
				storeHandlesModel(t, uint64(seed), steps, aliases)
			})
		}
	}
}

var errUndoTx = errors.New("undo this transaction")

func storeHandlesModel(t *testing.T, seed uint64, steps int, aliases bool) {
	r := rand.New(rand.NewPCG(seed, 0x4a4e))
	s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
	mustDo(t, err)
	defer s.Close()
	root := t.TempDir()
	host := func(name string) string { return filepath.Join(root, filepath.FromSlash(name)) }

	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		start := max(0, len(log)-*handleModelTail)
		t.Fatalf("seed %d step %d: %s\nlast steps:\n%s", seed, len(log), fmt.Sprintf(format, args...), strings.Join(log[start:], "\n"))
	}
	same := func(what string, serr, oerr error) {
		t.Helper()
		if sc, oc := errClass(serr), errClass(oerr); sc != oc {
			fail("%s: store %s (%v), os %s (%v)", what, sc, serr, oc, oerr)
		}
	}

	// The tree: two directories, one below the other, files in each, and
	// a symlink aliasing d1.
	for _, d := range []string{"d1", "d1/s", "d2"} {
		mustDo(t, s.Mkdir(d, 0o755))
		mustDo(t, os.Mkdir(host(d), 0o755))
	}
	for _, f := range []string{"d1/a", "d1/b", "d1/s/a", "d2/a", "c"} {
		mustDo(t, s.WriteFile(f, []byte("init "+f), 0o644))
		mustDo(t, os.WriteFile(host(f), []byte("init "+f), 0o644))
	}
	mustDo(t, s.Symlink("d1", "ln"))
	mustDo(t, os.Symlink("d1", host("ln")))

	files := []string{"d1/a", "d1/b", "d1/s/a", "d2/a", "d2/b", "c", "e", "ln/a", "ln/b", "ln/s/a", "d1/s/b", "d2/s/a"}
	dirs := []string{"d1", "d2", "d1/s", "d2/s", "ln", "ln/s", "d3"}
	names := append(slices.Clone(files), dirs...)
	// The root opens and lists, but a rename of the store's root is
	// rename(2) of a mount point (EBUSY), which the host directory is not.
	openNames := append(slices.Clone(names), ".")
	pick := func(from []string) string { return from[r.IntN(len(from))] }

	var handles []*modelHandle
	open := func() []*modelHandle {
		var hs []*modelHandle
		for _, h := range handles {
			if !h.closed {
				hs = append(hs, h)
			}
		}
		return hs
	}

	check := func() {
		t.Helper()
		for _, h := range handles {
			if h.closed {
				buf := make([]byte, 4)
				_, err := h.s.ReadAt(buf, 0)
				if !errors.Is(err, fs.ErrClosed) {
					fail("%v: ReadAt of a closed handle: %v, want fs.ErrClosed", h, err)
				}
				if _, err := h.s.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
					fail("%v: Write to a closed handle: %v, want fs.ErrClosed", h, err)
				}
				if _, err := h.s.Stat(); !errors.Is(err, fs.ErrClosed) {
					fail("%v: Stat of a closed handle: %v, want fs.ErrClosed", h, err)
				}
				continue
			}
			sfi, serr := h.s.Stat()
			ofi, oerr := h.o.Stat()
			same(fmt.Sprintf("%v: Stat", h), serr, oerr)
			if serr == nil {
				if sfi.Mode().Type() != ofi.Mode().Type() || (!sfi.IsDir() && sfi.Size() != ofi.Size()) {
					fail("%v: Stat: store %v size %d, os %v size %d", h, sfi.Mode(), sfi.Size(), ofi.Mode(), ofi.Size())
				}
			}
			if h.dir {
				continue
			}
			sb := make([]byte, 256)
			ob := make([]byte, 256)
			sn, serr := h.s.ReadAt(sb, 0)
			on, oerr := h.o.ReadAt(ob, 0)
			same(fmt.Sprintf("%v: ReadAt", h), serr, oerr)
			if string(sb[:sn]) != string(ob[:on]) {
				fail("%v: ReadAt: store %q, os %q", h, sb[:sn], ob[:on])
			}
			soff, serr := h.s.Seek(0, io.SeekCurrent)
			ooff, oerr := h.o.Seek(0, io.SeekCurrent)
			same(fmt.Sprintf("%v: Seek", h), serr, oerr)
			if soff != ooff {
				fail("%v: offset: store %d, os %d", h, soff, ooff)
			}
		}
	}

	flags := []int{os.O_RDONLY, os.O_RDONLY, os.O_RDWR, os.O_WRONLY, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_APPEND, os.O_RDWR | os.O_CREATE}

	// treeOp makes one change of the tree through w (the store or a
	// transaction) and through os, and compares their errors.
	type writer interface {
		Rename(oldname, newname string) error
		Remove(name string) error
		WriteFile(name string, data []byte, perm fs.FileMode) error
		Mkdir(name string, perm fs.FileMode) error
	}
	treeOp := func(w writer, applyOS bool, step int) string {
		var line string
		var serr, oerr error
		switch k := r.IntN(10); {
		case k < 5:
			from, to := pick(names), pick(names)
			if r.IntN(6) == 0 {
				to = from // a rename onto itself
			}
			line = fmt.Sprintf("rename %s %s", from, to)
			serr = w.Rename(from, to)
			if applyOS {
				oerr = os.Rename(host(from), host(to))
			}
		case k < 7:
			n := pick(names)
			line = "remove " + n
			serr = w.Remove(n)
			if applyOS {
				oerr = os.Remove(host(n))
			}
		case k < 9:
			n := pick(files)
			data := fmt.Sprintf("whole %d %s", step, n)
			line = "writefile " + n
			serr = w.WriteFile(n, []byte(data), 0o644)
			if applyOS {
				oerr = os.WriteFile(host(n), []byte(data), 0o644)
			}
		default:
			n := pick(dirs)
			line = "mkdir " + n
			serr = w.Mkdir(n, 0o755)
			if applyOS {
				oerr = os.Mkdir(host(n), 0o755)
			}
		}
		log = append(log, line+": "+errClass(serr))
		if applyOS {
			same(line, serr, oerr)
		}
		return line
	}

	for step := range steps {
		switch k := r.IntN(100); {
		case k < 22: // open
			n := pick(openNames)
			flag := flags[r.IntN(len(flags))]
			if !aliases && flag&(os.O_WRONLY|os.O_RDWR) == 0 && strings.HasPrefix(n, "ln") {
				n = "d1" + n[2:]
			}
			sf, serr := s.OpenFile(n, flag, 0o644)
			of, oerr := os.OpenFile(host(n), flag, 0o644)
			log = append(log, fmt.Sprintf("open %s %#x: %s", n, flag, errClass(serr)))
			same("open "+n, serr, oerr)
			if serr == nil {
				fi, err := of.Stat()
				mustDo(t, err)
				handles = append(handles, &modelHandle{name: n, flag: flag, dir: fi.IsDir(), s: sf, o: of})
			} else if oerr == nil {
				of.Close()
			}
		case k < 34: // close, sometimes twice, sometimes one already closed
			if len(handles) == 0 {
				continue
			}
			h := handles[r.IntN(len(handles))]
			wasClosed := h.closed
			serr, oerr := h.s.Close(), h.o.Close()
			h.closed = true
			log = append(log, fmt.Sprintf("close %v (closed before: %v): %s", h, wasClosed, errClass(serr)))
			same(fmt.Sprintf("close %v", h), serr, oerr)
		case k < 46: // write through a handle
			hs := open()
			if len(hs) == 0 {
				continue
			}
			h := hs[r.IntN(len(hs))]
			data := []byte(fmt.Sprintf("<w%d>", step))
			var sn, on int
			var serr, oerr error
			if r.IntN(3) == 0 && h.flag&os.O_APPEND == 0 {
				off := int64(r.IntN(24))
				sn, serr = h.s.WriteAt(data, off)
				on, oerr = h.o.WriteAt(data, off)
				log = append(log, fmt.Sprintf("writeat %v %d: %s", h, off, errClass(serr)))
			} else {
				sn, serr = h.s.Write(data)
				on, oerr = h.o.Write(data)
				log = append(log, fmt.Sprintf("write %v: %s", h, errClass(serr)))
			}
			same(fmt.Sprintf("write %v", h), serr, oerr)
			if sn != on {
				fail("write %v: store wrote %d, os %d", h, sn, on)
			}
		case k < 52: // read on or seek through a handle
			hs := open()
			if len(hs) == 0 {
				continue
			}
			h := hs[r.IntN(len(hs))]
			if h.dir {
				if h.listed {
					continue // os and the store agree only on a first listing
				}
				h.listed = true
				se, serr := h.s.ReadDir(-1)
				oe, oerr := h.o.ReadDir(-1)
				log = append(log, fmt.Sprintf("readdir %v: %s", h, errClass(serr)))
				same(fmt.Sprintf("readdir %v", h), serr, oerr)
				var sn, on []string
				for _, e := range se {
					sn = append(sn, e.Name())
				}
				for _, e := range oe {
					on = append(on, e.Name())
				}
				slices.Sort(sn)
				slices.Sort(on)
				if !slices.Equal(sn, on) {
					fail("readdir %v: store %q, os %q", h, sn, on)
				}
				continue
			}
			if r.IntN(2) == 0 {
				off := int64(r.IntN(30))
				log = append(log, fmt.Sprintf("seek %v %d", h, off))
				_, serr := h.s.Seek(off, io.SeekStart)
				_, oerr := h.o.Seek(off, io.SeekStart)
				same(fmt.Sprintf("seek %v", h), serr, oerr)
				continue
			}
			sb, ob := make([]byte, 7), make([]byte, 7)
			sn, serr := h.s.Read(sb)
			on, oerr := h.o.Read(ob)
			log = append(log, fmt.Sprintf("read %v: %s", h, errClass(serr)))
			same(fmt.Sprintf("read %v", h), serr, oerr)
			if string(sb[:sn]) != string(ob[:on]) {
				fail("read %v: store %q, os %q", h, sb[:sn], ob[:on])
			}
		case k < 82:
			treeOp(s, true, step)
		case k < 88:
			log = append(log, "checkpoint")
			if err := s.Checkpoint(); err != nil {
				fail("checkpoint: %v", err)
			}
		default: // a transaction, committed or undone
			commit := r.IntN(2) == 0
			n := 1 + r.IntN(4)
			log = append(log, fmt.Sprintf("update: %d changes, commit %v", n, commit))
			err := s.Update(func(tx *packfs.Tx) error {
				for range n {
					treeOp(tx, commit, step)
				}
				if !commit {
					return errUndoTx
				}
				return nil
			})
			if commit && err != nil || !commit && !errors.Is(err, errUndoTx) {
				fail("update (commit %v): %v", commit, err)
			}
		}
		check()
	}
	for _, h := range handles {
		h.s.Close()
		h.o.Close()
	}
}
