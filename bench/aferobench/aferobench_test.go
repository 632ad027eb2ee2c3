// Package aferobench compares, through afero's API, PackFS's afero
// adapter over the in-memory layer (aferoadapter.New(mem.New())) with
// afero's MemMapFs and afero's OsFs over a temporary directory, on the C
// predecessor's workload (bench/bench.c): 20,000 files of 128 bytes
// created, read, stat'ed, listed and removed; 8 goroutines creating,
// reading and removing 4,000 files each; 8 goroutines of 95% reads.
//
// Every afero backend runs the same code, the benchmark runner's afero
// wrapper (bench/internal/workload), which uses afero.Fs methods and
// afero.ReadFile, afero.WriteFile and afero.ReadDir. backend=mem-direct is
// the in-memory layer through its own API (workload.KindMem:
// mem.FS.ReadFile, ReadDir...), for what the adapter and afero's helpers
// add on top; backend=floor is an afero.Fs that keeps nothing and returns
// at once, for what afero's helpers cost alone.
//
//	cd bench && go test -run '^$' -bench . -count 3 -benchtime 3x ./aferobench/
package aferobench

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/packfs/packfs/bench/internal/cputime"
	"github.com/packfs/packfs/bench/internal/workload"
)

const (
	nSmall    = 20_000
	smallSize = 128
	nWorkers  = 8
	perWorker = 4_000
	mostlyOps = 20_000
	writePct  = 5
)

type backend struct {
	name string
	kind workload.Kind
}

func backends() []backend {
	return []backend{
		{"adapter", workload.KindAdapter},
		{"memmapfs", workload.KindMemMapFs},
		// The in-memory layer through its own API, without the adapter:
		// what the adapter adds is the difference.
		{"mem-direct", workload.KindMem},
		// What afero's own helpers cost over a file system that does
		// nothing (workload.KindFloor); it cannot list, so ReadDir skips it.
		{"floor", workload.KindFloor},
		// afero's OsFs with absolute paths under a temporary directory,
		// on tmpfs when there is one.
		{"osfs", workload.KindOsFs},
	}
}

// new returns a new, empty file system, closed (a host one removed) when
// tb ends.
func (bk backend) new(tb testing.TB) workload.FS {
	var dir string
	if bk.kind.Host {
		var err error
		if dir, err = os.MkdirTemp("/dev/shm", "aferobench-"); err != nil {
			dir = tb.TempDir()
		}
	}
	be, err := bk.kind.New(dir)
	must(tb, err)
	tb.Cleanup(func() { be.Close() })
	return be
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

func populated(b *testing.B, bk backend) (workload.FS, []string) {
	be := bk.new(b)
	must(b, be.Mkdir(be.Path("run")))
	names := workload.Names(be, "run", "f", nSmall)
	must(b, workload.CreateAll(be, names, workload.Payload(smallSize)))
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
		names := workload.Names(be, "run", "f", nSmall)
		data := workload.Payload(smallSize)
		for b.Loop() {
			b.StopTimer()
			must(b, be.RemoveAll(run))
			must(b, be.Mkdir(run))
			b.StartTimer()
			must(b, workload.CreateAll(be, names, data))
		}
		perUnit(b, nSmall, "file")
	})
}

// BenchmarkRead reads each of 20,000 files (afero.ReadFile).
func BenchmarkRead(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be, names := populated(b, bk)
		cpu := cputime.Start()
		for b.Loop() {
			must(b, workload.ReadAll(be, names, smallSize))
		}
		perUnit(b, nSmall, "file")
		cpu.Report(b, nSmall, "file")
	})
}

// BenchmarkStat stats each of 20,000 files.
func BenchmarkStat(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be, names := populated(b, bk)
		cpu := cputime.Start()
		for b.Loop() {
			must(b, workload.StatAll(be, names))
		}
		perUnit(b, nSmall, "file")
		cpu.Report(b, nSmall, "file")
	})
}

// BenchmarkReadDir lists a directory of 20,000 files (afero.ReadDir).
func BenchmarkReadDir(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be, _ := populated(b, bk)
		run := be.Path("run")
		cpu := cputime.Start()
		for b.Loop() {
			n, err := be.ReadDir(run)
			must(b, err)
			if n != nSmall {
				b.Fatalf("listed %d entries, want %d", n, nSmall)
			}
		}
		perUnit(b, nSmall, "entry")
		cpu.Report(b, nSmall, "entry")
	})
}

// BenchmarkRemove removes 20,000 files from one directory.
func BenchmarkRemove(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be := bk.new(b)
		must(b, be.Mkdir(be.Path("run")))
		names := workload.Names(be, "run", "f", nSmall)
		data := workload.Payload(smallSize)
		for b.Loop() {
			b.StopTimer()
			must(b, workload.CreateAll(be, names, data))
			b.StartTimer()
			must(b, workload.RemoveEach(be, names))
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
			names[g] = workload.Names(be, "run", fmt.Sprintf("g%d-", g), perWorker)
		}
		data := workload.Payload(smallSize)
		cpu := cputime.Start()
		for b.Loop() {
			must(b, workload.CreateReadRemove(be, names, data))
		}
		perUnit(b, nWorkers*perWorker, "file")
		cpu.Report(b, nWorkers*perWorker, "file")
	})
}

// BenchmarkReadMostly runs 8 goroutines of 20,000 operations over 20,000
// files: 95% afero.ReadFile, 5% afero.WriteFile.
func BenchmarkReadMostly(b *testing.B) {
	eachBackend(b, func(b *testing.B, bk backend) {
		be, names := populated(b, bk)
		data := workload.Payload(smallSize)
		var seed uint64
		cpu := cputime.Start()
		for b.Loop() {
			seed++
			must(b, workload.ReadMostly(be, names, data, nWorkers, mostlyOps, writePct, seed))
		}
		perUnit(b, nWorkers*mostlyOps, "access")
		cpu.Report(b, nWorkers*mostlyOps, "access")
	})
}
