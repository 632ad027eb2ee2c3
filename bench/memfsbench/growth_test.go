package memfsbench

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs/bench/internal/cputime"
	"github.com/packfs/packfs/bench/internal/workload"
)

// growthBudget is the most that the cost of an operation may grow from n
// entries in one directory to 4n: O(log n) costs about 1.15 across such a
// step, and what a structure that outgrows the CPU's caches adds comes
// on top.
const growthBudget = 1.3

var growthN = flag.Int("growth.n", nSmall, "BenchmarkGrowth's smaller directory size n (the larger is 4n)")

// BenchmarkGrowth is the complexity check: for each workload (create,
// stat, Open+Read+Close, unlink, mkdir, rmdir of 128-byte files and
// empty directories in one directory), the cost per operation at 4n
// entries over its cost at n, with n = 20,000 (-growth.n), with the
// names taken in creation order and in a random order. Each size runs
// in a new file system of its own; a cost is the least over the
// iterations of the CPU time the process spends per operation (the
// garbage collector's included), which other processes' load disturbs
// far less than elapsed time. It reports each ratio as "<workload>-4n/n"
// and fails the backends of ours whose ratio is over 1.3 (growthBudget).
//
//	cd bench && go test -run '^$' -bench Growth -benchtime 5x ./memfsbench/
func BenchmarkGrowth(b *testing.B) {
	for _, bk := range backends() {
		if bk.kind.Host {
			continue
		}
		for _, order := range []string{"creation", "random"} {
			b.Run("backend="+bk.name+"/order="+order, func(b *testing.B) {
				n := *growthN
				best := [2]map[string]time.Duration{{}, {}}
				for b.Loop() {
					for i, size := range []int{n, 4 * n} {
						took, err := growthOnce(bk.new(b), size, order == "random")
						must(b, err)
						for w, d := range took {
							if old, ok := best[i][w]; !ok || d < old {
								best[i][w] = d
							}
						}
					}
				}
				var over, all []string
				for _, w := range growthWorkloads {
					perN := float64(best[0][w]) / float64(n)
					per4N := float64(best[1][w]) / float64(4*n)
					r := per4N / perN
					b.ReportMetric(per4N, w+"-cpu-ns/op")
					b.ReportMetric(r, w+"-4n/n")
					all = append(all, fmt.Sprintf("%s %.0f → %.0f ns (%.2fx)", w, perN, per4N, r))
					if r > growthBudget {
						over = append(over, fmt.Sprintf("%s %.0f → %.0f ns (%.2fx)", w, perN, per4N, r))
					}
				}
				b.Logf("cost per operation at %d and %d entries: %s", n, 4*n, strings.Join(all, "; "))
				if len(over) > 0 && bk.kind.Ours {
					b.Errorf("cost at %d over cost at %d entries past %.1fx: %s", 4*n, n, growthBudget, strings.Join(over, "; "))
				}
			})
		}
	}
}

var growthWorkloads = []string{"create", "stat", "open-read-close", "unlink", "mkdir", "rmdir"}

// growthOnce runs every growth workload once over n names in a new
// directory of fsys, in creation order or shuffled, and returns the CPU
// time each took. Stat and Open+Read+Close take the better of two
// passes, so that the first, which may build what later lookups use
// (mem's hash index of a large directory), counts as setup.
func growthOnce(fsys workload.FS, n int, random bool) (map[string]time.Duration, error) {
	defer fsys.Close()
	if err := fsys.Mkdir(fsys.Path("run")); err != nil {
		return nil, err
	}
	names := workload.Names(fsys, "run", "f", n)
	if random {
		r := rand.New(rand.NewPCG(uint64(n), 1))
		r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	}
	data := workload.Payload(smallSize)
	took := map[string]time.Duration{}
	timed := func(w string, passes int, op func() error) error {
		for range passes {
			start := cputime.Now()
			if err := op(); err != nil {
				return fmt.Errorf("%s: %w", w, err)
			}
			if d := cputime.Now() - start; took[w] == 0 || d < took[w] {
				took[w] = d
			}
		}
		return nil
	}
	steps := []struct {
		w      string
		passes int
		op     func() error
	}{
		{"create", 1, func() error { return workload.CreateAll(fsys, names, data) }},
		{"stat", 2, func() error { return workload.StatAll(fsys, names) }},
		{"open-read-close", 2, func() error { return workload.ReadAll(fsys, names, smallSize) }},
		{"unlink", 1, func() error { return workload.RemoveEach(fsys, names) }},
		{"mkdir", 1, func() error { return workload.MkdirEach(fsys, names) }},
		{"rmdir", 1, func() error { return workload.RemoveEach(fsys, names) }},
	}
	for _, s := range steps {
		if err := timed(s.w, s.passes, s.op); err != nil {
			return nil, err
		}
	}
	return took, nil
}
