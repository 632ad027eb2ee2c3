package layer_test

import (
	"errors"
	"io/fs"
	"math"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/layer"
)

// TestIssue13ReadOnlyOffsets is issue 13, item 5, for the read-only files
// that layer.OpenFile serves from any fs.FS (a union's lower files among
// them): ReadAt checks its offset as os does before the file sees it.
func TestIssue13ReadOnlyOffsets(t *testing.T) {
	fsys := fstest.MapFS{"f": {Data: []byte("0123456789")}}
	f, err := layer.OpenFile(fsys, "f", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1)
	_, err = f.ReadAt(buf, -1)
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "readat" || pe.Err.Error() != "negative offset" {
		t.Errorf("ReadAt(1 byte, -1) = %v, want os's readat: negative offset", err)
	}
	if _, err := f.ReadAt(buf, math.MaxInt64); !errors.As(err, &pe) || pe.Op != "read" || !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ReadAt(1 byte, MaxInt64) = %v, want read: EINVAL", err)
	}
	if n, err := f.ReadAt(buf, 9); n != 1 || err != nil || buf[0] != '9' {
		t.Errorf("ReadAt(1 byte, 9) = %d, %v, %q", n, err, buf)
	}
}
