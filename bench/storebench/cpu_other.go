//go:build !unix

package storebench

import "time"

// cpuNow is not measured here: the CPU metrics read 0.
func cpuNow() time.Duration { return 0 }
