// Package dirfsbench compares dirfs with the alternatives a user would pick
// for the same job, in the same run: plain os (no containment) and os.Root
// (contained, Go 1.24+), plus dirfs through its os.Root fallback, on the
// default temporary directory and on tmpfs (/dev/shm). The targets
// (dirfs relative to os): Stat ≤ 1.5x, open+read ≤ 1.5x, create ≤ 1.5x,
// ReadDir of 20,000 entries ≤ 1.2x. BenchmarkStat stats a name two
// directories down; BenchmarkStatTop a name directly under the root.
//
// Run (keep it short on a shared machine):
//
//	cd bench
//	go test -run '^$' -bench 'Stat|OpenRead|Create' -count 3 -benchtime 10000x ./dirfsbench/
//	go test -run '^$' -bench 'ReadDir' -count 3 -benchtime 10x ./dirfsbench/
package dirfsbench
