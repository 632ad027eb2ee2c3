package packfs

import (
	"bytes"
	"os"
	"testing"

	"github.com/packfs/packfs/vfs/vfstest"
	"github.com/packfs/packfs/wal"
)

// TestIssue14HugeWrite: a write larger than a log entry can hold is
// logged in chunks, in one unit, instead of failing the log for good
// (which a write of more than 2 GiB did). The chunk is made small here.
func TestIssue14HugeWrite(t *testing.T) {
	defer func(n int) { maxChunk = n }(maxChunk)
	maxChunk = 7
	m := vfstest.NewMemFS()
	s, err := Open("", &Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 10)
	if err := s.WriteFile("w", data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := s.OpenFile("h", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if err := s.Update(func(tx *Tx) error { return tx.WriteFile("t", data, 0o600) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	entries := 0
	l, err := wal.Open(m, wal.Options{ReadOnly: true}, func(es [][]byte) error {
		for _, e := range es {
			o, err := decodeOp(e)
			if err != nil {
				return err
			}
			if len(o.data) > maxChunk {
				t.Errorf("an entry of %d bytes of data", len(o.data))
			}
			entries++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if entries < 4*len(data)/maxChunk {
		t.Errorf("%d entries", entries)
	}
	s, err = Open("", &Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string][]byte{"w": data, "h": append(data, data...), "t": data} {
		if got, err := s.ReadFile(name); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after reopen: %q, %v", name, got, err)
		}
	}
}
