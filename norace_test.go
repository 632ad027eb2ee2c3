//go:build !race

package packfs_test

const raceEnabled = false
