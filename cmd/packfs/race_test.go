//go:build race

package main

// raceEnabled reports a -race build: the largest trees are then left to
// the conformance suite, and skipped by the slower tests that repeat it.
const raceEnabled = true
