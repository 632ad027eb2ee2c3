package storebench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/bench/internal/cputime"
	"github.com/packfs/packfs/bench/internal/workload"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// The store with SyncNone through the afero adapter beside afero's
// MemMapFs, on the small-file workloads of aferobench (20,000 files of
// 128 bytes; 8 goroutines × 4,000 create+read+unlink), and a 64 MiB
// sequential write in 64 KiB chunks beside os on the same place:
//
//	cd bench && go test -run '^$' -bench 'Afero|SeqWrite' -count 5 -benchtime 3x ./storebench/
const (
	nSmall    = 20_000
	smallSize = 128
	nWorkers  = 8
	perWorker = 4_000
)

type aferoBackend struct {
	name string
	new  func(tb testing.TB) afero.Fs
}

func aferoBackends() []aferoBackend {
	return []aferoBackend{
		{"store", func(tb testing.TB) afero.Fs {
			s, err := packfs.Open(tb.TempDir(), &packfs.Options{Sync: packfs.SyncNone})
			must(tb, err)
			tb.Cleanup(func() { s.Close() })
			return aferoadapter.New(s)
		}},
		// The adapter over the in-memory layer alone: what the store adds
		// over it is the difference.
		// The union over an empty upper layer, which the store is built
		// on: what the store's log and bookkeeping add is the difference.
		{"union", func(testing.TB) afero.Fs { return aferoadapter.New(packfs.New(mem.New())) }},
		{"mem", func(testing.TB) afero.Fs { return aferoadapter.New(mem.New()) }},
		{"memmapfs", func(testing.TB) afero.Fs { return afero.NewMemMapFs() }},
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// cpuTimer adds up the CPU time of the timed sections, for the metric
// cpu-ns/unit beside ns/unit: on a shared machine it is the steadier.
type cpuTimer struct{ spent, at time.Duration }

func (c *cpuTimer) start() { c.at = cputime.Now() }
func (c *cpuTimer) stop()  { c.spent += cputime.Now() - c.at }

func perUnit(b *testing.B, c *cpuTimer, units int, unit string) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(units)), "ns/"+unit)
	b.ReportMetric(float64(c.spent.Nanoseconds())/(float64(b.N)*float64(units)), "cpu-ns/"+unit)
}

func eachAfero(b *testing.B, f func(b *testing.B, be workload.FS)) {
	for _, bk := range aferoBackends() {
		b.Run("backend="+bk.name, func(b *testing.B) { f(b, workload.NewAfero(bk.new(b), "", "")) })
	}
}

func populated(b *testing.B, be workload.FS) []string {
	must(b, be.Mkdir(be.Path("run")))
	names := workload.Names(be, "run", "f", nSmall)
	must(b, workload.CreateAll(be, names, workload.Payload(smallSize)))
	return names
}

func BenchmarkAferoCreate(b *testing.B) {
	eachAfero(b, func(b *testing.B, be workload.FS) {
		run := be.Path("run")
		names := workload.Names(be, "run", "f", nSmall)
		data := workload.Payload(smallSize)
		var c cpuTimer
		for b.Loop() {
			b.StopTimer()
			must(b, be.RemoveAll(run))
			must(b, be.Mkdir(run))
			b.StartTimer()
			c.start()
			must(b, workload.CreateAll(be, names, data))
			c.stop()
		}
		perUnit(b, &c, nSmall, "file")
	})
}

func BenchmarkAferoRead(b *testing.B) {
	eachAfero(b, func(b *testing.B, be workload.FS) {
		names := populated(b, be)
		var c cpuTimer
		c.start()
		for b.Loop() {
			must(b, workload.ReadAll(be, names, smallSize))
		}
		c.stop()
		perUnit(b, &c, nSmall, "file")
	})
}

func BenchmarkAferoStat(b *testing.B) {
	eachAfero(b, func(b *testing.B, be workload.FS) {
		names := populated(b, be)
		var c cpuTimer
		c.start()
		for b.Loop() {
			must(b, workload.StatAll(be, names))
		}
		c.stop()
		perUnit(b, &c, nSmall, "file")
	})
}

