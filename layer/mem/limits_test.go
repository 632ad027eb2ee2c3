package mem_test

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// checked returns a new layer whose invariants are checked when t ends.
func checked(t *testing.T) *mem.FS {
	f := mem.New()
	t.Cleanup(func() {
		if err := f.Check(); err != nil {
			t.Error(err)
		}
	})
	return f
}

func newChecked(t *testing.T) layer.FS { return checked(t) }

// TestIssue13SymlinkEmptyTarget is issue 13, item 3: an empty target is
// ENOENT before newname is looked at (it was EEXIST for an existing name).
func TestIssue13SymlinkEmptyTarget(t *testing.T) {
	conformance.Tests["SymlinkEmptyTarget"](t, newChecked)
}

// TestIssue14NameLimits is issue 14, item 6: the layer refuses at creation
// what Linux refuses (NUL, an element over 255 bytes, a path or a symlink
// target of 4,096 bytes or more), for whiteouts too, and changes nothing.
func TestIssue14NameLimits(t *testing.T) {
	conformance.Tests["NameLimits"](t, newChecked)
	f := checked(t)
	if err := f.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	long := "d/" + strings.Repeat("n", 256)
	for _, c := range []struct {
		name string
		err  error
	}{
		{long, syscall.ENAMETOOLONG},
		{"d/a\x00b", syscall.EINVAL},
		{strings.Repeat("d/", 2048), syscall.ENAMETOOLONG},
		{"missing/" + strings.Repeat("n", 256), syscall.ENOENT},
	} {
		err := f.Whiteout(c.name)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "whiteout" || !errors.Is(err, c.err) {
			t.Errorf("Whiteout(%.20q...) = %.60v, want a whiteout PathError wrapping %v", c.name, err, c.err)
		}
	}
	if list, err := f.ReadDir("d"); len(list) != 0 || err != nil {
		t.Errorf("ReadDir(d) = %v, %v; want it empty", list, err)
	}
	if err := f.Whiteout("d/" + strings.Repeat("w", 255)); err != nil {
		t.Errorf("Whiteout(255 bytes): %v", err)
	}
}
