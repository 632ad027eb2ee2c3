package suite

import (
	"github.com/packfs/packfs/bench/internal/workload"
	"github.com/spf13/afero"
)

func init() {
	Register(&Category{
		Name:  "afero",
		Title: "The afero adapter",
		Order: 90,
		Doc: `The small-files workload (N files of 128 bytes created, read, stat'ed,
listed and removed) through afero's API (Fs.Create, afero.ReadFile,
Fs.Stat, afero.ReadDir, Fs.Remove): PackFS's adapter over the in-memory
layer (` + "`aferoadapter.New(mem.New())`" + `), afero's MemMapFs, its OsFs on
each place, and its CopyOnWriteFs (a MemMapFs layer over a read-only OsFs
base, empty here, so that every write is checked against the host first).
The ` + "`mem`" + ` row is the in-memory layer through its own API, so the
difference to ` + "`adapter`" + ` is what the adapter and afero's helpers add.

afero.ReadDir sorts what Readdir returns and afero.ReadFile stats then
reads; every backend pays those. The adapter translates OS-style names
into io/fs paths on each call. Against MemMapFs the adapter inherits mem's
costs (slower metadata writes, faster reads and listings) and adds about
a name translation per call.`,
		Run: runAfero,
	})
}

var kindCowOs = workload.Kind{Name: "afero cow", Host: true, Concurrent: true, New: func(dir string) (workload.FS, error) {
	base := afero.NewReadOnlyFs(afero.NewBasePathFs(afero.NewOsFs(), dir))
	return workload.NewAfero(afero.NewCopyOnWriteFs(base, afero.NewMemMapFs()), "", dir), nil
}}

func runAfero(c *Ctx) error {
	n := c.N
	data := workload.Payload(Small)
	create := c.Table("create", "afero: create N small files", "file")
	read := c.Table("read", "afero: read N small files", "file")
	stat := c.Table("stat", "afero: stat N files", "file")
	readdir := c.Table("readdir", "afero: readdir of N entries", "entry")
	unlink := c.Table("remove", "afero: remove N files", "file")
	for _, t := range []*Table{create, read, stat, readdir, unlink} {
		t.Base = workload.KindOsFs.Name
	}
	targets := c.Targets(workload.KindAdapter, workload.KindMem, workload.KindMemMapFs, workload.KindOsFs, kindCowOs)
	for range c.Runs {
		for _, tg := range targets {
			err := tg.Run(c, func(fsys workload.FS) error {
				return smallOnce(fsys, tg, n, data, create, read, stat, readdir, unlink)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}
