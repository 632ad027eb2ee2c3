//go:build race

package conformance

// raceEnabled is set under the race detector, which makes the differential
// test, a single goroutine's work, ten times slower without finding more.
const raceEnabled = true
