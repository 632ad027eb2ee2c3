//go:build unix

package storebench

import (
	"syscall"
	"time"
)

// cpuNow returns the CPU time (user and system, all threads, garbage
// collector included) the process has spent, which a loaded, shared
// machine inflates much less than the elapsed time that ns/op reports.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
