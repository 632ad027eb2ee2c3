package conformance

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Error classes: what the suite compares of an error, besides its Op and
// paths. Errno classes come first because errno values also match the
// fs.Err* sentinels (ENOTEMPTY is also fs.ErrExist).
const (
	classNil         = "nil"
	classEOF         = "EOF"
	classNotEmpty    = "ENOTEMPTY"
	classNotDir      = "ENOTDIR"
	classIsDir       = "EISDIR"
	classLoop        = "ELOOP"
	classBadFD       = "EBADF"
	classEINVAL      = "EINVAL"
	classNameTooLong = "ENAMETOOLONG"
	classNotExist    = "ErrNotExist"
	classExist       = "ErrExist"
	classInvalid     = "ErrInvalid"
	classClosed      = "ErrClosed"
	classPermission  = "ErrPermission"
	classUnsupported = "ErrUnsupported"
	classOther       = "other"
)

// errClass returns the class of err.
func errClass(err error) string {
	switch {
	case err == nil:
		return classNil
	case errors.Is(err, io.EOF):
		return classEOF
	case errors.Is(err, syscall.ENOTEMPTY):
		return classNotEmpty
	case errors.Is(err, syscall.ENOTDIR):
		return classNotDir
	case errors.Is(err, syscall.EISDIR):
		return classIsDir
	case errors.Is(err, syscall.ELOOP):
		return classLoop
	case errors.Is(err, syscall.EBADF):
		return classBadFD
	case errors.Is(err, syscall.EINVAL):
		return classEINVAL
	case errors.Is(err, syscall.ENAMETOOLONG):
		return classNameTooLong
	case errors.Is(err, fs.ErrNotExist):
		return classNotExist
	case errors.Is(err, fs.ErrExist):
		return classExist
	case errors.Is(err, fs.ErrInvalid):
		return classInvalid
	case errors.Is(err, fs.ErrClosed), isPollClosing(err):
		return classClosed
	case errors.Is(err, fs.ErrPermission):
		return classPermission
	case errors.Is(err, errors.ErrUnsupported):
		return classUnsupported
	}
	return classOther
}

// isPollClosing reports the error *os.File.ReadDir gives on a closed file:
// internal/poll's ErrFileClosing ("use of closed file"), which is not
// fs.ErrClosed. The suite counts it as ErrClosed, the class a backend should
// give.
func isPollClosing(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && strings.HasSuffix(pe.Err.Error(), "use of closed file")
}

// errDesc is what the suite compares of an error.
type errDesc struct {
	Class string
	Type  string // "PathError", "LinkError", or "" for other errors
	Op    string
	Path  string // PathError.Path or LinkError.Old
	New   string // LinkError.New
}

func describeErr(err error) errDesc {
	d := errDesc{Class: errClass(err)}
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		d.Type, d.Op, d.Path = "PathError", pe.Op, pe.Path
	case errors.As(err, &le):
		d.Type, d.Op, d.Path, d.New = "LinkError", le.Op, le.Old, le.New
	}
	return d
}

func (d errDesc) String() string {
	switch d.Type {
	case "PathError":
		return fmt.Sprintf("%s %s: %s", d.Op, d.Path, d.Class)
	case "LinkError":
		return fmt.Sprintf("%s %s %s: %s", d.Op, d.Path, d.New, d.Class)
	}
	return d.Class
}

// wantPathErr reports unless err is an *fs.PathError with op and path
// wrapping an error of class.
func wantPathErr(t testing.TB, call string, err error, class, op, path string) {
	t.Helper()
	got := describeErr(err)
	want := errDesc{Class: class, Type: "PathError", Op: op, Path: path}
	if got != want {
		t.Errorf("%s: got error %v (%v), want %v", call, got, err, want)
	}
}

// wantLinkErr reports unless err is an *os.LinkError with op, old and new
// wrapping an error of class.
func wantLinkErr(t testing.TB, call string, err error, class, op, oldname, newname string) {
	t.Helper()
	got := describeErr(err)
	want := errDesc{Class: class, Type: "LinkError", Op: op, Path: oldname, New: newname}
	if got != want {
		t.Errorf("%s: got error %v (%v), want %v", call, got, err, want)
	}
}

// wantClass reports unless err is of class, whatever its type.
func wantClass(t testing.TB, call string, err error, class string) {
	t.Helper()
	if got := errClass(err); got != class {
		t.Errorf("%s: got error of class %s (%v), want %s", call, got, err, class)
	}
}

// must fails the test at once if err is not nil: a step a test needs to go
// on.
func must(t testing.TB, call string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", call, err)
	}
}

// ok reports a non-nil err without stopping the test.
func ok(t testing.TB, call string, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %v", call, err)
		return false
	}
	return true
}
