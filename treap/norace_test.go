//go:build !race

package treap

const raceEnabled = false
