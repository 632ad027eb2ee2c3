package treapbench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/immutable"
	iradix "github.com/hashicorp/go-immutable-radix/v2"
	"github.com/packfs/packfs/treap"
)

var sizes = []struct {
	name string
	n    int
}{{"20k", 20_000}, {"80k", 80_000}, {"1M", 1_000_000}}

// keys holds the keys of one size: the map holds file%08d of the even
// numbers below 2n; absent are the odd ones; order is a shuffled order of
// indexes to visit them in.
type keys struct {
	present, absent   []string
	presentB, absentB [][]byte
	order             []int
}

func makeKeys(n int) *keys {
	k := &keys{present: make([]string, n), absent: make([]string, n), presentB: make([][]byte, n), absentB: make([][]byte, n)}
	for i := range n {
		k.present[i] = fmt.Sprintf("file%08d", 2*i)
		k.absent[i] = fmt.Sprintf("file%08d", 2*i+1)
		k.presentB[i] = []byte(k.present[i])
		k.absentB[i] = []byte(k.absent[i])
	}
	k.order = rand.New(rand.NewPCG(1, 1)).Perm(n)
	return k
}

// stringComparer is the fastest comparer SortedMap can be given for
// strings (its default one converts both keys to interfaces).
type stringComparer struct{}

func (stringComparer) Compare(a, b string) int { return strings.Compare(a, b) }

func buildTreap(keys []string) treap.Map[string, int] {
	b := treap.NewOrdered[string, int]().Builder()
	for i, k := range keys {
		b.Set(k, i)
	}
	return b.Map()
}

func buildSorted(keys []string) *immutable.SortedMap[string, int] {
	b := immutable.NewSortedMapBuilder[string, int](stringComparer{})
	for i, k := range keys {
		b.Set(k, i)
	}
	return b.Map()
}

func buildRadix(keys [][]byte) *iradix.Tree[int] {
	txn := iradix.New[int]().Txn()
	for i, k := range keys {
		txn.Insert(k, i)
	}
	return txn.Commit()
}

// loop runs f(i) for b.Loop iterations with i cycling through 0..n-1.
func loop(b *testing.B, n int, f func(i int)) {
	i := 0
	for b.Loop() {
		f(i)
		if i++; i == n {
			i = 0
		}
	}
}

// BenchmarkOps runs each operation on each structure in turn, so that the
// three are measured under the same conditions. Each size's keys and maps
// are built on first use, so that -bench filters skip the others.
func BenchmarkOps(b *testing.B) {
	for _, size := range sizes {
		var (
			k  *keys
			tm treap.Map[string, int]
			sm *immutable.SortedMap[string, int]
			rt *iradix.Tree[int]
		)
		setup := sync.OnceFunc(func() {
			k = makeKeys(size.n)
			tm = buildTreap(k.present)
			sm = buildSorted(k.present)
			rt = buildRadix(k.presentB)
		})
		run := func(op string, t, s, r func(i int)) {
			for _, st := range []struct {
				name string
				f    func(i int)
			}{{"treap", t}, {"sortedmap", s}, {"iradix", r}} {
				b.Run(op+"/"+size.name+"/"+st.name, func(b *testing.B) {
					setup()
					runtime.GC()
					loop(b, size.n, st.f)
				})
			}
		}
		run("Set",
			func(i int) { _ = tm.Set(k.absent[k.order[i]], i) },
			func(i int) { _ = sm.Set(k.absent[k.order[i]], i) },
			func(i int) { _, _, _ = rt.Insert(k.absentB[k.order[i]], i) })
		run("Get",
			func(i int) { _, _ = tm.Get(k.present[k.order[i]]) },
			func(i int) { _, _ = sm.Get(k.present[k.order[i]]) },
			func(i int) { _, _ = rt.Get(k.presentB[k.order[i]]) })
		run("Delete",
			func(i int) { _ = tm.Delete(k.present[k.order[i]]) },
			func(i int) { _ = sm.Delete(k.present[k.order[i]]) },
			func(i int) { _, _, _ = rt.Delete(k.presentB[k.order[i]]) })
		n := 0
		run("Iterate",
			func(int) {
				for _, v := range tm.All() {
					n += v
				}
			},
			func(int) {
				it := sm.Iterator()
				for !it.Done() {
					_, v, _ := it.Next()
					n += v
				}
			},
			func(int) {
				it := rt.Root().Iterator()
				for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
					n += v
				}
			})
	}
}

