//go:build race

package fusefs_test

// raceEnabled: under -race the server runs several times slower, so the
// long runs take the quick trees and fewer sequences (the full sizes run
// without -race).
const raceEnabled = true