func BenchmarkAferoUnlink(b *testing.B) {
	eachAfero(b, func(b *testing.B, be workload.FS) {
		must(b, be.Mkdir(be.Path("run")))
		names := workload.Names(be, "run", "f", nSmall)
		data := workload.Payload(smallSize)
		var c cpuTimer
		for b.Loop() {
			b.StopTimer()
			must(b, workload.CreateAll(be, names, data))
			b.StartTimer()
			c.start()
			must(b, workload.RemoveEach(be, names))
			c.stop()
		}
		perUnit(b, &c, nSmall, "file")
	})
}

func BenchmarkAferoRmdir(b *testing.B) {
	eachAfero(b, func(b *testing.B, be workload.FS) {
		must(b, be.Mkdir(be.Path("run")))
		names := workload.Names(be, "run", "d", nSmall)
		var c cpuTimer
		for b.Loop() {
			b.StopTimer()
			must(b, workload.MkdirEach(be, names))
			b.StartTimer()
			c.start()
			must(b, workload.RemoveEach(be, names))
			c.stop()
		}
		perUnit(b, &c, nSmall, "dir")
	})
}

func BenchmarkAferoConcurrent(b *testing.B) {
	eachAfero(b, func(b *testing.B, be workload.FS) {
		must(b, be.Mkdir(be.Path("run")))
		names := make([][]string, nWorkers)
		for g := range names {
			names[g] = workload.Names(be, "run", fmt.Sprintf("g%d-", g), perWorker)
		}
		data := workload.Payload(smallSize)
		var c cpuTimer
		c.start()
		for b.Loop() {
			must(b, workload.CreateReadRemove(be, names, data))
		}
		c.stop()
		perUnit(b, &c, nWorkers*perWorker, "file")
	})
}

// collect collects the garbage and waits for the cleanups it queued
// (the store's unmapping of its log), as far as a cleanup queued after
// them has run.
func collect() {
	done := make(chan struct{})
	p := new([64]byte)
	runtime.AddCleanup(p, func(c chan struct{}) { close(c) }, done)
	p = nil
	runtime.GC()
	debug.FreeOSMemory()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// BenchmarkSeqWrite writes one 64 MiB file in 64 KiB chunks, into the
// store (SyncNone, its log in a temporary directory) and with os into the
// same kind of directory, and closes it. The store's Close (which syncs)
// and the removal of the directory are not timed.
func BenchmarkSeqWrite(b *testing.B) {
	const size = 64 << 20
	chunk := workload.Payload(64 << 10)
	for _, name := range []string{"store", "os"} {
		b.Run("backend="+name, func(b *testing.B) {
			var c cpuTimer
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				var write func() error
				var closeFS func() error
				if name == "store" {
					s, err := packfs.Open(dir, &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
					must(b, err)
					write = func() error {
						f, err := s.Create("big")
						if err != nil {
							return err
						}
						for off := 0; off < size; off += len(chunk) {
							if _, err := f.Write(chunk); err != nil {
								return err
							}
						}
						return f.Close()
					}
					closeFS = s.Close
				} else {
					write = func() error {
						f, err := os.Create(dir + "/big")
						if err != nil {
							return err
						}
						for off := 0; off < size; off += len(chunk) {
							if _, err := f.Write(chunk); err != nil {
								return err
							}
						}
						return f.Close()
					}
					closeFS = func() error { return nil }
				}
				b.StartTimer()
				c.start()
				must(b, write())
				c.stop()
				b.StopTimer()
				must(b, closeFS())
				os.RemoveAll(dir)
				// The store's file is the log's mapped pages, which the
				// garbage collector unmaps: they are freed here, as
				// RemoveAll frees os's, not in the next timed run.
				collect()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/file")
			b.ReportMetric(float64(c.spent.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/file")
		})
	}
}
