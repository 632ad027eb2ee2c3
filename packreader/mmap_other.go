//go:build !unix

package packreader

import (
	"io"
	"os"
)

// mmap reads the file into memory where mmap is not available.
func mmap(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(f, b)
	return b, err
}

func munmap([]byte) error { return nil }
