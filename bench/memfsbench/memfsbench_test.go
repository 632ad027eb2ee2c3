package memfsbench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/packfs/packfs/bench/internal/workload"
)

// The C predecessor's parameters (bench/bench.c).
const (
	nSmall    = 20_000   // files in the metadata suite
	smallSize = 128      // bytes per small file
	nDirs     = 4_000    // directories for mkdir and rmdir
	chunkSize = 64 << 10 // sequential I/O chunk
	nWorkers  = 8        // concurrent goroutines
	perWorker = 4_000    // create+read+remove cycles per goroutine
	mostlyOps = 20_000   // read-mostly operations per goroutine
	writePct  = 5        // read-mostly: percent of operations that write
	memDirs   = 1_000    // memory: directories...
	memFiles  = 1_000    // ...of this many empty files each
)

var seqSizes = []struct {
	name string
	n    int
}{{"1MB", 1 << 20}, {"16MB", 16 << 20}, {"64MB", 64 << 20}}

// backend names a kind of file system and makes new, empty ones.
type backend struct {
	name string
	kind workload.Kind
	dir  string // os: where its temporary directories go ("": os.TempDir)
}

// backends lists mem, os (the default temporary directory), os-tmpfs (a
// directory under /dev/shm, when there is one) and afero (MemMapFs).
func backends() []backend {
	bs := []backend{
		{name: "mem", kind: workload.KindMem},
		{name: "os", kind: workload.KindOS},
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		bs = append(bs, backend{name: "os-tmpfs", kind: workload.KindOS, dir: "/dev/shm"})
	}
	return append(bs, backend{name: "afero", kind: workload.KindMemMapFs})
}

// new returns a new, empty backend, closed when tb ends; an os one is a
// temporary directory, which Close removes.
func (bk backend) new(tb testing.TB) workload.FS {
	var dir string
	switch {
	case !bk.kind.Host:
	case bk.dir == "":
		dir = tb.TempDir()
	default:
		var err error
		dir, err = os.MkdirTemp(bk.dir, "memfsbench-")
		must(tb, err)
	}
	be, err := bk.kind.New(dir)
	must(tb, err)
	tb.Cleanup(func() { be.Close() })
	return be
}

// osFixtures holds, per os backend, a directory of nSmall small files made
// once per process: on a disk, making one takes seconds, and Read, Stat,
// ReadDir and ReadMostly (which rewrites the same bytes) leave it as they
// found it. TestMain closes them, which removes them.
var osFixtures = map[string]workload.FS{}

// populated returns a backend whose directory run holds nSmall small files,
// and their names: a new one for an in-memory backend, the process's
// fixture for an os one.
func populated(b *testing.B, bk backend) (workload.FS, []string) {
	if !bk.kind.Host {
		be := bk.new(b)
		return be, populate(b, be, nSmall)
	}
	if be, ok := osFixtures[bk.name]; ok {
		return be, workload.Names(be, "run", "f", nSmall)
	}
	dir, err := os.MkdirTemp(bk.dir, "memfsbench-fixture-")
	must(b, err)
	be, err := bk.kind.New(dir)
	must(b, err)
	osFixtures[bk.name] = be
	return be, populate(b, be, nSmall)
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, be := range osFixtures {
		be.Close()
	}
	os.Exit(code)
}

// eachBackend runs f as the sub-benchmark backend=NAME on a new backend
// of every kind.
func eachBackend(b *testing.B, f func(b *testing.B, be workload.FS)) {
	for _, bk := range backends() {
		b.Run("backend="+bk.name, func(b *testing.B) { f(b, bk.new(b)) })
	}
}

