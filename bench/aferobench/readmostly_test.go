package aferobench

import (
	"fmt"
	"testing"
	"time"

	"github.com/packfs/packfs/bench/internal/workload"
)

// BenchmarkReadMostlyParts takes the table's 8-goroutines-95pct-read row
// apart: the same random reads of the row's 20,000 files with one
// goroutine or eight, and with no writes or 5% of them, each timed for
// mem and for MemMapFs alternately in one run; mem/memmapfs is the ratio
// of their elapsed times. It tells what the goroutines and the writers
// each add to mem's cost over MemMapFs's:
//
//	cd bench && go test -run '^$' -bench ReadMostlyParts -benchtime 10x ./aferobench/
func BenchmarkReadMostlyParts(b *testing.B) {
	rows := workload.TableRows(nSmall, nWorkers)
	w := rows[len(rows)-1]
	data := workload.Payload(workload.TableSmall)
	for _, cfg := range []struct{ workers, writePct int }{{1, 0}, {nWorkers, 0}, {1, 5}, {nWorkers, 5}} {
		b.Run(fmt.Sprintf("goroutines=%d/writes=%d%%", cfg.workers, cfg.writePct), func(b *testing.B) {
			type col struct {
				fsys  workload.FS
				names []string
				took  time.Duration
			}
			var mem, mm *col
			for _, c := range tableColumns() {
				if c.name != "mem" && c.name != "memmapfs" {
					continue
				}
				fsys, names, err := c.Setup(w, b.TempDir())
				must(b, err)
				b.Cleanup(func() { fsys.Close() })
				if c.name == "mem" {
					mem = &col{fsys: fsys, names: names}
				} else {
					mm = &col{fsys: fsys, names: names}
				}
			}
			ops := len(mem.names) * nWorkers / cfg.workers // per goroutine: the same total
			var seed uint64
			for b.Loop() {
				seed++
				pair := []*col{mem, mm}
				if seed%2 == 0 {
					pair[0], pair[1] = mm, mem
				}
				for _, c := range pair {
					start := time.Now()
					must(b, workload.ReadMostly(c.fsys, c.names, data, cfg.workers, ops, cfg.writePct, seed))
					c.took += time.Since(start)
				}
			}
			total := float64(b.N * ops * cfg.workers)
			b.ReportMetric(float64(mem.took.Nanoseconds())/total, "mem-ns/op")
			b.ReportMetric(float64(mm.took.Nanoseconds())/total, "memmapfs-ns/op")
			b.ReportMetric(float64(mem.took)/float64(mm.took), "mem/memmapfs")
		})
	}
}
