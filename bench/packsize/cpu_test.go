//go:build unix

package packsize

import (
	"syscall"
	"testing"
	"time"
)

// cpuClock measures the CPU time (user and system, all threads, garbage
// collector included) the process spends, which a loaded, shared machine
// inflates much less than the elapsed time that ns/op reports.
type cpuClock struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{cpuNow()} }

// report adds the metric cpu-ns/unit. Use it only for benchmarks whose
// loop stops the timer for nothing: CPU time counts setup too.
func (c cpuClock) report(b *testing.B, units int, unit string) {
	b.ReportMetric(float64((cpuNow()-c.start).Nanoseconds())/(float64(b.N)*float64(units)), "cpu-ns/"+unit)
}
