//go:build !race

package packreader_test

const raceEnabled = false
