package aferobench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/bench/internal/workload"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/spf13/afero"
)

// The table of issue 19: every small-file workload through afero's API,
// each backend's time divided by MemMapFs's, all in one run. Each
// iteration times every backend once, one after the other, so that all
// see the same load; a ratio is the median over the iterations of the
// backend's time over MemMapFs's in the same iteration.
//
//	cd bench && go test -run '^$' -bench Table -benchtime 7x ./aferobench/
//
// Columns: mem (aferoadapter.New(mem.New())), union (the adapter over a
// union of an in-memory upper layer over a pack that holds 1,000 other
// files in the same directory, so that every name is looked up in a
// merged directory), union-lower (the read workloads with the 20,000
// files in the pack, read through the union), store (packfs.Open with
// SyncNone and no checkpoints, on tmpfs and on the disk's temporary
// directory) and floor (afero's helpers over a file system that does
// nothing: the bound of every ratio).

// tableBackend is one column.
type tableBackend struct {
	name string
	// new returns an empty file system through afero's API; lower, when
	// not nil, are names the file system must already hold (as files of
	// smallSize bytes), and a backend that cannot hold them there
	// returns nil.
	new func(tb testing.TB, lower []string) workload.FS
}

func tableBackends() []tableBackend {
	plain := func(kind workload.Kind) func(testing.TB, []string) workload.FS {
		return func(tb testing.TB, lower []string) workload.FS {
			if lower != nil {
				return nil
			}
			be, err := kind.New("")
			must(tb, err)
			tb.Cleanup(func() { be.Close() })
			return be
		}
	}
	return []tableBackend{
		{"memmapfs", plain(workload.KindMemMapFs)},
		{"mem", plain(workload.KindAdapter)},
		{"union", func(tb testing.TB, lower []string) workload.FS {
			if lower != nil {
				return nil
			}
			return unionFS(tb, workload.Rel("run", "l", 1_000))
		}},
		{"union-lower", func(tb testing.TB, lower []string) workload.FS {
			if lower == nil {
				return nil
			}
			return unionFS(tb, lower)
		}},
		{"store-tmpfs", storeFS("/dev/shm")},
		{"store-disk", storeFS("")},
		{"floor", plain(kindFloor)},
	}
}

// unionFS is the adapter over a union of an empty in-memory layer over a
// pack holding names (relative, as workload.Rel makes them).
func unionFS(tb testing.TB, names []string) workload.FS {
	tree := workload.Tree{Names: names, Data: func(int) []byte { return workload.Payload(smallSize) }}
	name := filepath.Join(tb.TempDir(), "lower.pack")
	must(tb, tree.WritePack(name))
	r, err := packreader.Open(name)
	must(tb, err)
	tb.Cleanup(func() { r.Close() })
	return workload.NewAfero(aferoadapter.New(packfs.New(mem.New(), r)), "", "")
}

