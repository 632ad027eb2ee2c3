package packfs

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/packfs/packfs/vfs/vfstest"
)

// TestIssue19TxMixedEntries: a transaction's entries, small ones encoded
// into one buffer and chunked ones kept apart, reach the log in the order
// of their changes: a replay gives each file its last write.
func TestIssue19TxMixedEntries(t *testing.T) {
	defer func(n int) { maxChunk = n }(maxChunk)
	maxChunk = 7
	m := vfstest.NewMemFS()
	s, err := Open("", &Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789"), 3)
	want := map[string]string{}
	err = s.Update(func(tx *Tx) error {
		for i := range 12 {
			name := fmt.Sprintf("f%d", i%4)
			data := []byte{byte('a' + i)}
			if i%3 == 1 {
				data = append(big, byte('a'+i))
			}
			if err := tx.WriteFile(name, data, 0o644); err != nil {
				return err
			}
			want[name] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open("", &Options{FS: m})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, data := range want {
		if got, err := s.ReadFile(name); err != nil || string(got) != data {
			t.Errorf("%s after a reopen: %q, %v; want %q", name, got, err, data)
		}
	}
}
