package packreader_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
)

// TestIssue17ReaderSum: a pack's Sum is the same mapped and read through
// an io.ReaderAt, differs for a pack of another tree of the same shape,
// and fails once the reader is closed.
func TestIssue17ReaderSum(t *testing.T) {
	tree := func(data string) []byte {
		m := mem.New()
		if err := m.WriteFile("f", []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return packOf(t, m.Snapshot())
	}
	one, two := tree("one"), tree("two")
	p := filepath.Join(t.TempDir(), "one.pack")
	if err := os.WriteFile(p, one, 0o644); err != nil {
		t.Fatal(err)
	}
	mapped, err := packreader.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	read, err := packreader.OpenReaderAt(bytes.NewReader(one), int64(len(one)))
	if err != nil {
		t.Fatal(err)
	}
	other, err := packreader.OpenReaderAt(bytes.NewReader(two), int64(len(two)))
	if err != nil {
		t.Fatal(err)
	}
	size1, sum1, err1 := mapped.Sum()
	size2, sum2, err2 := read.Sum()
	size3, sum3, err3 := other.Sum()
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	if size1 != int64(len(one)) || size1 != size2 || sum1 != sum2 {
		t.Errorf("mapped %d/%08x, read %d/%08x; want the same, of %d bytes", size1, sum1, size2, sum2, len(one))
	}
	if sum3 == sum1 {
		t.Errorf("another pack has the same sum %08x (sizes %d, %d)", sum1, size1, size3)
	}
	mapped.Close()
	if _, _, err := mapped.Sum(); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Sum after Close: %v, want ErrClosed", err)
	}
}
