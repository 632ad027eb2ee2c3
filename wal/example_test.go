package wal_test

import (
	"fmt"
	"log"

	"github.com/packfs/packfs/vfs/vfstest"
	"github.com/packfs/packfs/wal"
)

// Entries appended together replay together; what was synced survives a
// power cut.
func ExampleOpen() {
	disk := vfstest.NewMemFS()
	l, err := wal.Open(disk, wal.Options{}, func([][]byte) error { return nil })
	if err != nil {
		log.Fatal(err)
	}
	l.Append([]byte("alone"))
	p, _ := l.Append([]byte("two"), []byte("together"))
	if err := l.Sync(p); err != nil {
		log.Fatal(err)
	}
	l.Append([]byte("never synced"))

	after := disk.Recover(vfstest.Torn{})
	l, err = wal.Open(after, wal.Options{}, func(entries [][]byte) error {
		fmt.Printf("%q\n", entries)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	l.Close()
	// Output:
	// ["alone"]
	// ["two" "together"]
}
