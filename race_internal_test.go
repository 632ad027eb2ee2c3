//go:build race

package packfs

// raceOn is raceEnabled for the internal tests.
const raceOn = true
