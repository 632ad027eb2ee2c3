package packreader_test

import (
	"errors"
	"io"
	"math"
	"syscall"
	"testing"

	"github.com/packfs/packfs/layer/mem"
)

// TestIssue13ProbeReadPastMax: a read whose range ends past
// math.MaxInt64 is EINVAL, as pread and read give on Linux (through os),
// not EOF: through ReadAt and through Read after a Seek there; a
// negative ReadAt offset stays os's "negative offset".
func TestIssue13ProbeReadPastMax(t *testing.T) {
	m := mem.New()
	if err := m.WriteFile("a", []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for how, r := range openBoth(t, packOf(t, m.Snapshot())) {
		f, err := r.Open("a")
		if err != nil {
			t.Fatal(err)
		}
		ra := f.(io.ReaderAt)
		buf := make([]byte, 4)
		for _, off := range []int64{math.MaxInt64, math.MaxInt64 - 3} {
			if n, err := ra.ReadAt(buf, off); n != 0 || !errors.Is(err, syscall.EINVAL) {
				t.Errorf("%s: ReadAt(4 bytes, %d) = %d, %v; want EINVAL", how, off, n, err)
			}
			if _, err := f.(io.Seeker).Seek(off, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			if n, err := f.Read(buf); n != 0 || !errors.Is(err, syscall.EINVAL) {
				t.Errorf("%s: Read(4 bytes) at %d = %d, %v; want EINVAL", how, off, n, err)
			}
		}
		if n, err := ra.ReadAt(buf, math.MaxInt64-4); n != 0 || err != io.EOF {
			t.Errorf("%s: ReadAt(4 bytes, MaxInt64-4) = %d, %v; want EOF", how, n, err)
		}
		if _, err := ra.ReadAt(buf, -1); err == nil || errors.Is(err, syscall.EINVAL) || err.Error() != "read a: negative offset" {
			t.Errorf("%s: ReadAt(-1) = %v, want negative offset", how, err)
		}
		f.Close()
	}
}
