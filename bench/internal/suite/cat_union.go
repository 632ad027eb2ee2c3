package suite

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/bench/internal/workload"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/spf13/afero"
)

func init() {
	Register(&Category{
		Name:  "union",
		Title: "Union: read-through and merged ReadDir",
		Order: 80,
		Doc: `**Read-through.** N files of 128 bytes live in a lower layer; each is
read once (ReadFile) through a union with an empty in-memory upper layer,
over an in-memory snapshot and over a pack, and directly from the lower
for comparison. afero's CopyOnWriteFs (a MemMapFs layer over a read-only
OsFs base in a host directory) is the alternative, and os reading the
host directory is the baseline.

**Merged ReadDir.** One directory holds N entries in the upper layer and N
others in the lower; one ReadDir lists all 2N, sorted. The direct rows
list 2N entries held in one layer, which is the floor; CopyOnWriteFs
merges its layer's listing with its base's; os lists a host directory of
2N entries.

The union looks each name up in the upper layer first and falls through
to the lowers, so a read through it costs the upper's miss plus the
lower's hit plus the union's own path walk, and still far below a read
from the host. A merged listing is a k-way merge of sorted listings,
linear in the entries.

**Over a pack, against the pack.** One pack, in each place (the disk's
temporary directory, tmpfs), holds N files of 128 bytes at
its root, N in a directory m/ that the upper layer also holds N files of
(a merged directory), and N five levels deep (a/b/c/d/e/). Each file is
opened, read to its end and closed (Open, Read, Close: no ReadFile fast
path) through a union of an in-memory layer over the pack, and from the
pack directly; the ratio is the median over runs of the union's time
over the pack's in the same run. **Open + first lookup** opens the pack
file and stats one name in m/, through a new union over it and directly,
then closes the pack: what a program pays before its first file.`,
		Run: runUnion,
	})
}

var (
	kindCow       = workload.Kind{Name: "afero cow", Concurrent: true}
	kindUnionMem  = workload.Kind{Name: "union over mem", Ours: true, Concurrent: true}
	kindUnionPack = workload.Kind{Name: "union over pack", Ours: true, Concurrent: true}
	kindMemSnap   = workload.Kind{Name: "mem snapshot", Ours: true, Concurrent: true}
)

