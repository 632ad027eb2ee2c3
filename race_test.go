//go:build race

package packfs_test

const raceEnabled = true
