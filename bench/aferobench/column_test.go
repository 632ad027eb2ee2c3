package aferobench

import (
	"flag"
	"runtime"
	"testing"

	"github.com/packfs/packfs/bench/internal/workload"
)

var column = flag.String("column", "mem", "the afero table's column BenchmarkTableColumn runs")

// BenchmarkTableColumn runs the afero table's workloads on one column
// alone, with each Prep untimed, for profiles of where one backend's time
// goes (BenchmarkTable times every column in each iteration, which mixes
// their samples):
//
//	cd bench && go test -run '^$' -bench 'TableColumn/stat$' -benchtime 200x \
//		-cpuprofile cpu.out ./aferobench/ -column union
func BenchmarkTableColumn(b *testing.B) {
	for _, w := range workload.TableRows(nSmall, nWorkers) {
		b.Run(w.Name, func(b *testing.B) {
			var found bool
			for _, bk := range tableColumns() {
				if bk.name != *column {
					continue
				}
				found = true
				fsys, names, err := bk.Setup(w, b.TempDir())
				must(b, err)
				if fsys == nil {
					b.Skipf("column %s has no part in %s", bk.name, w.Name)
				}
				b.Cleanup(func() { fsys.Close() })
				var seed uint64
				for b.Loop() {
					b.StopTimer()
					seed++
					must(b, w.Prep(fsys, names))
					runtime.GC()
					b.StartTimer()
					must(b, w.Run(fsys, names, seed))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*w.Ops), "ns/elem")
			}
			if !found {
				b.Fatalf("no column %q", *column)
			}
		})
	}
}
