package treap

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var benchSizes = []struct {
	name string
	n    int
}{{"20k", 20_000}, {"80k", 80_000}, {"1M", 1_000_000}}

// benchKeys returns the keys file%08d of 0, 2, 4, ... 2(n-1) (the map's
// keys are the even ones, absent keys the odd ones) and a shuffled order
// of indexes to probe them in.
func benchKeys(n int) (present, absent []string, order []int) {
	present = make([]string, n)
	absent = make([]string, n)
	for i := range n {
		present[i] = fmt.Sprintf("file%08d", 2*i)
		absent[i] = fmt.Sprintf("file%08d", 2*i+1)
	}
	order = rand.New(rand.NewPCG(1, 1)).Perm(n)
	return present, absent, order
}

func benchMap(keys []string) Map[string, int] {
	b := NewOrdered[string, int]().Builder()
	for i, k := range keys {
		b.Set(k, i)
	}
	return b.Map()
}

func BenchmarkMap(b *testing.B) {
	for _, size := range benchSizes {
		present, absent, order := benchKeys(size.n)
		m := benchMap(present)
		b.Run("Set/"+size.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				_ = m.Set(absent[order[i]], i)
				if i++; i == len(order) {
					i = 0
				}
			}
		})
		b.Run("SetExisting/"+size.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				_ = m.Set(present[order[i]], i)
				if i++; i == len(order) {
					i = 0
				}
			}
		})
		b.Run("Get/"+size.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, ok := m.Get(present[order[i]]); !ok {
					b.Fatal("missing")
				}
				if i++; i == len(order) {
					i = 0
				}
			}
		})
		b.Run("Delete/"+size.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				_ = m.Delete(present[order[i]])
				if i++; i == len(order) {
					i = 0
				}
			}
		})
		b.Run("Iterate/"+size.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				for range m.All() {
					n++
				}
				if n != size.n {
					b.Fatal(n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size.n), "ns/entry")
		})
		b.Run("BuilderSorted/"+size.name, func(b *testing.B) {
			for b.Loop() {
				benchMap(present)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size.n), "ns/entry")
		})
	}
}
