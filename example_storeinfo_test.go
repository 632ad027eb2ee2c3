package packfs_test

import (
	"fmt"
	"log"
	"os"

	"github.com/packfs/packfs"
)

// Info tells what a store holds on disk, and Verify checks its packs in
// full; a read-only store can do both beside a writer.
func ExampleStore_Info() {
	dir, err := os.MkdirTemp("", "packfs-store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := packfs.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.WriteFile("motd", []byte("hello\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		log.Fatal(err)
	}

	ro, err := packfs.Open(dir, &packfs.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	info := ro.Info()
	fmt.Println("generation", info.Generation, "packs", len(info.Packs), "read-only", info.ReadOnly)
	if err := ro.Verify(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("verified")
	// Output:
	// generation 1 packs 1 read-only true
	// verified
}
