//go:build unix

package cputime

import "testing"

// TestNowAdvances: spinning on the CPU shows in Now.
func TestNowAdvances(t *testing.T) {
	start := Now()
	if start <= 0 {
		t.Fatalf("Now() = %v, want the time spent so far", start)
	}
	x := 0
	for Now()-start <= 0 {
		for i := range 1 << 20 {
			x ^= i
		}
	}
	_ = x
}
