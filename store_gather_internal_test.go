package packfs

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGatherWakes: a committer waiting in gather for commits on their way
// is woken by each one that arrives, parked in between, and never misses
// the last: with a bound of an hour and no wake-up at the bound, every
// wait must end by the arrivals alone (a lost one hangs the test).
func TestGatherWakes(t *testing.T) {
	s := &Store{gatherWake: make(chan struct{}, 1)}
	never := neverSleep(t)
	for round := range 200 {
		var n atomic.Int32
		want := int32(1 + round%8)
		var wg sync.WaitGroup
		for range want {
			wg.Go(func() {
				n.Add(1)
				s.arrived()
			})
		}
		s.waitArrivals(func() bool { return n.Load() >= want }, time.Hour, never)
		wg.Wait()
		if s.gathering.Load() {
			t.Fatal("gathering still set after the wait")
		}
	}
}

// TestGatherBound: a wait for commits that never come ends at its bound,
// woken by the kernel's timer; an arrival while nobody waits queues no
// wake-up.
func TestGatherBound(t *testing.T) {
	s := &Store{gatherWake: make(chan struct{}, 1)}
	s.arrived() // nobody waits: no wake-up is queued
	if len(s.gatherWake) != 0 {
		t.Fatal("an arrival with nobody waiting queued a wake-up")
	}
	asked := 0
	s.waitArrivals(func() bool { asked++; return false }, time.Millisecond, kernelSleep)
	if asked == 0 {
		t.Fatal("the wait never asked whether it was done")
	}
	if s.gathering.Load() {
		t.Fatal("gathering still set after the wait")
	}
	// A wake-up left queued (the bound's, after a wait that arrivals
	// ended) makes the next wait look again, and no more.
	s.gatherWake <- struct{}{}
	var n atomic.Int32
	go func() { n.Add(1); s.arrived() }()
	s.waitArrivals(func() bool { return n.Load() == 1 }, time.Hour, neverSleep(t))
}

// TestGatherSleepersBounded: while maxSleepers goroutines are asleep for
// earlier waits (a loaded machine wakes them late), a wait takes a Go
// timer instead of a thread more, and still ends at its bound.
func TestGatherSleepersBounded(t *testing.T) {
	s := &Store{gatherWake: make(chan struct{}, 1)}
	s.sleepers.Store(maxSleepers)
	for range 3 {
		s.waitArrivals(func() bool { return false }, time.Millisecond, func(time.Duration) {
			t.Error("a sleeper started past the bound")
		})
	}
	if n := s.sleepers.Load(); n != maxSleepers {
		t.Fatalf("%d sleepers counted after the waits, want %d", n, maxSleepers)
	}
}

// neverSleep returns a sleep that ends only when the test does: a wait
// given it ends by its arrivals alone.
func neverSleep(t *testing.T) func(time.Duration) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return func(time.Duration) { <-done }
}
