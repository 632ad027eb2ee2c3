package suite

import (
	"fmt"

	"github.com/packfs/packfs/bench/internal/workload"
)

func init() {
	Register(&Category{
		Name:  "concurrent",
		Title: "Concurrency: 8 goroutines creating, reading and removing",
		Order: 50,
		Doc: `8 goroutines each create a 128-byte file, read it back and remove it,
N/5 times (4,000 in the full run), all in one shared directory: the
predecessor's 8 × 4,000 create+read+unlink. "per cycle" is the wall time
divided by the 32,000 cycles, so it already accounts for the 2 cores
sharing the work. go-billy's memfs is not safe for concurrent use and is
left out.

mem serializes writers on one mutex and lets readers run without a lock,
so the reads of one goroutine overlap the writes of the others; MemMapFs
also takes a lock per read. On the host, every create and unlink in one
directory takes that directory's inode lock in the kernel, and on ext4 the
journal, which is why os on ext4 is far behind, and on tmpfs well behind
the in-memory backends.`,
		Run: runConcurrent,
	})
}

func runConcurrent(c *Ctx) error {
	per := c.Scale(4_000, 10)
	w := c.Workers
	ops := w * per
	data := workload.Payload(Small)
	table := c.Table("crr", fmt.Sprintf("%d goroutines × N/5 create+read+unlink", w), "cycle")
	targets := c.Targets(workload.KindMem, workload.KindUnion, workload.KindAdapter, workload.KindDirfs,
		workload.KindOS, workload.KindMemMapFs)
	for range c.Runs {
		for _, tg := range targets {
			err := tg.Run(c, func(fsys workload.FS) error {
				names := make([][]string, w)
				for g := range names {
					names[g] = workload.Names(fsys, "run", fmt.Sprintf("w%d_", g), per)
				}
				if err := fsys.Mkdir(fsys.Path("run")); err != nil {
					return err
				}
				return table.Time(tg.Spec(ops, ops, int64(ops*Small)), func() error {
					return workload.CreateReadRemove(fsys, names, data)
				})
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