// BenchmarkHeap reports the heap bytes per entry of a 1M-entry map built
// by each structure's builder from sorted keys (key bytes excluded: all
// three share the caller's keys).
func BenchmarkHeap(b *testing.B) {
	const n = 1_000_000
	k := makeKeys(n)
	heap := func(b *testing.B, build func() any) {
		var total float64
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			m := build()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(m)
			total += float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		}
		b.ReportMetric(total/float64(b.N), "B/entry")
	}
	b.Run("treap", func(b *testing.B) { heap(b, func() any { return buildTreap(k.present) }) })
	b.Run("sortedmap", func(b *testing.B) { heap(b, func() any { return buildSorted(k.present) }) })
	b.Run("iradix", func(b *testing.B) { heap(b, func() any { return buildRadix(k.presentB) }) })
}

// BenchmarkPaired measures treap against SortedMap on the same operation
// in alternating batches, so that the noise of a shared machine falls on
// both alike; it reports each one's ns/op and their ratio.
func BenchmarkPaired(b *testing.B) {
	for _, size := range sizes[:2] {
		k := makeKeys(size.n)
		tm := buildTreap(k.present)
		sm := buildSorted(k.present)
		ops := []struct {
			name string
			t, s func(i int)
		}{
			{"Set", func(i int) { _ = tm.Set(k.absent[k.order[i]], i) }, func(i int) { _ = sm.Set(k.absent[k.order[i]], i) }},
			{"Get", func(i int) { _, _ = tm.Get(k.present[k.order[i]]) }, func(i int) { _, _ = sm.Get(k.present[k.order[i]]) }},
			{"Delete", func(i int) { _ = tm.Delete(k.present[k.order[i]]) }, func(i int) { _ = sm.Delete(k.present[k.order[i]]) }},
		}
		for _, op := range ops {
			b.Run(op.name+"/"+size.name, func(b *testing.B) {
				const batch = 1000
				var dt, ds time.Duration
				i, n := 0, 0
				for b.Loop() {
					t0 := time.Now()
					for j := range batch {
						op.t((i + j) % size.n)
					}
					t1 := time.Now()
					for j := range batch {
						op.s((i + j) % size.n)
					}
					ds += time.Since(t1)
					dt += t1.Sub(t0)
					i = (i + batch) % size.n
					n += batch
				}
				b.ReportMetric(float64(dt.Nanoseconds())/float64(n), "treap-ns/op")
				b.ReportMetric(float64(ds.Nanoseconds())/float64(n), "sortedmap-ns/op")
				b.ReportMetric(float64(ds)/float64(dt), "speedup")
			})
		}
	}
}

// BenchmarkChurn removes a present key and puts it back, as a directory
// that keeps changing does: the treap persistently (Delete, Set), the
// treap edited in place by one Owner between snapshots (DeleteOwned,
// SetOwned), SortedMap persistently, and iradix in one open transaction,
// which also changes its own nodes in place.
func BenchmarkChurn(b *testing.B) {
	for _, size := range sizes {
		var (
			k  *keys
			tm treap.Map[string, int]
			to treap.Map[string, int]
			sm *immutable.SortedMap[string, int]
			tx *iradix.Txn[int]
		)
		setup := sync.OnceFunc(func() {
			k = makeKeys(size.n)
			tm = buildTreap(k.present)
			to = buildTreap(k.present)
			sm = buildSorted(k.present)
			tx = buildRadix(k.presentB).Txn()
		})
		for _, st := range []struct {
			name string
			f    func(i int)
		}{
			{"treap", func(i int) {
				key := k.present[k.order[i]]
				tm = tm.Delete(key).Set(key, i)
			}},
			{"treap-owned", func(i int) {
				key := k.present[k.order[i]]
				to = to.DeleteOwned(1, key).SetOwned(1, key, i)
			}},
			{"sortedmap", func(i int) {
				key := k.present[k.order[i]]
				sm = sm.Delete(key).Set(key, i)
			}},
			{"iradix-txn", func(i int) {
				key := k.presentB[k.order[i]]
				tx.Delete(key)
				tx.Insert(key, i)
			}},
		} {
			b.Run(size.name+"/"+st.name, func(b *testing.B) {
				setup()
				runtime.GC()
				loop(b, size.n, st.f)
			})
		}
	}
}
