package suite

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/packfs/packfs/bench/internal/workload"
)

func init() {
	Register(&Category{
		Name:  "small",
		Title: "Small files: create, read, stat, readdir, unlink",
		Order: 10,
		Doc: `N files of 128 bytes (N = 20,000 in the full run, the C predecessor's
size) are created in one directory (Create, Write, Close), read back whole
(ReadFile), stat'ed, listed with one ReadDir, and removed one by one, each
step timed on its own, through each file system's own API. The read-only
backends (pack, zip, fstest.MapFS) are built from the same files once,
untimed, and take part in read, stat and readdir only. ` + "`os+fsync`" + ` creates
fewer files (N/100), each fsync'd before Close: it shows what durability per
file costs on each place and is the reason durable stores batch their
syncs.

What the numbers mean: the in-memory backends pay a lookup in a
persistent treap (mem) or in two layers (union) and no system call; the
host backends pay the kernel's path walk, inode allocation and, on ext4,
the journal. mem loses to afero's MemMapFs on create, stat and unlink:
MemMapFs is a map of full paths under a mutex, while mem walks a treap per
path element and builds new treap nodes on every change, so that
snapshots stay O(1) and readers never lock (the snapshot category shows
what that buys). mem wins the reads and the listing: MemMapFs copies
under a lock and sorts on every ReadDir. dirfs resolves each name to its parent directory with openat2
and then makes the *at call, so its stat costs about twice os.Stat's;
create and read are close to os's.`,
		Run: runSmall,
	})
}

func runSmall(c *Ctx) error {
	n := c.N
	data := workload.Payload(Small)
	create := c.Table("create", "create N small files (128 B)", "file")
	read := c.Table("read", "read N small files (ReadFile)", "file")
	stat := c.Table("stat", "stat N files", "file")
	readdir := c.Table("readdir", "readdir of N entries (one ReadDir)", "entry")
	unlink := c.Table("unlink", "unlink N files", "file")

	// Read-only backends hold the same files, built once.
	tree := workload.Tree{Names: workload.Rel("run", "f", n), Data: func(int) []byte { return data }}
	ro, cleanup, err := readOnlyFixtures(c, tree)
	if err != nil {
		return err
	}
	defer cleanup()

	targets := c.Targets(workload.KindMem, workload.KindUnion, workload.KindDirfs,
		workload.KindOS, workload.KindMemMapFs, workload.KindBilly)
	nSync := c.Scale(200, 10)
	for rep := range c.Runs {
		c.Logf("run %d/%d", rep+1, c.Runs)
		for _, tg := range targets {
			err := tg.Run(c, func(fsys workload.FS) error {
				return smallOnce(fsys, tg, n, data, create, read, stat, readdir, unlink)
			})
			if err != nil {
				return err
			}
		}
		for _, r := range ro {
			names := workload.Names(r.fs, "run", "f", n)
			if err := smallRead(r.fs, r.Target, n, names, read, stat, readdir); err != nil {
				return err
			}
		}
		for _, tg := range c.Targets(workload.KindOSFsync) {
			fsys, err := tg.New(c)
			if err != nil {
				return err
			}
			names := workload.Names(fsys, "run", "f", nSync)
			err = fsys.Mkdir(fsys.Path("run"))
			if err == nil {
				err = create.Time(tg.Spec(nSync, nSync, int64(nSync*Small)), func() error {
					return workload.CreateAll(fsys, names, data)
				})
			}
			if cerr := fsys.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func smallOnce(fsys workload.FS, tg Target, n int, data []byte, create, read, stat, readdir, unlink *Table) error {
	names := workload.Names(fsys, "run", "f", n)
	if err := fsys.Mkdir(fsys.Path("run")); err != nil {
		return err
	}
	spec := tg.Spec(n, n, int64(n*Small))
	if err := create.Time(spec, func() error { return workload.CreateAll(fsys, names, data) }); err != nil {
		return err
	}
	if err := smallRead(fsys, tg, n, names, read, stat, readdir); err != nil {
		return err
	}
	spec.Bytes = 0
	return unlink.Time(spec, func() error { return workload.RemoveEach(fsys, names) })
}

func smallRead(fsys workload.FS, tg Target, n int, names []string, read, stat, readdir *Table) error {
	spec := tg.Spec(n, n, int64(n*Small))
	if err := read.Time(spec, func() error { return workload.ReadAll(fsys, names, Small) }); err != nil {
		return err
	}
	spec.Bytes = 0
	if err := stat.Time(spec, func() error { return workload.StatAll(fsys, names) }); err != nil {
		return err
	}
	dir := fsys.Path("run")
	return readdir.Time(spec, func() error { return workload.ReadDirCount(fsys, dir, n) })
}

// roTarget is a read-only file system built from a tree.
type roTarget struct {
	Target
	fs workload.FS
}

// Read-only kinds: they are never made empty, only built from a tree.
var (
	kindPack  = workload.Kind{Name: "pack", Ours: true, Concurrent: true}
	kindZip   = workload.Kind{Name: "zip", Concurrent: true}
	kindMapFS = workload.Kind{Name: "mapfs", Concurrent: true}
)

// readOnlyFixtures builds tree as a pack and a zip file in the first place
// and as an fstest.MapFS, and returns them opened, with a function that
// closes and removes them.
func readOnlyFixtures(c *Ctx, tree workload.Tree) ([]roTarget, func(), error) {
	p := c.Places[0]
	dir, err := c.TempDir(p)
	if err != nil {
		return nil, nil, err
	}
	var out []roTarget
	cleanup := func() {
		for _, r := range out {
			r.fs.Close()
		}
		os.RemoveAll(dir)
	}
	fail := func(err error) ([]roTarget, func(), error) {
		cleanup()
		return nil, nil, err
	}
	packPath, zipPath := filepath.Join(dir, "tree.pack"), filepath.Join(dir, "tree.zip")
	if err := errors.Join(tree.WritePack(packPath), tree.WriteZip(zipPath)); err != nil {
		return fail(err)
	}
	pack, err := workload.OpenPack(packPath)
	if err != nil {
		return fail(err)
	}
	out = append(out, roTarget{Target{Kind: kindPack, Where: File, place: p}, pack})
	zr, err := workload.OpenZip(zipPath)
	if err != nil {
		return fail(err)
	}
	out = append(out, roTarget{Target{Kind: kindZip, Where: File, place: p}, zr})
	out = append(out, roTarget{Target{Kind: kindMapFS, Where: Memory}, workload.NewReadOnly(tree.MapFS(), nil)})
	return out, cleanup, nil
}
