package unionbench

import (
	"fmt"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer/mem"
)

// BenchmarkMounts mounts n layers, stats a file through each, and unmounts
// them, at n = 500, 2,000 and 8,000, as the C predecessor's category 10
// did (its table was quadratic: 8,000 mounts cost 17.7x what 2,000 did).
// Compare ns/mount across n: it should grow no faster than log n.
func BenchmarkMounts(b *testing.B) {
	site := mem.New()
	site.WriteFile("index.html", []byte("x"), 0o644)
	snap := site.Snapshot()
	for _, n := range []int{500, 2_000, 8_000} {
		u := packfs.New(mem.New())
		dirs := make([]string, n)
		files := make([]string, n)
		for i := range dirs {
			dirs[i] = fmt.Sprintf("m%05d", i)
			files[i] = dirs[i] + "/index.html"
			if err := u.Mkdir(dirs[i], 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for _, op := range []string{"mount", "resolve", "unmount"} {
			b.Run(fmt.Sprintf("op=%s/n=%d", op, n), func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					if op != "mount" {
						for _, d := range dirs {
							if err := u.Mount(d, snap); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.StartTimer()
					for i, d := range dirs {
						var err error
						switch op {
						case "mount":
							err = u.Mount(d, snap)
						case "resolve":
							_, err = u.Stat(files[i])
						case "unmount":
							err = u.Unmount(d)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					if op != "unmount" {
						for _, d := range dirs {
							if err := u.Unmount(d); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/mount")
			})
		}
	}
}
