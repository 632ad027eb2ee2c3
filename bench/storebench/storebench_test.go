package storebench

import (
	"fmt"
	"slices"
	"testing"
)

// report runs one workload per iteration in a fresh directory and reports
// its medians' inputs as metrics: transactions per second, syncs and host
// bytes per transaction.
func report(b *testing.B, run func(dir string) (Result, error)) {
	b.Helper()
	var tx, syncs, bytes, ckpt, cpu, ckSyncs float64
	for range b.N {
		r, err := run(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		tx += r.TxPerSec()
		syncs += r.SyncsPerTx()
		bytes += r.BytesPerTx()
		cpu += r.CPUPerTx()
		ckSyncs += float64(r.CheckpointSyncs) / float64(r.Tx)
		ckpt += float64(r.Checkpoint.Microseconds()) / 1000
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(tx/n, "tx/s")
	b.ReportMetric(cpu/n, "cpu-µs/tx")
	if syncs >= 0 {
		b.ReportMetric(syncs/n, "syncs/tx")
		b.ReportMetric(bytes/n, "B/tx")
		b.ReportMetric(ckSyncs/n, "ckpt-syncs/tx")
	}
	if ckpt > 0 {
		b.ReportMetric(ckpt/n, "ckpt-ms")
	}
}

// BenchmarkSingleKey: 128 durable single-key transactions of a 128-byte
// value over 4,096, 16,384 and 65,536 existing files, hot-prefix and
// uniform keys, on PackFS, bbolt and the raw fdatasync floor, with one
// committer and with eight.
func BenchmarkSingleKey(b *testing.B) {
	for _, files := range []int{4096, 16384, 65536} {
		for _, hot := range []bool{true, false} {
			keys := "uniform"
			if hot {
				keys = "hot"
			}
			for _, w := range []int{1, 8} {
				name := fmt.Sprintf("files=%d/%s/committers=%d", files, keys, w)
				b.Run(name+"/packfs", func(b *testing.B) {
					report(b, func(dir string) (Result, error) { return PackFSSingleKey(dir, files, 128, w, hot) })
				})
				b.Run(name+"/bbolt", func(b *testing.B) {
					report(b, func(dir string) (Result, error) { return BoltSingleKey(dir, files, 128, w, hot) })
				})
			}
		}
	}
	b.Run("raw-fdatasync", func(b *testing.B) {
		report(b, func(dir string) (Result, error) { return RawFsync(dir, 128) })
	})
}

// BenchmarkMultiKey: 64 transactions of 128 new keys each.
func BenchmarkMultiKey(b *testing.B) {
	b.Run("packfs", func(b *testing.B) {
		report(b, func(dir string) (Result, error) { return PackFSMultiKey(dir, 64, 128) })
	})
	b.Run("bbolt", func(b *testing.B) {
		report(b, func(dir string) (Result, error) { return BoltMultiKey(dir, 64, 128) })
	})
	// Both in each iteration, one after the other, so that the disk's
	// swings fall on both alike: x-bbolt is PackFS's rate over bbolt's,
	// the median of the iterations' ratios.
	b.Run("ratio", func(b *testing.B) {
		ratios(b, "x-bbolt",
			func(dir string) (Result, error) { return PackFSMultiKey(dir, 64, 128) },
			func(dir string) (Result, error) { return BoltMultiKey(dir, 64, 128) })
	})
}

// BenchmarkCommitters: eight committers' rate over one committer's, on
// the single-key workload over 4,096 files with hot keys, both in each
// iteration (the median of the iterations' ratios); and each beside
// bbolt's with as many committers.
func BenchmarkCommitters(b *testing.B) {
	single := func(w int) func(string) (Result, error) {
		return func(dir string) (Result, error) { return PackFSSingleKey(dir, 4096, 128, w, true) }
	}
	bolt := func(w int) func(string) (Result, error) {
		return func(dir string) (Result, error) { return BoltSingleKey(dir, 4096, 128, w, true) }
	}
	b.Run("8-over-1", func(b *testing.B) { ratios(b, "x-one-committer", single(8), single(1)) })
	b.Run("1-vs-bbolt", func(b *testing.B) { ratios(b, "x-bbolt", single(1), bolt(1)) })
	b.Run("8-vs-bbolt", func(b *testing.B) { ratios(b, "x-bbolt", single(8), bolt(8)) })
}

// ratios runs ours and theirs one after the other in each iteration and
// reports the median of ours' rate over theirs', and each one's median
// rate.
func ratios(b *testing.B, unit string, ours, theirs func(dir string) (Result, error)) {
	b.Helper()
	var rs, a, t []float64
	for range b.N {
		ro, err := ours(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		rt, err := theirs(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, ro.TxPerSec()/rt.TxPerSec())
		a = append(a, ro.TxPerSec())
		t = append(t, rt.TxPerSec())
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(median(rs), unit)
	b.ReportMetric(median(a), "tx/s")
	b.ReportMetric(median(t), "their-tx/s")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkRecovery: reopening a store whose log holds about 100 MB.
func BenchmarkRecovery(b *testing.B) {
	var ms, mb float64
	for range b.N {
		d, size, err := Recovery(b.TempDir(), 100<<20)
		if err != nil {
			b.Fatal(err)
		}
		ms += float64(d.Microseconds()) / 1000
		mb = float64(size) / 1e6
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms/float64(b.N), "open-ms")
	b.ReportMetric(mb, "log-MB")
}

// TestWorkloads runs each workload small, to keep them working.
func TestWorkloads(t *testing.T) {
	for name, run := range map[string]func(dir string) (Result, error){
		"packfs-single": func(d string) (Result, error) { return PackFSSingleKey(d, 64, 4, 2, false) },
		"bbolt-single":  func(d string) (Result, error) { return BoltSingleKey(d, 64, 4, 2, true) },
		"packfs-multi":  func(d string) (Result, error) { return PackFSMultiKey(d, 2, 8) },
		"bbolt-multi":   func(d string) (Result, error) { return BoltMultiKey(d, 2, 8) },
		"raw":           func(d string) (Result, error) { return RawFsync(d, 4) },
	} {
		r, err := run(t.TempDir())
		if err != nil || r.Tx == 0 {
			t.Fatalf("%s: %+v, %v", name, r, err)
		}
	}
	if d, size, err := Recovery(t.TempDir(), 1<<20); err != nil || d <= 0 || size < 1<<20 {
		t.Fatalf("recovery: %v, %d bytes, %v", d, size, err)
	}
}
