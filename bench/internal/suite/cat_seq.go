package suite

import (
	"fmt"

	"github.com/packfs/packfs/bench/internal/workload"
)

func init() {
	Register(&Category{
		Name:  "seq",
		Title: "Large files: sequential write and read",
		Order: 30,
		Doc: `One file of 1, 16 and 64 MiB is written in 64 KiB chunks (OpenWrite,
Write, Close) and read back to its end through a 64 KiB buffer. The size
is the N column, in MiB; "per file" is the time for the whole file.
` + "`os+fsync`" + ` fsyncs before Close. The pack, zip and MapFS rows read
the same files from a pack, a stored zip and a map built once.

mem stores contents in 64 KiB chunks under a persistent radix tree, so a
write appends chunks and never re-copies what is written (the predecessor
re-copied its buffer as the file grew and lost 3x to the host here).
MemMapFs and billy's memfs keep a file in one slice that append grows,
copying it at each doubling. Every in-memory backend writes into fresh
heap memory: the first touch of each page is a page fault and the garbage
collector runs as the heap grows, which is why their large writes swing
so much on a loaded machine. A write to os lands in the page cache, one
copy per chunk and a system call. Reads are copies for everyone: out of
the page cache, out of mem's chunks, out of a pack's mapping.`,
		Run: runSeq,
	})
}

func runSeq(c *Ctx) error {
	const chunkSize = 64 << 10
	chunk := workload.Payload(chunkSize)
	buf := make([]byte, chunkSize)
	write := c.Table("write", "sequential write (64 KiB chunks)", "file")
	read := c.Table("read", "sequential read (64 KiB buffer)", "file")

	tree := workload.Tree{Data: func(i int) []byte {
		b := make([]byte, c.SeqMB[i]<<20)
		for j := range b {
			b[j] = chunk[j%chunkSize]
		}
		return b
	}}
	for _, mb := range c.SeqMB {
		tree.Names = append(tree.Names, fmt.Sprintf("big/%dMB", mb))
	}
	ro, cleanup, err := readOnlyFixtures(c, tree)
	if err != nil {
		return err
	}
	defer cleanup()

	targets := c.Targets(workload.KindMem, workload.KindUnion, workload.KindDirfs,
		workload.KindOS, workload.KindOSFsync, workload.KindOSRoot, workload.KindMemMapFs, workload.KindBilly)
	// The first pass warms the heap and the page cache and is not
	// reported: the first 64 MiB a process writes pays for page faults
	// that every later write reuses.
	for rep := range c.Runs + 1 {
		write, read := write, read
		if rep == 0 {
			write, read = c.Scratch(), c.Scratch()
		}
		for _, tg := range targets {
			fsys, err := tg.New(c)
			if err != nil {
				return err
			}
			err = fsys.Mkdir(fsys.Path("big"))
			for _, mb := range c.SeqMB {
				if err != nil {
					break
				}
				size := mb << 20
				name := fsys.Path(fmt.Sprintf("big/%dMB", mb))
				spec := tg.Spec(mb, 1, int64(size))
				err = write.Time(spec, func() error { return workload.SeqWrite(fsys, name, size, chunk) })
				if err == nil && tg.Kind.Name != workload.KindOSFsync.Name {
					err = read.Time(spec, func() error { return workload.SeqRead(fsys, name, size, buf) })
				}
			}
			if cerr := fsys.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		for _, r := range ro {
			for _, mb := range c.SeqMB {
				size := mb << 20
				name := r.fs.Path(fmt.Sprintf("big/%dMB", mb))
				if err := read.Time(r.Spec(mb, 1, int64(size)), func() error { return workload.SeqRead(r.fs, name, size, buf) }); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
