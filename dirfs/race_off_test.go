//go:build !race

package dirfs_test

const raceEnabled = false
