//go:build race

package mem

// raceEnabled shortens the randomized tests, which the race detector
// slows by an order of magnitude.
const raceEnabled = true
