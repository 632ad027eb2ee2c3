package suite

import "github.com/packfs/packfs/bench/internal/workload"

func init() {
	Register(&Category{
		Name:  "dirs",
		Title: "Directories: mkdir and rmdir",
		Order: 20,
		Doc: `N/5 directories (4,000 in the full run, the predecessor's N_DIRS) are
made one by one in one parent, then removed one by one. go-billy's memfs has
no Mkdir: its MkdirAll stands in.

A directory in mem is an inode with its own treap, so mkdir costs what a
create does minus the contents; on ext4 each mkdir allocates an inode and a
directory block through the journal, which is why os is an order of
magnitude slower there than on tmpfs.`,
		Run: runDirs,
	})
}

func runDirs(c *Ctx) error {
	n := c.Scale(4_000, 20)
	mkdir := c.Table("mkdir", "mkdir N/5 directories", "dir")
	rmdir := c.Table("rmdir", "rmdir N/5 directories", "dir")
	targets := c.Targets(workload.KindMem, workload.KindUnion, workload.KindDirfs,
		workload.KindOS, workload.KindMemMapFs, workload.KindBilly)
	for range c.Runs {
		for _, tg := range targets {
			err := tg.Run(c, func(fsys workload.FS) error {
				names := workload.Names(fsys, "run", "d", n)
				if err := fsys.Mkdir(fsys.Path("run")); err != nil {
					return err
				}
				if err := mkdir.Time(tg.Spec(n, n, 0), func() error { return workload.MkdirEach(fsys, names) }); err != nil {
					return err
				}
				return rmdir.Time(tg.Spec(n, n, 0), func() error { return workload.RemoveEach(fsys, names) })
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
