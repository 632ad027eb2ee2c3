//go:build !race

package aferoadapter_test

const raceEnabled = false
