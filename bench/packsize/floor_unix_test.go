//go:build unix

package packsize

import (
	"os"
	"syscall"
	"testing"
)

// BenchmarkFirstByteFloor is what FirstByte's uncompressed row stands on:
// opening the pack file, mapping it, reading one byte from the middle of
// its data (a page fault, and a page table for that part of the
// mapping), unmapping it and closing it, with nothing of packreader.
// On a virtual machine that backs memory lazily the fault and the
// page table it fills dominate: any reader that maps the pack pays them.
func BenchmarkFirstByteFloor(b *testing.B) {
	f := getReadFixture(b)
	var sink byte
	for b.Loop() {
		fd, err := os.Open(f.bigRaw)
		if err != nil {
			b.Fatal(err)
		}
		fi, err := fd.Stat()
		if err != nil {
			b.Fatal(err)
		}
		m, err := syscall.Mmap(int(fd.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			b.Fatal(err)
		}
		sink ^= m[len(m)/2]
		if err := syscall.Munmap(m); err != nil {
			b.Fatal(err)
		}
		fd.Close()
	}
	_ = sink
}
