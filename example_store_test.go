package packfs_test

import (
	"fmt"
	"log"
	"os"

	"github.com/packfs/packfs"
)

// A store keeps its tree in a directory: what a committed transaction
// wrote is there after a reopen, or after a crash.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "packfs-store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := packfs.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	err = s.Update(func(tx *packfs.Tx) error {
		if err := tx.MkdirAll("etc", 0o755); err != nil {
			return err
		}
		return tx.WriteFile("etc/motd", []byte("hello\n"), 0o644)
	})
	if err != nil {
		log.Fatal(err)
	}
	// A checkpoint moves the tree into a pack and drops the log.
	if err := s.Checkpoint(); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}

	s, err = packfs.Open(dir, &packfs.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	data, err := s.ReadFile("etc/motd")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(data))
	// Output: hello
}
