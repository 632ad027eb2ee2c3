//go:build unix

package wal

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoMap = errors.New("wal: segment cannot be mapped")

func mmapWindow(fd int, off int64, n int) ([]byte, error) {
	return unix.Mmap(fd, off, n, unix.PROT_READ, unix.MAP_SHARED)
}

func munmapWindow(b []byte) { unix.Munmap(b) }
