package packfs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/vfs/vfstest"
)

// BenchmarkStoreSmallChanges measures what a change costs the store
// outside the disk: small whole-file writes and small writes through an
// open file, on a log in memory that never syncs.
func BenchmarkStoreSmallChanges(b *testing.B) {
	s, err := packfs.Open("", &packfs.Options{FS: vfstest.NewMemFS(), Sync: packfs.SyncNone, CheckpointBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 16 {
		if err := s.MkdirAll(fmt.Sprintf("a/b/d%d", i), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	data := make([]byte, 100)
	b.Run("WriteFile", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if err := s.WriteFile(fmt.Sprintf("a/b/d%d/f%d", i%16, i%1024), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Write", func(b *testing.B) {
		f, err := s.OpenFile("a/b/d0/w", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		for b.Loop() {
			if _, err := f.Write(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
