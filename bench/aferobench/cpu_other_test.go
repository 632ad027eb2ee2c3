//go:build !unix

package aferobench

import (
	"testing"
	"time"
)

type cpuClock struct{}

func startCPU() cpuClock                        { return cpuClock{} }
func (cpuClock) report(*testing.B, int, string) {}

// cpuNow is 0 where the CPU time is not measured: -cputime needs Unix.
func cpuNow() time.Duration { return 0 }
