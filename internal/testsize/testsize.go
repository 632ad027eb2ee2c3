// Package testsize says how much work a test of this project does. By
// default tests run their quick sizes, so that `go test ./...` finishes
// in about a minute on two cores; with PACKFS_LONG=1 in the environment
// (which .ci/run sets) the randomized, crash, fault and stress tests run
// their full sizes. -short always means the quick sizes.
package testsize

import (
	"flag"
	"os"
	"testing"
)

// Env is the environment variable that asks for the full sizes.
const Env = "PACKFS_LONG"

// Short reports whether a test should run its quick size: always under
// -short, and unless Env is "1". It may be called before flags are
// parsed (at package init), when only Env decides.
func Short() bool {
	if os.Getenv(Env) != "1" {
		return true
	}
	return testing.Testing() && flag.Parsed() && testing.Short()
}
