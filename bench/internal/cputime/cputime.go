// Package cputime reads the CPU time the process spends (user and system,
// all threads, the garbage collector included), which a loaded, shared
// machine inflates much less than the elapsed time that ns/op reports.
// Benchmarks report it beside ns/op as cpu-ns per unit.
package cputime

import (
	"testing"
	"time"
)

// Clock is a point to measure CPU time from.
type Clock struct{ start time.Duration }

// Start returns a Clock started now.
func Start() Clock { return Clock{Now()} }

// Report adds the metric cpu-ns/unit: the CPU time since c started, per
// iteration and per unit. Use it only for benchmarks whose loop stops the
// timer for nothing: CPU time counts setup too.
func (c Clock) Report(b *testing.B, units int, unit string) {
	b.ReportMetric(float64((Now()-c.start).Nanoseconds())/(float64(b.N)*float64(units)), "cpu-ns/"+unit)
}
