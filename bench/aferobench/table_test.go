package aferobench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs/bench/internal/cputime"
	"github.com/packfs/packfs/bench/internal/workload"
)

// The table of issue 19: every small-file workload through afero's API,
// each backend's time divided by MemMapFs's, all in one run. The columns
// and rows are the runner's (workload.TableColumns, workload.TableRows;
// `go run . -cat afero` prints the same table). Each iteration times every
// backend once, one after the other, so that all see the same load; a
// ratio is the median over the iterations of the backend's time over
// MemMapFs's in the same iteration.
//
//	cd bench && go test -run '^$' -bench Table -benchtime 7x ./aferobench/
//
// On a loaded machine, -cputime times each column in the CPU time the
// process spends (user and system, all threads, the garbage collector
// included) instead of the elapsed time, which other processes inflate
// far more, and -columns keeps some columns (MemMapFs's always):
//
//	cd bench && go test -run '^$' -bench Table -benchtime 9x ./aferobench/ \
//		-cputime -columns mem,floor
//
// Columns: mem (aferoadapter.New(mem.New())), union (the adapter over a
// union of an in-memory upper layer over a pack that holds 1,000 other
// files in the same directory, so that every name is looked up in a
// merged directory), union-lower (the read workloads with the 20,000
// files in the pack, read through the union), store (packfs.Open with
// SyncNone and no checkpoints, on tmpfs and on the disk's temporary
// directory) and floor (afero's helpers over a file system that does
// nothing: the bound of every ratio).

var (
	tableCPU  = flag.Bool("cputime", false, "BenchmarkTable times each column in CPU time, not elapsed time")
	tableCols = flag.String("columns", "", "BenchmarkTable's columns, comma-separated, besides MemMapFs's (default all)")
)

// keepColumn reports whether -columns keeps c.
func keepColumn(c tableColumn) bool {
	return *tableCols == "" || c.Base || slices.Contains(strings.Split(*tableCols, ","), c.name)
}

// tableColumn is one column with the host directory it runs under ("":
// the default temporary directory).
type tableColumn struct {
	workload.TableColumn
	name, base string
}

func tableColumns() []tableColumn {
	var out []tableColumn
	for _, c := range workload.TableColumns() {
		if !c.Host {
			out = append(out, tableColumn{c, c.Name, ""})
			continue
		}
		out = append(out, tableColumn{c, c.Name + "-tmpfs", "/dev/shm"}, tableColumn{c, c.Name + "-disk", ""})
	}
	return out
}

// BenchmarkTable reports, per workload, each backend's ns per operation
// and its time over MemMapFs's ("<backend>/memmapfs").
func BenchmarkTable(b *testing.B) {
	for _, w := range workload.TableRows(nSmall, nWorkers) {
		b.Run("workload="+w.Name, func(b *testing.B) {
			type col struct {
				name  string
				fsys  workload.FS
				names []string
				took  []time.Duration // one per iteration
			}
			var cols []*col
			var base *col
			for _, bk := range tableColumns() {
				if !keepColumn(bk) {
					continue
				}
				dir, err := os.MkdirTemp(bk.base, "aferobench-")
				if err != nil {
					dir, err = os.MkdirTemp("", "aferobench-")
				}
				must(b, err)
				b.Cleanup(func() { os.RemoveAll(dir) })
				fsys, names, err := bk.Setup(w, dir)
				must(b, err)
				if fsys == nil {
					continue
				}
				b.Cleanup(func() { fsys.Close() })
				c := &col{name: bk.name, fsys: fsys, names: names}
				if bk.Base {
					base = c
				}
				cols = append(cols, c)
			}
			var seed uint64
			for b.Loop() {
				b.StopTimer()
				seed++
				// Start at another column each time, so that none always
				// runs right after the heap grew by another's files.
				for k := range cols {
					c := cols[(k+int(seed))%len(cols)]
					must(b, w.Prep(c.fsys, c.names))
					runtime.GC()
					start, cpu := time.Now(), cputime.Now()
					must(b, w.Run(c.fsys, c.names, seed))
					if *tableCPU {
						c.took = append(c.took, cputime.Now()-cpu)
					} else {
						c.took = append(c.took, time.Since(start))
					}
				}
				b.StartTimer()
			}
			// Medians over the iterations: of each column's time, and of
			// its ratio to MemMapFs's in the same iteration, which a busy
			// machine's bursts of load disturb least.
			var row strings.Builder
			for _, c := range cols {
				b.ReportMetric(float64(median(c.took))/float64(w.Ops), c.name+"-ns/op")
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
			b.Logf("%s:%s", w.Name, row.String())
		})
	}
}

// median returns the median of ds, which it sorts.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)/2]
}
