package packfs_test

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
)

// TestStoreOpenBesideTransaction: a file opened for reading while a
// transaction runs (readers then see the state before it) is the file
// itself once the transaction ends, committed or undone: it reads what
// is written to the file later, as on Linux, and follows it across the
// transaction's renames.
func TestStoreOpenBesideTransaction(t *testing.T) {
	for _, commit := range []bool{true, false} {
		for _, rename := range []bool{false, true} {
			s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
			mustDo(t, err)
			mustDo(t, s.MkdirAll("d", 0o755))
			mustDo(t, s.WriteFile("d/f", []byte("one"), 0o644))
			var h layer.File
			s.Update(func(tx *packfs.Tx) error {
				if rename {
					mustDo(t, tx.Rename("d", "e"))
				}
				mustDo(t, tx.WriteFile("other", []byte("x"), 0o644))
				// Opened beside the transaction, from the state before it.
				done := make(chan struct{})
				go func() {
					defer close(done)
					h, err = s.OpenFile("d/f", os.O_RDONLY, 0)
				}()
				<-done
				mustDo(t, err)
				if !commit {
					return errors.New("undo")
				}
				return nil
			})
			where := "d/f"
			if rename && commit {
				where = "e/f"
			}
			mustDo(t, s.WriteFile(where, []byte("two"), 0o644))
			b, err := io.ReadAll(h)
			mustDo(t, err)
			if string(b) != "two" {
				t.Errorf("commit %v, rename %v: a file opened beside the transaction reads %q after %s was written with %q", commit, rename, b, where, "two")
			}
			h.Close()
			s.Close()
		}
	}
}
