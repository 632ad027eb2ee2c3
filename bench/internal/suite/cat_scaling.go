package suite

import (
	"fmt"
	"runtime"
	"strconv"
	"testing/fstest"

	"github.com/packfs/packfs/bench/internal/workload"
)

func init() {
	Register(&Category{
		Name:  "scaling",
		Title: "Scaling: cost per operation from N to 64N, and memory per entry",
		Order: 110,
		Doc: `Create (128-byte files), stat, one ReadDir and remove, at N, 4N, 16N and
64N entries (20,000 to 1,280,000) in one directory. The table gives the
cost per operation at each size and its growth, cost(4N)/cost(N): 1.0 is
a constant cost per operation; O(log n) per operation gives about 1.15
across a 4x step at these sizes, plus what a structure that outgrows the
CPU caches adds at the largest ones; 4.0 is a quadratic total, as the
predecessor's flat index had (its creates grew 25x for a 5x step). The
plot draws the same numbers on log scales.

To keep the full run within its time on two cores, only mem goes on to
64N; MemMapFs and fstest.MapFS stop at 16N, the union and go-billy's memfs
at 4N, and os runs on tmpfs only, up to 4N (on ext4 a run of 80,000
creates takes seconds and swings by several times from run to run on a
shared disk). fstest.MapFS cannot create, so it only stats and lists; its
ReadDir scans the whole map, whatever the directory. MemMapFs and
go-billy's memfs keep one map of full paths, O(1) per lookup; a ReadDir of
MemMapFs sorts the directory's names.

**Memory per entry** builds 1,000 directories of 1,000 empty files each
(N x 50 entries), and reports the growth of the live heap after a
garbage collection divided by the entries. It counts everything the
file system keeps, names included. A pack keeps its index in the mapped
file, not on the heap, and is not shown.`,
		Run: runScaling,
	})
}

// scalingKinds are the file systems of the scaling category, with the
// largest multiple of N each runs at (0: every size).
func scalingKinds(c *Ctx) []struct {
	kind workload.Kind
	max  int
} {
	return []struct {
		kind workload.Kind
		max  int
	}{
		{workload.KindMem, 0}, {workload.KindUnion, 4},
		{workload.KindMemMapFs, 16}, {workload.KindBilly, 4}, {kindMapFS, 16},
		{workload.KindOS, max(1, c.HostScale)},
	}
}

func runScaling(c *Ctx) error {
	data := workload.Payload(Small)
	create := c.ScalingTable("create", "create", "file")
	stat := c.ScalingTable("stat", "stat", "file")
	readdir := c.ScalingTable("readdir", "readdir", "entry")
	remove := c.ScalingTable("remove", "remove", "file")
	for rep := range c.Runs {
		c.Logf("run %d/%d", rep+1, c.Runs)
		for _, k := range scalingKinds(c) {
			for _, s := range c.Scales {
				if k.max > 0 && s > k.max {
					continue
				}
				n := s * c.N
				tgs := c.Targets(k.kind)
				if k.kind.Host {
					// tmpfs only: the kernel's directory code
					// without ext4's journal, whose cost swings
					// by 10x from run to run on shared disks.
					tgs = tgs[len(tgs)-1:]
				}
				for _, tg := range tgs {
					if err := scaleOnce(c, tg, n, data, create, stat, readdir, remove); err != nil {
						return err
					}
				}
			}
		}
	}
	return memoryPerEntry(c)
}

func scaleOnce(c *Ctx, tg Target, n int, data []byte, create, stat, readdir, remove *Table) error {
	spec := tg.Spec(n, n, 0)
	if tg.Kind.Name == kindMapFS.Name {
		m := make(fstest.MapFS, n)
		for _, name := range workload.Rel("run", "f", n) {
			m[name] = &fstest.MapFile{Data: data, Mode: 0o644}
		}
		fsys := workload.NewReadOnly(m, nil)
		names := workload.Names(fsys, "run", "f", n)
		if err := stat.Time(spec, func() error { return workload.StatAll(fsys, names) }); err != nil {
			return err
		}
		return readdir.Time(spec, func() error { return workload.ReadDirCount(fsys, "run", n) })
	}
	fsys, err := tg.New(c)
	if err != nil {
		return err
	}
	defer fsys.Close()
	names := workload.Names(fsys, "run", "f", n)
	if err := fsys.Mkdir(fsys.Path("run")); err != nil {
		return err
	}
	if err := create.Time(spec, func() error { return workload.CreateAll(fsys, names, data) }); err != nil {
		return err
	}
	if err := stat.Time(spec, func() error { return workload.StatAll(fsys, names) }); err != nil {
		return err
	}
	dir := fsys.Path("run")
	if err := readdir.Time(spec, func() error { return workload.ReadDirCount(fsys, dir, n) }); err != nil {
		return err
	}
	return remove.Time(spec, func() error { return workload.RemoveEach(fsys, names) })
}

// memoryPerEntry measures the live heap per empty file at c.MemEntries.
func memoryPerEntry(c *Ctx) error {
	dirs := max(1, c.MemEntries/1_000)
	files := c.MemEntries / dirs
	total := dirs * (files + 1)
	table := c.ValueTable("memory", fmt.Sprintf("heap per entry, %s directories of %s empty files", commas(dirs), commas(files)), "bytes/entry")
	kinds := []workload.Kind{workload.KindMem, workload.KindMemMapFs, workload.KindBilly, kindMapFS}
	for _, k := range kinds {
		before := heap()
		var keep any
		if k.Name == kindMapFS.Name {
			m := make(fstest.MapFS, total)
			for d := range dirs {
				dir := "d" + strconv.Itoa(d)
				m[dir] = &fstest.MapFile{Mode: 0o755 | 1<<31}
				for i := range files {
					m[dir+"/f"+strconv.Itoa(i)] = &fstest.MapFile{Mode: 0o644}
				}
			}
			keep = m
		} else {
			fsys, err := k.New("")
			if err != nil {
				return err
			}
			if err := workload.CreateEmptyTree(fsys, dirs, files); err != nil {
				return err
			}
			keep = fsys
		}
		after := heap()
		runtime.KeepAlive(keep)
		table.SetValue(Spec{Backend: k.Name, Ours: k.Ours, Where: Memory, N: total}, float64(after-before)/float64(total))
		c.Logf("memory %s: %d bytes", k.Name, after-before)
	}
	return nil
}

// heap returns the live heap after two garbage collections.
func heap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
