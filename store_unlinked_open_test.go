package packfs_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/packfs/packfs"
)

// TestStoreUnlinkedOpenAcrossFlattens: a file open while its name goes
// (removed, or renamed over) keeps its data however many checkpoints
// follow, as an unlinked file's does on Linux until its last close: the
// packs it reads are kept open while it is, after later checkpoints have
// rewritten and retired them.
func TestStoreUnlinkedOpenAcrossFlattens(t *testing.T) {
	for _, how := range []string{"removed", "renamed over"} {
		t.Run(how, func(t *testing.T) {
			s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
			mustDo(t, err)
			defer s.Close()
			want := bytes.Repeat([]byte("kept "), 1000)
			mustDo(t, s.WriteFile("f", want, 0o644))
			mustDo(t, s.Checkpoint()) // f's data is now a pack's
			h, err := s.Open("f")
			mustDo(t, err)
			defer h.Close()
			if how == "removed" {
				mustDo(t, s.Remove("f"))
			} else {
				mustDo(t, s.WriteFile("g", []byte("other"), 0o644))
				mustDo(t, s.Rename("g", "f"))
			}
			for i := range 4 {
				mustDo(t, s.WriteFile(fmt.Sprintf("x%d", i), bytes.Repeat([]byte{byte(i)}, 5000), 0o644))
				mustDo(t, s.Checkpoint())
				mustDo(t, s.Flatten()) // retires every pack before it
			}
			got, err := io.ReadAll(h)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the open file read %d bytes, %v; want its %d bytes", len(got), err, len(want))
			}
		})
	}
}
