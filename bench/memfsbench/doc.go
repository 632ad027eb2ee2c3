// Package memfsbench runs the workloads of the C predecessor's benchmark
// (bench/bench.c: 20,000 files of 128 bytes, 4,000 directories, sequential
// files of 1 to 64 MB in 64 KiB chunks, 8 concurrent workers) side by side
// on PackFS's in-memory layer (layer/mem), the host filesystem through
// package os (on the default temporary directory and on tmpfs), and afero's
// MemMapFs. It lives in the bench module so that afero stays out of the
// library. The benchmarks are in memfsbench_test.go:
//
//	cd bench && go test -run '^$' -bench . ./memfsbench/
//
// growth_test.go's BenchmarkGrowth is the complexity check: the cost per
// operation of each workload at 80,000 entries in one directory over its
// cost at 20,000, in creation order and in a random order, which fails
// for a backend of ours past 1.3x (run.sh leaves it out):
//
//	cd bench && go test -run '^$' -bench Growth -benchtime 5x ./memfsbench/
//
// run.sh runs them all, -count 5, with benchtimes that keep the run near
// ten minutes on two cores, into one file for benchstat -col /backend.
//
// The file systems and workloads are the benchmark runner's
// (bench/internal/workload), so every backend runs the same operations
// through its own idiomatic API: create is Create, Write, Close; read is
// ReadFile; stat is Stat; a listing is ReadDir (afero.ReadDir for afero);
// an overwrite is WriteFile.
package memfsbench
