package treap

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestOwnedRandom runs SetOwned and DeleteOwned against the model, moving
// to a new Owner now and then as a snapshot does; every map kept when its
// owner was left behind must come through the later edits unchanged.
func TestOwnedRandom(t *testing.T) {
	for _, cf := range configs {
		for seed := range seeds() {
			t.Run(fmt.Sprintf("%s/seed=%d", cf.name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				m, md := cf.make(), model(nil)
				owner := Owner(1)
				var kept []version
				for i := range 1500 {
					k := rng.IntN(300)
					switch r := rng.IntN(100); {
					case r < 55:
						v := rng.Int()
						m, md = m.SetOwned(owner, k, v), md.set(k, v)
					case r < 90:
						m, md = m.DeleteOwned(owner, k), md.delete(k)
					case r < 95:
						// A persistent edit in the middle of owned ones.
						v := rng.Int()
						m, md = m.Set(k, v), md.set(k, v)
					default:
						kept = append(kept, version{m, md})
						owner++
					}
					if i%100 == 0 {
						if err := verify(m, md, k); err != nil {
							t.Fatalf("op %d: %v", i, err)
						}
					}
				}
				if err := verify(m, md, 0); err != nil {
					t.Fatal(err)
				}
				for i, v := range kept {
					if err := verify(v.m, v.md, 0); err != nil {
						t.Fatalf("version %d, frozen by a new owner, changed: %v", i, err)
					}
				}
			})
		}
	}
}

// TestOwnedDisown reuses an Owner after Disown: the maps it froze stay as
// they were.
func TestOwnedDisown(t *testing.T) {
	m, md := NewOrdered[int, int](), model(nil)
	for i := range 200 {
		m, md = m.SetOwned(5, i, i), md.set(i, i)
	}
	m.Disown()
	old := m
	for i := range 200 {
		if i%3 == 0 {
			m = m.DeleteOwned(5, i)
		} else {
			m = m.SetOwned(5, i, -i)
		}
	}
	if err := verify(old, md, 7); err != nil {
		t.Fatalf("disowned map changed: %v", err)
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestOwnedOutOfRange edits with the reserved Owners: they own nothing,
// so the edits copy as Set and Delete do and leave the old map alone.
func TestOwnedOutOfRange(t *testing.T) {
	for _, o := range []Owner{0, MaxOwner + 1} {
		m, md := NewOrdered[int, int](), model(nil)
		for i := range 100 {
			m, md = m.SetOwned(o, i, i), md.set(i, i)
		}
		old := m
		m = m.DeleteOwned(o, 50).SetOwned(o, 7, -7)
		if err := verify(old, md, 50); err != nil {
			t.Errorf("Owner %d changed an old map: %v", o, err)
		}
		if err := verify(m, md.delete(50).set(7, -7), 7); err != nil {
			t.Errorf("Owner %d: %v", o, err)
		}
	}
}

// TestOwnedConcurrentReaders edits a map in place while readers look up
// and list it without locks. The writer adds and removes a run of keys
// in rounds, so that keys come back below nodes that slow readers reached
// before those nodes were unlinked. The keys it never touches must always
// be found, and every listing, forward, from a key and backward, must be
// strictly in order and hold each of them once. Run it with -race.
func TestOwnedConcurrentReaders(t *testing.T) {
	const stable, churn = 200, 200
	m := NewOrdered[string, int]()
	for i := range stable {
		m = m.SetOwned(1, fmt.Sprintf("s%04d", i), i)
	}
	var live atomic.Pointer[Map[string, int]]
	live.Store(&m)
	var stop atomic.Bool
	var wg sync.WaitGroup
	check := func(seq func(func(string, int) bool), desc bool, from string) error {
		prev, seen := "", 0
		for k := range seq {
			runtime.Gosched() // a slow reader, overtaken by whole rounds
			if prev != "" && (!desc && k <= prev || desc && k >= prev) {
				return fmt.Errorf("listing went from %s to %s", prev, k)
			}
			if k[0] == 's' && k > from {
				seen++
			}
			prev = k
		}
		want := stable
		if from != "" {
			fmt.Sscanf(from, "s%04d", &want)
			want = stable - want - 1
		}
		if seen != want {
			return fmt.Errorf("listing held %d untouched keys after %q, want %d", seen, from, want)
		}
		return nil
	}
	for r := range 2 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for i := 0; !stop.Load(); i++ {
				m := *live.Load()
				k := fmt.Sprintf("s%04d", rng.IntN(stable))
				if v, ok := m.Get(k); !ok || v < 0 {
					t.Errorf("Get(%s) = %d, %v during edits", k, v, ok)
					return
				}
				var err error
				switch i % 3 {
				case 0:
					err = check(m.All(), false, "")
				case 1:
					err = check(m.After(k), false, k)
				default:
					err = check(m.Backward(), true, "")
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(9, 9))
	owner := Owner(1)
	for i := range 40000 {
		m := *live.Load()
		switch {
		case i%10 == 0:
			k := rng.IntN(stable)
			m = m.SetOwned(owner, fmt.Sprintf("s%04d", k), k+stable*(i%7))
		case i/churn%2 == 0:
			m = m.SetOwned(owner, fmt.Sprintf("c%04d", i%churn), i)
		default:
			m = m.DeleteOwned(owner, fmt.Sprintf("c%04d", i%churn))
		}
		if rng.IntN(1000) == 0 {
			owner++
		}
		live.Store(&m)
	}
	stop.Store(true)
	wg.Wait()
	if err := live.Load().Check(); err != nil {
		t.Fatal(err)
	}
}

// TestOwnedAllocs checks that an edit on a path its Owner made allocates
// an expected O(1) nodes, where Set and Delete copy the path.
func TestOwnedAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under coverage or race")
	}
	m := NewOrdered[string, int]()
	names := make([]string, 20000)
	for i := range names {
		names[i] = fmt.Sprintf("f%06d", i)
		m = m.SetOwned(1, names[i], i)
	}
	i := 0
	owned := testing.AllocsPerRun(2000, func() {
		k := names[i%len(names)]
		i++
		m = m.DeleteOwned(1, k)
		m = m.SetOwned(1, k, i)
	})
	persistent := testing.AllocsPerRun(2000, func() {
		k := names[i%len(names)]
		i++
		m = m.Delete(k)
		m = m.Set(k, i)
	})
	t.Logf("delete+insert at 20,000 keys: %.1f allocs owned, %.1f persistent", owned, persistent)
	if owned > 6 {
		t.Errorf("owned delete+insert allocates %.1f nodes, want an expected O(1) (≤ 6)", owned)
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
}
