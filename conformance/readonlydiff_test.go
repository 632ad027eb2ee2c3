package conformance

import (
	"io/fs"
	"testing"
)

// TestReadOnlyDifferentialHost runs the read-only differential on os
// itself, which must show no divergence.
func TestReadOnlyDifferentialHost(t *testing.T) {
	RunReadOnlyDifferential(t, func(t *testing.T, dir string) fs.FS { return &hostFS{dir: dir} })
}