// eachPopulated runs f as the sub-benchmark backend=NAME on a backend of
// every kind whose directory run holds nSmall small files (see populated).
func eachPopulated(b *testing.B, f func(b *testing.B, be workload.FS, names []string)) {
	for _, bk := range backends() {
		b.Run("backend="+bk.name, func(b *testing.B) {
			be, names := populated(b, bk)
			f(b, be, names)
		})
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// perUnit reports the time per unit, with units of them done per
// iteration, and the rate in units per second: "ns/file" and "files/s".
func perUnit(b *testing.B, units int, unit string) {
	total := float64(b.N) * float64(units)
	plural := unit + "s"
	switch unit {
	case "entry":
		plural = "entries"
	case "access":
		plural = "accesses"
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/"+unit)
	b.ReportMetric(total/b.Elapsed().Seconds(), plural+"/s")
}

// populate makes the directory run holding n small files and returns
// their names.
func populate(tb testing.TB, be workload.FS, n int) []string {
	must(tb, be.Mkdir(be.Path("run")))
	names := workload.Names(be, "run", "f", n)
	must(tb, workload.CreateAll(be, names, workload.Payload(smallSize)))
	return names
}

// BenchmarkCreate creates n files of 128 bytes (Create, Write, Close) in
// one fresh directory per iteration: 20,000 on every backend and 320,000
// on the in-memory ones, for the scaling of the per-file cost.
func BenchmarkCreate(b *testing.B) {
	for _, n := range []int{nSmall, 16 * nSmall} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for _, bk := range backends() {
				if bk.kind.Host && n > nSmall {
					continue
				}
				b.Run("backend="+bk.name, func(b *testing.B) {
					be := bk.new(b)
					run := be.Path("run")
					names := workload.Names(be, "run", "f", n)
					data := workload.Payload(smallSize)
					for b.Loop() {
						b.StopTimer()
						must(b, be.RemoveAll(run))
						must(b, be.Mkdir(run))
						b.StartTimer()
						must(b, workload.CreateAll(be, names, data))
					}
					perUnit(b, n, "file")
				})
			}
		})
	}
}

// BenchmarkRead reads each of 20,000 files of 128 bytes (ReadFile).
func BenchmarkRead(b *testing.B) {
	eachPopulated(b, func(b *testing.B, be workload.FS, names []string) {
		b.SetBytes(nSmall * smallSize)
		for b.Loop() {
			must(b, workload.ReadAll(be, names, smallSize))
		}
		perUnit(b, nSmall, "file")
	})
}

// BenchmarkStat stats each of 20,000 files.
func BenchmarkStat(b *testing.B) {
	eachPopulated(b, func(b *testing.B, be workload.FS, names []string) {
		for b.Loop() {
			must(b, workload.StatAll(be, names))
		}
		perUnit(b, nSmall, "file")
	})
}

// BenchmarkReadDir lists a directory of 20,000 files, whole, once per
// iteration.
func BenchmarkReadDir(b *testing.B) {
	eachPopulated(b, func(b *testing.B, be workload.FS, _ []string) {
		run := be.Path("run")
		for b.Loop() {
			n, err := be.ReadDir(run)
			must(b, err)
			if n != nSmall {
				b.Fatalf("listed %d entries, want %d", n, nSmall)
			}
		}
		perUnit(b, nSmall, "entry")
	})
}

