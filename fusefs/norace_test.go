//go:build !race

package fusefs_test

const raceEnabled = false