func runUnion(c *Ctx) error {
	n := c.N
	data := workload.Payload(Small)
	lowerTree := workload.Tree{Names: workload.Rel("d", "l", n), Data: func(int) []byte { return data }}
	upperNames := workload.Rel("d", "u", n)
	p := c.Places[0]
	dir, err := c.TempDir(p)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lowerDir, bothDir := filepath.Join(dir, "lower"), filepath.Join(dir, "both")
	bothTree := workload.Tree{Names: append(append([]string(nil), lowerTree.Names...), upperNames...), Data: lowerTree.Data}
	if err := os.Mkdir(lowerDir, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(bothDir, 0o755); err != nil {
		return err
	}
	if err := lowerTree.WriteDir(lowerDir); err != nil {
		return err
	}
	if err := bothTree.WriteDir(bothDir); err != nil {
		return err
	}
	packName := filepath.Join(dir, "lower.pack")
	if err := lowerTree.WritePack(packName); err != nil {
		return err
	}
	pack, err := packreader.Open(packName)
	if err != nil {
		return err
	}
	defer pack.Close()
	lowerSnap, err := lowerTree.Mem()
	if err != nil {
		return err
	}
	bothSnap, err := bothTree.Mem()
	if err != nil {
		return err
	}

	// Read-through: the lower files, through each stack.
	cow := func() afero.Fs {
		base := afero.NewReadOnlyFs(afero.NewBasePathFs(afero.NewOsFs(), lowerDir))
		return afero.NewCopyOnWriteFs(base, afero.NewMemMapFs())
	}
	host, err := workload.KindOS.New(lowerDir)
	if err != nil {
		return err
	}
	both, err := workload.KindOS.New(bothDir)
	if err != nil {
		return err
	}
	read := []roTarget{
		{Target{Kind: kindUnionMem, Where: Memory}, workload.NewLayer(packfs.New(mem.New(), lowerSnap))},
		{Target{Kind: kindUnionPack, Where: File, place: p}, workload.NewLayer(packfs.New(mem.New(), pack))},
		{Target{Kind: kindMemSnap, Where: Memory}, workload.NewReadOnly(lowerSnap, nil)},
		{Target{Kind: kindPack, Where: File, place: p}, workload.NewReadOnly(pack, nil)},
		{Target{Kind: kindCow, Where: p.Name, place: p}, workload.NewAfero(cow(), "", "")},
		{Target{Kind: workload.KindOS, Where: p.Name, place: p}, noClose{host}},
	}

	// Merged ReadDir: N entries in the upper layer, N in the lower.
	unionMem, unionPack := packfs.New(mem.New(), lowerSnap), packfs.New(mem.New(), pack)
	cowFs := cow()
	for _, name := range upperNames {
		err := workload.Join(unionMem.WriteFile(name, data, 0o644), unionPack.WriteFile(name, data, 0o644),
			afero.WriteFile(cowFs, "/"+name, data, 0o644))
		if err != nil {
			return err
		}
	}
	list := []roTarget{
		{Target{Kind: kindUnionMem, Where: Memory}, workload.NewLayer(unionMem)},
		{Target{Kind: kindUnionPack, Where: File, place: p}, workload.NewLayer(unionPack)},
		{Target{Kind: kindMemSnap, Where: Memory}, workload.NewReadOnly(bothSnap, nil)},
		{Target{Kind: kindCow, Where: p.Name, place: p}, workload.NewAfero(cowFs, "", "")},
		{Target{Kind: workload.KindOS, Where: p.Name, place: p}, noClose{both}},
	}

	for _, p := range c.Places {
		if err := unionOverPack(c, p, n); err != nil {
			return err
		}
	}

	readT := c.Table("read", "read N lower files through the union (ReadFile)", "file")
	listT := c.Table("readdir", "merged ReadDir of N upper + N lower entries", "entry")
	for range c.Runs {
		for _, r := range read {
			names := make([]string, n)
			for i, s := range lowerTree.Names {
				names[i] = r.fs.Path(s)
			}
			if err := readT.Time(r.Spec(n, n, int64(n*Small)), func() error { return workload.ReadAll(r.fs, names, Small) }); err != nil {
				return err
			}
		}
		for _, r := range list {
			d := r.fs.Path("d")
			if err := listT.Time(r.Spec(2*n, 2*n, 0), func() error { return workload.ReadDirCount(r.fs, d, 2*n) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// unionOverPack times Open+Read+Close of the pack's files at the root, in
// a merged directory and deep, and opening with a first lookup, through a
// union over the pack and from the pack directly, side by side, with the
// pack in place p.
func unionOverPack(c *Ctx, p Place, n int) error {
	dir, err := c.TempDir(p)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	data := workload.Payload(Small)
	root := make([]string, n)
	for i := range root {
		root[i] = fmt.Sprintf("r%07d", i)
	}
	sets := []struct {
		id, where string
		names     []string
	}{
		{"root", "at the root", root},
		{"merged", "in a merged directory", workload.Rel("m", "l", n)},
		{"deep", "five levels deep", workload.Rel("a/b/c/d/e", "f", n)},
	}
	var all []string
	for _, s := range sets {
		all = append(all, s.names...)
	}
	packName := filepath.Join(dir, "positions.pack")
	tree := workload.Tree{Names: all, Data: func(int) []byte { return data }}
	if err := tree.WritePack(packName); err != nil {
		return err
	}
	pack, err := packreader.Open(packName)
	if err != nil {
		return err
	}
	defer pack.Close()
	u := packfs.New(mem.New(), pack)
	for _, name := range workload.Rel("m", "u", n) {
		if err := u.WriteFile(name, data, 0o644); err != nil {
			return err
		}
	}
	union := Target{Kind: kindUnionPack, Where: p.Name, place: p}
	direct := Target{Kind: kindPack, Where: p.Name, place: p}
	fss := []workload.FS{workload.NewLayer(u), workload.NewReadOnly(pack, nil)}
	var tables []*Table
	for _, s := range sets {
		t := c.Table("orc-"+s.id, "Open+Read+Close of N small files "+s.where+": union over a pack against the pack", "file")
		t.Base, t.Paired = kindPack.Name, true
		tables = append(tables, t)
	}
	lookup := c.Table("open-lookup", "open a pack of 3N files + first lookup: union over it against the pack", "open")
	lookup.Base, lookup.Paired = kindPack.Name, true
	const opens = 20
	probe := fmt.Sprintf("m/l%07d", n/2)
	openLookup := func(withUnion bool) error {
		for range opens {
			r, err := packreader.Open(packName)
			if err != nil {
				return err
			}
			var fsys fs.StatFS = r
			if withUnion {
				fsys = packfs.New(mem.New(), r)
			}
			_, err = fsys.Stat(probe)
			if err := workload.Join(err, r.Close()); err != nil {
				return err
			}
		}
		return nil
	}
	buf := make([]byte, 512)
	for run := range c.Runs {
		for i, s := range sets {
			for k := range 2 {
				tg, fsys := union, fss[(k+run)%2]
				if (k+run)%2 == 1 {
					tg = direct
				}
				err := tables[i].Time(tg.Spec(n, n, int64(n*Small)), func() error {
					for _, name := range s.names {
						if err := workload.SeqRead(fsys, name, Small, buf); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
		}
		for k := range 2 {
			withUnion := (k+run)%2 == 0
			tg := direct
			if withUnion {
				tg = union
			}
			if err := lookup.Time(tg.Spec(len(all), opens, 0), func() error { return openLookup(withUnion) }); err != nil {
				return err
			}
		}
	}
	return nil
}
