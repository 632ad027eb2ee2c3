package suite

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/packfs/packfs/bench/internal/workload"
	"github.com/packfs/packfs/packwriter"
)

func init() {
	Register(&Category{
		Name:  "pack",
		Title: "Packs: random reads and compaction",
		Order: 40,
		Doc: `**Random read.** A tree of N distinct 128-byte files is read whole
(ReadFile), each once, in a random order, from a pack (mmap'd, through
packreader), a stored zip (zip.OpenReader), an fstest.MapFS, a snapshot of
the in-memory layer, and the same files in a host directory through os,
os.Root and dirfs. A pack lookup is a binary search of one directory's
sorted run of index records, then a CRC-32C check of the content and a
copy; a zip lookup is a map lookup built at open (zip's fs.FS indexes the
whole archive on first use).

**Compaction.** packwriter.WriteFile writes a pack of N and 4N files from
a snapshot of the in-memory layer, with identical content in every file
(every file after the first is a duplicate) and with distinct content.
Both write to the default temporary directory only: compaction is
bound by hashing and copying, not by the file system. The alternative is
an archive/zip writer storing the same tree
uncompressed into a file that is then fsync'd, as WriteFile fsyncs the
pack. The predecessor's compaction was quadratic in distinct files; the
4N row against the N row shows ours is not: look at "per entry" across
sizes. The pack hashes each content with SHA-256 (to find duplicates) and
CRC-32C (for integrity), sorts each directory and writes an index; the
zip computes CRC-32 and writes a central directory. With distinct
contents they cost about the same; with identical contents the pack's
byte comparison of each duplicate dominates (see "Where PackFS loses").`,
		Run: runPack,
	})
}

func runPack(c *Ctx) error {
	n := c.N
	tree := workload.Tree{Names: workload.Rel("d", "f", n), Data: func(i int) []byte { return workload.Distinct(i, Small) }}
	if err := randomRead(c, tree); err != nil {
		return err
	}
	return compaction(c)
}

func randomRead(c *Ctx, tree workload.Tree) error {
	n := len(tree.Names)
	table := c.Table("random", "random read of N entries (ReadFile, random order)", "file")
	ro, cleanup, err := readOnlyFixtures(c, tree)
	if err != nil {
		return err
	}
	defer cleanup()
	snap, err := tree.Mem()
	if err != nil {
		return err
	}
	ro = append(ro, roTarget{Target{Kind: workload.Kind{Name: "mem", Ours: true}, Where: Memory}, workload.NewReadOnly(snap, nil)})
	p := c.Places[0]
	dir, err := c.TempDir(p)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := tree.WriteDir(dir); err != nil {
		return err
	}
	for _, k := range []workload.Kind{workload.KindDirfs, workload.KindOS, workload.KindOSRoot} {
		// A host file system's Close removes its directory: these share
		// one, removed above instead.
		fsys, err := k.New(dir)
		if err != nil {
			return err
		}
		ro = append(ro, roTarget{Target{Kind: k, Where: p.Name, place: p}, noClose{fsys}})
	}
	shuffled := workload.Shuffled(tree.Names, 7)
	for range c.Runs {
		for _, r := range ro {
			names := make([]string, n)
			for i, s := range shuffled {
				names[i] = r.fs.Path(s)
			}
			if err := table.Time(r.Spec(n, n, int64(n*Small)), func() error { return workload.ReadAll(r.fs, names, Small) }); err != nil {
				return err
			}
		}
	}
	return nil
}

// noClose leaves the directory of a host FS in place at Close.
type noClose struct{ workload.FS }

func (noClose) Close() error { return nil }

func compaction(c *Ctx) error {
	same := workload.Payload(Small)
	for _, distinct := range []bool{false, true} {
		id, title := "compact-same", "compaction, identical content (N files, one content)"
		data := func(int) []byte { return same }
		if distinct {
			id, title = "compact-distinct", "compaction, distinct content"
			data = func(i int) []byte { return workload.Distinct(i, Small) }
		}
		table := c.Table(id, title, "entry")
		table.NoBaseline = true
		for _, n := range []int{c.N, 4 * c.N} {
			tree := workload.Tree{Names: workload.Rel("d", "f", n), Data: data}
			snap, err := tree.Mem()
			if err != nil {
				return err
			}
			for range c.Runs {
				for _, p := range c.Places[:1] {
					dir, err := c.TempDir(p)
					if err != nil {
						return err
					}
					packName, zipName := filepath.Join(dir, "x.pack"), filepath.Join(dir, "x.zip")
					spec := Spec{Backend: "pack", Ours: true, Where: p.Name, N: n, Ops: n, Bytes: int64(n * Small)}
					err = table.Time(spec, func() error { return packwriter.WriteFile(packName, snap) })
					if err == nil {
						spec.Backend, spec.Ours = "zip (store)", false
						err = table.Time(spec, func() error { return writeZipFile(zipName, snap) })
					}
					os.RemoveAll(dir)
					if err != nil {
						return err
					}
				}
			}
		}
		for _, s := range table.Series() {
			if g := s.Growth(c.N); g == g {
				table.Note("- %s: cost per entry at 4N / at N = %.2f", s.Label, g)
			}
		}
	}
	return nil
}

// writeZipFile writes fsys to a stored zip at name and fsyncs it.
func writeZipFile(name string, fsys fs.FS) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := workload.WriteZipFS(f, fsys); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