// BenchmarkRemove removes 20,000 files of 128 bytes from one directory.
func BenchmarkRemove(b *testing.B) {
	eachBackend(b, func(b *testing.B, be workload.FS) {
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

// BenchmarkMkdir makes 4,000 directories in one fresh directory.
func BenchmarkMkdir(b *testing.B) {
	eachBackend(b, func(b *testing.B, be workload.FS) {
		run := be.Path("run")
		names := workload.Names(be, "run", "d", nDirs)
		for b.Loop() {
			b.StopTimer()
			must(b, be.RemoveAll(run))
			must(b, be.Mkdir(run))
			b.StartTimer()
			must(b, workload.MkdirEach(be, names))
		}
		perUnit(b, nDirs, "dir")
	})
}

// BenchmarkRmdir removes 4,000 empty directories from one directory.
func BenchmarkRmdir(b *testing.B) {
	eachBackend(b, func(b *testing.B, be workload.FS) {
		must(b, be.Mkdir(be.Path("run")))
		names := workload.Names(be, "run", "d", nDirs)
		for b.Loop() {
			b.StopTimer()
			must(b, workload.MkdirEach(be, names))
			b.StartTimer()
			must(b, workload.RemoveEach(be, names))
		}
		perUnit(b, nDirs, "dir")
	})
}

// BenchmarkSeqWrite rewrites a file of 1, 16 or 64 MB (Create, which
// truncates, then 64 KiB writes, then Close) that was already written
// once: the steady state.
func BenchmarkSeqWrite(b *testing.B) {
	chunk := workload.Payload(chunkSize)
	for _, sz := range seqSizes {
		b.Run("size="+sz.name, func(b *testing.B) {
			eachBackend(b, func(b *testing.B, be workload.FS) {
				name := be.Path("big")
				must(b, workload.SeqWrite(be, name, sz.n, chunk))
				b.SetBytes(int64(sz.n))
				for b.Loop() {
					must(b, workload.SeqWrite(be, name, sz.n, chunk))
				}
			})
		})
	}
}

// BenchmarkSeqWrite64MBFirstTouch writes a 64 MB file in 64 KiB chunks
// into a brand-new backend (mem, afero: a new FS; os: a new directory, the
// previous file removed) per iteration. mode=fresh leaves the previous
// iteration's memory to the garbage collector, which Go may reuse;
// mode=freeosmem calls debug.FreeOSMemory before the timed part, so that
// the heap must take fresh pages from the kernel.
func BenchmarkSeqWrite64MBFirstTouch(b *testing.B) {
	const size = 64 << 20
	chunk := workload.Payload(chunkSize)
	for _, mode := range []string{"fresh", "freeosmem"} {
		b.Run("mode="+mode, func(b *testing.B) {
			for _, bk := range backends() {
				b.Run("backend="+bk.name, func(b *testing.B) {
					b.SetBytes(size)
					var be workload.FS
					for b.Loop() {
						b.StopTimer()
						if be != nil {
							must(b, be.RemoveAll(be.Path("big")))
						}
						be = bk.new(b)
						if mode == "freeosmem" {
							debug.FreeOSMemory()
						}
						b.StartTimer()
						must(b, workload.SeqWrite(be, be.Path("big"), size, chunk))
					}
				})
			}
		})
	}
}

// BenchmarkSeqRead reads a file of 1, 16 or 64 MB in 64 KiB chunks (Open,
// Read to the end, Close).
func BenchmarkSeqRead(b *testing.B) {
	chunk := workload.Payload(chunkSize)
	for _, sz := range seqSizes {
		b.Run("size="+sz.name, func(b *testing.B) {
			eachBackend(b, func(b *testing.B, be workload.FS) {
				name := be.Path("big")
				must(b, workload.SeqWrite(be, name, sz.n, chunk))
				buf := make([]byte, chunkSize)
				b.SetBytes(int64(sz.n))
				for b.Loop() {
					must(b, workload.SeqRead(be, name, sz.n, buf))
				}
			})
		})
	}
}

// BenchmarkConcurrent runs 8 goroutines that each create, read and remove
// 4,000 files of 128 bytes, one after the other, in one shared directory.
// ns/file is per create+read+remove cycle; ops/s counts each of the three
// as one operation, as the C benchmark did.
func BenchmarkConcurrent(b *testing.B) {
	eachBackend(b, func(b *testing.B, be workload.FS) {
		must(b, be.Mkdir(be.Path("run")))
		names := make([][]string, nWorkers)
		for g := range names {
			names[g] = workload.Names(be, "run", fmt.Sprintf("g%d-", g), perWorker)
		}
		data := workload.Payload(smallSize)
		for b.Loop() {
			must(b, workload.CreateReadRemove(be, names, data))
		}
		files := float64(b.N) * nWorkers * perWorker
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/files, "ns/file")
		b.ReportMetric(3*files/b.Elapsed().Seconds(), "ops/s")
	})
}

// BenchmarkReadMostly runs 8 goroutines of 20,000 operations each over
// 20,000 files of 128 bytes: 95% read a random file (ReadFile), 5%
// overwrite one (WriteFile).
func BenchmarkReadMostly(b *testing.B) {
	eachPopulated(b, func(b *testing.B, be workload.FS, names []string) {
		data := workload.Payload(smallSize)
		var seed uint64
		for b.Loop() {
			seed++
			must(b, workload.ReadMostly(be, names, data, nWorkers, mostlyOps, writePct, seed))
		}
		perUnit(b, nWorkers*mostlyOps, "access")
	})
}

// BenchmarkMemory creates 1,000,000 empty files (Create, Close) in 1,000
// directories of 1,000 and reports the live heap they take, per file:
// HeapAlloc after a GC, before and after. In-memory backends only.
func BenchmarkMemory(b *testing.B) {
	for _, bk := range backends() {
		if bk.kind.Host {
			continue
		}
		b.Run("backend="+bk.name, func(b *testing.B) {
			var heap int64
			for b.Loop() {
				b.StopTimer()
				be := bk.new(b)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				must(b, workload.CreateEmptyTree(be, memDirs, memFiles))
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(be)
				heap += int64(after.HeapAlloc) - int64(before.HeapAlloc)
				b.StartTimer()
			}
			b.ReportMetric(float64(heap)/float64(b.N*memDirs*memFiles), "B/file")
			perUnit(b, memDirs*memFiles, "file")
		})
	}
}

// TestWorkloads runs every workload once, small, on every backend, so that
// a broken backend fails here and not halfway through a benchmark run. It
// checks results, never times.
func TestWorkloads(t *testing.T) {
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.new(t)
			data := workload.Payload(smallSize)
			names := populate(t, be, 100)
			must(t, workload.ReadAll(be, names, smallSize))
			must(t, workload.StatAll(be, names))
			if n, err := be.ReadDir(be.Path("run")); err != nil || n != 100 {
				t.Fatalf("ReadDir: %d entries, %v", n, err)
			}
			must(t, workload.ReadMostly(be, names, data, 4, 200, 50, 1))
			must(t, workload.ReadAll(be, names, smallSize))
			must(t, workload.RemoveEach(be, names))
			if n, err := be.ReadDir(be.Path("run")); err != nil || n != 0 {
				t.Fatalf("ReadDir after remove: %d entries, %v", n, err)
			}

			dirs := workload.Names(be, "run", "d", 50)
			must(t, workload.MkdirEach(be, dirs))
			must(t, workload.RemoveEach(be, dirs))

			cr := make([][]string, 4)
			for g := range cr {
				cr[g] = workload.Names(be, "run", fmt.Sprintf("g%d-", g), 50)
			}
			must(t, workload.CreateReadRemove(be, cr, data))

			chunk := workload.Payload(chunkSize)
			for _, size := range []int{0, 1, chunkSize, 3*chunkSize + 17} {
				must(t, workload.SeqWrite(be, be.Path("big"), size, chunk))
				must(t, workload.SeqRead(be, be.Path("big"), size, make([]byte, chunkSize)))
			}

			must(t, be.Mkdir(be.Path("tree")))
			tree := &prefixed{be, "tree/"}
			must(t, workload.CreateEmptyTree(tree, 3, 5))
			if n, err := be.ReadDir(be.Path("tree/d2")); err != nil || n != 5 {
				t.Fatalf("ReadDir tree/d2: %d entries, %v", n, err)
			}
			must(t, be.RemoveAll(be.Path("run")))
			if err := be.Stat(be.Path("run")); !os.IsNotExist(err) {
				t.Fatalf("Stat after RemoveAll: %v", err)
			}
		})
	}
}

// prefixed roots a backend's Path in a subdirectory.
type prefixed struct {
	workload.FS
	prefix string
}

func (p *prefixed) Path(rel string) string { return p.FS.Path(p.prefix + rel) }
