package suite

import (
	"errors"
	"fmt"
	"os"

	"github.com/packfs/packfs/bench/internal/workload"
	"github.com/spf13/afero"
)

func init() {
	Register(&Category{
		Name:  "afero",
		Title: "The afero adapter",
		Order: 90,
		Doc: `**The issue 19 table.** Every small-file workload through afero's API
(afero.ReadFile, Fs.Stat, Fs.Create, Fs.Remove), one line per workload and
one column per backend; each cell is the median cost per operation and,
but for MemMapFs's, the median over runs of the backend's time over
MemMapFs's in the same run. Every run times each backend once, one after
the other from a rotating start, so that all see the same load. The
columns: ` + "`memmapfs`" + ` (afero's MemMapFs, the base); ` + "`mem`" + `
(` + "`aferoadapter.New(mem.New())`" + `); ` + "`union`" + ` (the adapter over
a union of an empty in-memory layer over a pack holding 1,000 other files
in the workload's directory, so that each name is looked up in a merged
directory); ` + "`union-lower`" + ` (the read workloads with their files in the
pack, read through the union); ` + "`store`" + ` (` + "`packfs.Open`" + ` with
SyncNone and no checkpoints, in each place: the disk's temporary directory
and tmpfs); ` + "`floor`" + ` (afero's helpers over a file system that keeps
nothing and returns at once: the bound of every ratio, since afero.ReadFile
alone stats, grows a buffer and reads to EOF). The workloads: Open + Read +
Close of a 128 B file (afero.ReadFile), stat, create, unlink, rmdir, W
goroutines each creating, reading and removing N/5 files of their own, and
W goroutines of N operations each over N files, 5% of them overwrites.

**Against os.** The small-files workload (N files of 128 bytes created, read, stat'ed,
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
	if err := runAferoTable(c); err != nil {
		return err
	}
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

// runAferoTable fills the issue 19 table: per workload, every column set
// up afresh (store in each place), then c.Runs runs of all of them.
func runAferoTable(c *Ctx) error {
	t := c.MatrixTable("table", "afero: small-file workloads, time ÷ MemMapFs's in the same run", "op")
	t.Base = "memmapfs"
	t.Paired = true
	t.Note("N = %s files of %d B, W = %d goroutines. Each cell: the median cost per operation over %d runs, then the median over runs of the time over memmapfs's in the same run; spread is the largest (max − min) / median of the line.",
		commas(c.N), workload.TableSmall, c.Workers, c.Runs)
	for _, row := range workload.TableRows(c.N, c.Workers) {
		if err := aferoTableRow(c, t, row); err != nil {
			return err
		}
	}
	return nil
}

func aferoTableRow(c *Ctx, t *Table, row workload.TableRow) (err error) {
	type col struct {
		spec  Spec
		fsys  workload.FS
		names []string
	}
	var cols []col
	var dirs []string
	defer func() {
		for _, cl := range cols {
			err = errors.Join(err, cl.fsys.Close())
		}
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}()
	for _, tc := range workload.TableColumns() {
		places := c.Places[:1]
		if tc.Host {
			places = c.Places
		}
		for _, p := range places {
			dir, err := c.TempDir(p)
			if err != nil {
				return err
			}
			dirs = append(dirs, dir)
			fsys, names, err := tc.Setup(row, dir)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", row.Name, tc.Name, err)
			}
			if fsys == nil {
				continue
			}
			where := Memory
			if tc.Host {
				where = p.Name
			}
			spec := Spec{Backend: tc.Name, Where: where, N: row.Files, Ours: tc.Ours, Ops: row.Ops, Case: row.Name}
			cols = append(cols, col{spec, fsys, names})
		}
	}
	for run := range c.Runs {
		// A rotating start, so that no column always runs right after
		// the heap grew by another's files.
		for k := range cols {
			cl := cols[(k+run)%len(cols)]
			if err := row.Prep(cl.fsys, cl.names); err != nil {
				return fmt.Errorf("%s: %s: %w", row.Name, cl.spec.Backend, err)
			}
			if err := t.Time(cl.spec, func() error { return row.Run(cl.fsys, cl.names, uint64(run+1)) }); err != nil {
				return err
			}
		}
	}
	return nil
}
