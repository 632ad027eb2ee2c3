// Package aferobench compares, through afero's API, PackFS's afero
// adapter over the in-memory layer (aferoadapter.New(mem.New())) with
// afero's MemMapFs and afero's OsFs over a temporary directory, on the C
// predecessor's workload (bench/bench.c): 20,000 files of 128 bytes
// created, read, stat'ed, listed and removed; 8 goroutines creating,
// reading and removing 4,000 files each; 8 goroutines of 95% reads.
//
// Every afero backend runs the same code: memfsbench.Afero, which uses
// afero.Fs methods and afero.ReadFile, afero.WriteFile and afero.ReadDir.
// backend=mem-direct is the in-memory layer through its own API
// (memfsbench.Mem: mem.FS.ReadFile, ReadDir...), for what the adapter and
// afero's helpers add on top; backend=floor is an afero.Fs that keeps
// nothing and returns at once, for what afero's helpers cost alone.
//
//	cd bench && go test -run '^$' -bench . -count 3 -benchtime 3x ./aferobench/
package aferobench

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/bench/memfsbench"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

const (
	nSmall    = 20_000
	smallSize = 128
	nWorkers  = 8
	perWorker = 4_000
	mostlyOps = 20_000
	writePct  = 5
)

// osAfero is afero's OsFs used with absolute paths under root.
type osAfero struct {
	*memfsbench.Afero
	root string
}

func (o osAfero) Path(rel string) string { return o.root + "/" + rel }

type backend struct {
	name string
	new  func(tb testing.TB) memfsbench.Backend
}

func backends() []backend {
	return []backend{
		{"adapter", func(testing.TB) memfsbench.Backend {
			return &memfsbench.Afero{Fs: aferoadapter.New(mem.New())}
		}},
		{"memmapfs", func(testing.TB) memfsbench.Backend { return memfsbench.NewAfero() }},
		// The in-memory layer through its own API, without the adapter:
		// what the adapter adds is the difference.
		{"mem-direct", func(testing.TB) memfsbench.Backend { return memfsbench.NewMem() }},
		// What afero's own helpers cost over a file system that does
		// nothing (floor_test.go); it cannot list, so ReadDir skips it.
		{"floor", func(testing.TB) memfsbench.Backend { return &memfsbench.Afero{Fs: floorFs{}} }},
		{"osfs", func(tb testing.TB) memfsbench.Backend {
			dir := tb.TempDir()
			if d, err := os.MkdirTemp("/dev/shm", "aferobench-"); err == nil {
				tb.Cleanup(func() { os.RemoveAll(d) })
				dir = d
			}
			return osAfero{&memfsbench.Afero{Fs: afero.NewOsFs()}, dir}
		}},
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func perUnit(b *testing.B, units int, unit string) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*float64(units)), "ns/"+unit)
}

func populated(b *testing.B, bk backend) (memfsbench.Backend, []string) {
	be := bk.new(b)
	must(b, be.Mkdir(be.Path("run")))
	names := memfsbench.Names(be, "run", "f", nSmall)
	must(b, memfsbench.CreateAll(be, names, memfsbench.Payload(smallSize)))
	return be, names
}

func eachBackend(b *testing.B, f func(b *testing.B, bk backend)) {
	for _, bk := range backends() {
		if bk.name == "floor" && strings.HasPrefix(b.Name(), "BenchmarkReadDir") {
			continue
		}
		b.Run("backend="+bk.name, func(b *testing.B) { f(b, bk) })
	}
}

// BenchmarkCreate creates 20,000 files of 128 bytes in a fresh directory.
func BenchmarkCreate(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be := bk.new(b)
		run := be.Path("run")
		names := memfsbench.Names(be, "run", "f", nSmall)
		data := memfsbench.Payload(smallSize)
		for b.Loop() {
			b.StopTimer()
			must(b, be.RemoveAll(run))
			must(b, be.Mkdir(run))
			b.StartTimer()
			must(b, memfsbench.CreateAll(be, names, data))
		}
		perUnit(b, nSmall, "file")
	})
}

// BenchmarkRead reads each of 20,000 files (afero.ReadFile).
func BenchmarkRead(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be, names := populated(b, bk)
		cpu := startCPU()
		for b.Loop() {
			must(b, memfsbench.ReadAll(be, names, smallSize))
		}
		perUnit(b, nSmall, "file")
		cpu.report(b, nSmall, "file")
	})
}

// BenchmarkStat stats each of 20,000 files.
func BenchmarkStat(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be, names := populated(b, bk)
		cpu := startCPU()
		for b.Loop() {
			must(b, memfsbench.StatAll(be, names))
		}
		perUnit(b, nSmall, "file")
		cpu.report(b, nSmall, "file")
	})
}

// BenchmarkReadDir lists a directory of 20,000 files (afero.ReadDir).
func BenchmarkReadDir(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be, _ := populated(b, bk)
		run := be.Path("run")
		cpu := startCPU()
		for b.Loop() {
			n, err := be.ReadDir(run)
			must(b, err)
			if n != nSmall {
				b.Fatalf("listed %d entries, want %d", n, nSmall)
			}
		}
		perUnit(b, nSmall, "entry")
		cpu.report(b, nSmall, "entry")
	})
}

// BenchmarkRemove removes 20,000 files from one directory.
func BenchmarkRemove(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be := bk.new(b)
		must(b, be.Mkdir(be.Path("run")))
		names := memfsbench.Names(be, "run", "f", nSmall)
		data := memfsbench.Payload(smallSize)
		for b.Loop() {
			b.StopTimer()
			must(b, memfsbench.CreateAll(be, names, data))
			b.StartTimer()
			must(b, memfsbench.RemoveEach(be, names))
		}
		perUnit(b, nSmall, "file")
	})
}

// BenchmarkConcurrent runs 8 goroutines that each create, read and remove
// 4,000 files in one shared directory.
func BenchmarkConcurrent(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be := bk.new(b)
		must(b, be.Mkdir(be.Path("run")))
		names := make([][]string, nWorkers)
		for g := range names {
			names[g] = memfsbench.Names(be, "run", fmt.Sprintf("g%d-", g), perWorker)
		}
		data := memfsbench.Payload(smallSize)
		cpu := startCPU()
		for b.Loop() {
			must(b, memfsbench.CreateReadRemove(be, names, data))
		}
		perUnit(b, nWorkers*perWorker, "file")
		cpu.report(b, nWorkers*perWorker, "file")
	})
}

// BenchmarkReadMostly runs 8 goroutines of 20,000 operations over 20,000
// files: 95% afero.ReadFile, 5% afero.WriteFile.
func BenchmarkReadMostly(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be, names := populated(b, bk)
		data := memfsbench.Payload(smallSize)
		var seed uint64
		cpu := startCPU()
		for b.Loop() {
			seed++
			must(b, memfsbench.ReadMostly(be, names, data, nWorkers, mostlyOps, writePct, seed))
		}
		perUnit(b, nWorkers*mostlyOps, "access")
		cpu.report(b, nWorkers*mostlyOps, "access")
	})
}
