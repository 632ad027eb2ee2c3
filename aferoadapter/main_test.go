package aferoadapter_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// seeds returns short under -short and long otherwise.
func seeds(short, long int) int {
	if testsize.Short() {
		return short
	}
	return long
}

// osFs returns the reference every test compares with: the Linux kernel
// through afero's OsFs, with names mapped into a new temporary directory
// (hostFs).
func osFs(t testing.TB) afero.Fs { return newHostFs(t) }

// tempDir returns a new temporary directory, on /dev/shm when it is
// writable, removed when t ends.
func tempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("/dev/shm", "aferoadapter-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// adapterFs returns the adapter over a new in-memory layer.
func adapterFs(testing.TB) afero.Fs { return aferoadapter.New(mem.New()) }

// class names the class of err as errors.Is sees it: what must agree
// between the OS and the adapter.
func class(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, io.EOF):
		return "EOF"
	}
	for _, c := range []struct {
		err  error
		name string
	}{
		{syscall.ENOTEMPTY, "ENOTEMPTY"}, {syscall.ENOTDIR, "ENOTDIR"}, {syscall.EISDIR, "EISDIR"},
		{syscall.ELOOP, "ELOOP"}, {syscall.EBADF, "EBADF"}, {syscall.EINVAL, "EINVAL"},
		{syscall.EBUSY, "EBUSY"}, {syscall.EXDEV, "EXDEV"},
		{fs.ErrNotExist, "ErrNotExist"}, {fs.ErrExist, "ErrExist"}, {fs.ErrInvalid, "ErrInvalid"},
		{fs.ErrClosed, "ErrClosed"}, {fs.ErrPermission, "ErrPermission"}, {errors.ErrUnsupported, "ErrUnsupported"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	if strings.Contains(err.Error(), "use of closed file") {
		return "ErrClosed" // *os.File.ReadDir after Close: internal/poll's error
	}
	return "other"
}

// errOp returns the Op of a *fs.PathError or *os.LinkError, else "".
func errOp(err error) string {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Op
	case errors.As(err, &le):
		return le.Op
	}
	return ""
}

// treeOf returns every entry below the root of fsys, one line each: path,
// mode, and content or symlink target.
func treeOf(fsys afero.Fs) (out []string, err error) {
	var walk func(dir string)
	walk = func(dir string) {
		f, err := fsys.Open(dir)
		if err != nil {
			panic(treeErr{err})
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			panic(treeErr{err})
		}
		slices.Sort(names)
		for _, n := range names {
			p := strings.TrimSuffix(dir, "/") + "/" + n
			fi, _, err := fsys.(afero.Lstater).LstatIfPossible(p)
			if err != nil {
				panic(treeErr{err})
			}
			line := p + " " + fi.Mode().String()
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := fsys.(afero.LinkReader).ReadlinkIfPossible(p)
				if err != nil {
					panic(treeErr{err})
				}
				line += " -> " + target
			case fi.IsDir():
				out = append(out, line)
				walk(p)
				continue
			default:
				data, err := afero.ReadFile(fsys, p)
				if err != nil {
					panic(treeErr{err})
				}
				line += " " + strings.ToValidUTF8(string(data[:min(len(data), 64)]), "?")
			}
			out = append(out, line)
		}
	}
	defer func() {
		switch e := recover().(type) {
		case nil:
		case treeErr:
			out, err = nil, e.err
		default:
			panic(e)
		}
	}()
	walk("/")
	return out, nil
}

// treeErr carries treeOf's first error out of its walk.
type treeErr struct{ err error }

// tree is treeOf, failing t on an error.
func tree(t testing.TB, fsys afero.Fs) []string {
	t.Helper()
	out, err := treeOf(fsys)
	if err != nil {
		t.Fatalf("tree: %v", err)
	}
	return out
}

func TestMain(m *testing.M) {
	clearUmask()
	os.Exit(m.Run())
}
