package conformance

import (
	"io/fs"
	"testing"
)

// TestReadOnlyDifferentialHost runs the read-only differential on os
// itself, which must show no divergence.
func TestReadOnlyDifferentialHost(t *testing.T) {
	var opts []Option
	if raceEnabled {
		opts = append(opts, WithSeeds(100)) // os against os: the suite's own check
	}
	RunReadOnlyDifferential(t, func(t *testing.T, dir string) fs.FS { return &hostFS{dir: dir} }, opts...)
}