// storeFS makes the store with SyncNone in a new directory under base
// ("": the default temporary directory).
func storeFS(base string) func(testing.TB, []string) workload.FS {
	return func(tb testing.TB, lower []string) workload.FS {
		if lower != nil {
			return nil
		}
		dir, err := os.MkdirTemp(base, "aferobench-store-")
		if err != nil {
			dir, err = os.MkdirTemp("", "aferobench-store-")
		}
		must(tb, err)
		s, err := packfs.Open(dir, &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
		must(tb, err)
		tb.Cleanup(func() { s.Close(); os.RemoveAll(dir) })
		return workload.NewAfero(aferoadapter.New(s), "", "")
	}
}

// tableWorkload is one row: prep, untimed, readies fsys for run, timed.
type tableWorkload struct {
	name  string
	units int
	lower bool // the files exist before: union-lower can hold them
	prep  func(fsys workload.FS, names []string) error
	run   func(fsys workload.FS, names []string, seed uint64) error
}

func tableWorkloads() []tableWorkload {
	data := workload.Payload(smallSize)
	none := func(workload.FS, []string) error { return nil }
	return []tableWorkload{
		{"open-read-close", nSmall, true, none, func(fsys workload.FS, names []string, _ uint64) error {
			return workload.ReadAll(fsys, names, smallSize)
		}},
		{"stat", nSmall, true, none, func(fsys workload.FS, names []string, _ uint64) error {
			return workload.StatAll(fsys, names)
		}},
		{"create", nSmall, false, func(fsys workload.FS, names []string) error {
			for _, n := range names {
				if err := fsys.Remove(n); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
			return nil
		}, func(fsys workload.FS, names []string, _ uint64) error {
			return workload.CreateAll(fsys, names, data)
		}},
		{"unlink", nSmall, false, func(fsys workload.FS, names []string) error {
			return workload.CreateAll(fsys, names, data)
		}, func(fsys workload.FS, names []string, _ uint64) error {
			return workload.RemoveEach(fsys, names)
		}},
		{"rmdir", nSmall, false, func(fsys workload.FS, names []string) error {
			return workload.MkdirEach(fsys, names)
		}, func(fsys workload.FS, names []string, _ uint64) error {
			return workload.RemoveEach(fsys, names)
		}},
		{"8-goroutines-create-read-unlink", nWorkers * perWorker, false, none, func(fsys workload.FS, names []string, _ uint64) error {
			split := make([][]string, nWorkers)
			for g := range split {
				split[g] = names[g*perWorker : (g+1)*perWorker]
			}
			return workload.CreateReadRemove(fsys, split, data)
		}},
		{"8-goroutines-95pct-read", nWorkers * mostlyOps, true, none, func(fsys workload.FS, names []string, seed uint64) error {
			return workload.ReadMostly(fsys, names, data, nWorkers, mostlyOps, writePct, seed)
		}},
	}
}

// BenchmarkTable reports, per workload, each backend's ns per file and
// its time over MemMapFs's ("<backend>/memmapfs").
func BenchmarkTable(b *testing.B) {
	for _, w := range tableWorkloads() {
		b.Run("workload="+w.name, func(b *testing.B) {
			n := w.units
			if w.name == "8-goroutines-95pct-read" {
				n = nSmall
			}
			type col struct {
				name  string
				fsys  workload.FS
				names []string
				took  []time.Duration // one per iteration
			}
			var cols []*col
			for _, bk := range tableBackends() {
				var fsys workload.FS
				var lower []string
				if w.lower {
					lower = workload.Rel("run", "f", n)
					if fsys = bk.new(b, lower); fsys != nil {
						cols = append(cols, &col{name: bk.name, fsys: fsys, names: workload.Names(fsys, "run", "f", n)})
						continue
					}
				}
				if fsys = bk.new(b, nil); fsys == nil {
					continue
				}
				if err := fsys.Mkdir(fsys.Path("run")); err != nil && !os.IsExist(err) {
					b.Fatal(err)
				}
				names := workload.Names(fsys, "run", "f", n)
				if w.lower && bk.name != "floor" {
					must(b, workload.CreateAll(fsys, names, workload.Payload(smallSize)))
				}
				cols = append(cols, &col{name: bk.name, fsys: fsys, names: names})
			}
			var seed uint64
			for b.Loop() {
				b.StopTimer()
				seed++
				// Start at another column each time, so that none always
				// runs right after the heap grew by another's files.
				for k := range cols {
					c := cols[(k+int(seed))%len(cols)]
					must(b, w.prep(c.fsys, c.names))
					runtime.GC()
					start := time.Now()
					must(b, w.run(c.fsys, c.names, seed))
					c.took = append(c.took, time.Since(start))
				}
				b.StartTimer()
			}
			// Medians over the iterations: of each column's time, and of
			// its ratio to MemMapFs's in the same iteration, which a busy
			// machine's bursts of load disturb least.
			var base *col
			for _, c := range cols {
				if c.name == "memmapfs" {
					base = c
				}
			}
			var row strings.Builder
			for _, c := range cols {
				b.ReportMetric(float64(median(c.took))/float64(w.units), c.name+"-ns/file")
				if c != base && base != nil {
					ratios := make([]time.Duration, len(c.took))
					for i := range ratios {
						ratios[i] = time.Duration(float64(c.took[i]) / float64(base.took[i]) * 1e6)
					}
					r := float64(median(ratios)) / 1e6
					b.ReportMetric(r, c.name+"/memmapfs")
					fmt.Fprintf(&row, " %s %.2fx", c.name, r)
				}
			}
			b.Logf("%s:%s", w.name, row.String())
		})
	}
}

var _ afero.Fs = floorFs{}

// median returns the median of ds, which it sorts.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)/2]
}
