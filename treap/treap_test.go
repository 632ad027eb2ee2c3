package treap

import (
	"cmp"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/packfs/packfs/internal/testsize"
)

var flagSeeds = flag.Int("treap.seeds", 0, "number of seeds for the randomized tests (0: 16, or 50 with PACKFS_LONG=1; e.g. 1000 for a long run)")

// seeds is how many seeds each randomized test runs.
func seeds() uint64 {
	switch {
	case *flagSeeds > 0:
		return uint64(*flagSeeds)
	case testsize.Short():
		return 16
	}
	return 50
}

// kv is one entry of the model.
type kv struct{ k, v int }

// model is the reference: a sorted slice of entries.
type model []kv

func (md model) find(k int) (int, bool) {
	return slices.BinarySearchFunc(md, k, func(e kv, k int) int { return cmp.Compare(e.k, k) })
}

func (md model) set(k, v int) model {
	i, ok := md.find(k)
	out := slices.Clone(md)
	if ok {
		out[i].v = v
		return out
	}
	return slices.Insert(out, i, kv{k, v})
}

func (md model) delete(k int) model {
	i, ok := md.find(k)
	if !ok {
		return md
	}
	return slices.Delete(slices.Clone(md), i, i+1)
}

func (md model) deleteRange(lo, hi int) model {
	var out model
	for _, e := range md {
		if e.k < lo || e.k >= hi {
			out = append(out, e)
		}
	}
	return out
}

func collect(seq func(func(int, int) bool)) model {
	var out model
	for k, v := range seq {
		out = append(out, kv{k, v})
	}
	return out
}

// verify compares m with md in every way the API allows, probing at key
// probe, and runs Check.
func verify(m Map[int, int], md model, probe int) error {
	if err := m.Check(); err != nil {
		return err
	}
	if m.Len() != len(md) {
		return fmt.Errorf("Len %d, model %d", m.Len(), len(md))
	}
	if got := collect(m.All()); !slices.Equal(got, md) {
		return fmt.Errorf("All %v, model %v", got, md)
	}
	back := slices.Clone(md)
	slices.Reverse(back)
	if got := collect(m.Backward()); !slices.Equal(got, back) {
		return fmt.Errorf("Backward %v, model %v", got, back)
	}
	i, found := md.find(probe)
	if got := collect(m.From(probe)); !slices.Equal(got, md[i:]) {
		return fmt.Errorf("From(%d) %v, model %v", probe, got, md[i:])
	}
	j := i
	if found {
		j++
	}
	if got := collect(m.After(probe)); !slices.Equal(got, md[j:]) {
		return fmt.Errorf("After(%d) %v, model %v", probe, got, md[j:])
	}
	v, ok := m.Get(probe)
	if ok != found || (found && v != md[i].v) {
		return fmt.Errorf("Get(%d) = %d, %v; model found %v", probe, v, ok, found)
	}
	for _, e := range md {
		if v, ok := m.Get(e.k); !ok || v != e.v {
			return fmt.Errorf("Get(%d) = %d, %v; model %d", e.k, v, ok, e.v)
		}
	}
	mk, mv, ok := m.Min()
	if ok != (len(md) > 0) || ok && (kv{mk, mv} != md[0]) {
		return fmt.Errorf("Min %d %d %v, model %v", mk, mv, ok, md)
	}
	mk, mv, ok = m.Max()
	if ok != (len(md) > 0) || ok && (kv{mk, mv} != md[len(md)-1]) {
		return fmt.Errorf("Max %d %d %v, model %v", mk, mv, ok, md)
	}
	return nil
}

// configs are the maps the randomized tests run on: the ordered one, and
// one whose hash has four values, so most priorities tie.
var configs = []struct {
	name string
	make func() Map[int, int]
}{
	{"ordered", NewOrdered[int, int]},
	{"ties", func() Map[int, int] {
		return New[int, int](cmp.Compare[int], func(k int) uint64 { return uint64(k & 3) })
	}},
}

// version is a map kept to check that later operations leave it alone.
type version struct {
	m  Map[int, int]
	md model
}

func TestRandom(t *testing.T) {
	for _, cf := range configs {
		t.Run(cf.name, func(t *testing.T) {
			for seed := range seeds() {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					t.Parallel()
					runRandom(t, seed, cf.make(), 1000)
				})
			}
		})
	}
}

func runRandom(t *testing.T, seed uint64, m Map[int, int], ops int) {
	r := rand.New(rand.NewPCG(seed, 0x7265617021))
	keys := 8 + r.IntN(500) // key range: small ranges give many hits
	var md model
	var old []version
	for step := range ops {
		key := func() int { return r.IntN(keys) }
		probe := key()
		prev := m
		var what string
		switch op := r.IntN(100); {
		case op < 45:
			k, v := key(), r.Int()
			what = fmt.Sprintf("Set(%d, %d)", k, v)
			m, md = m.Set(k, v), md.set(k, v)
		case op < 75:
			k := key()
			what = fmt.Sprintf("Delete(%d)", k)
			m, md = m.Delete(k), md.delete(k)
			if _, ok := md.find(k); !ok && m.Len() == prev.Len() && m.root != prev.root {
				t.Fatalf("seed %d step %d: Delete of absent key %d changed the map", seed, step, k)
			}
		case op < 80:
			lo := key()
			hi := lo + r.IntN(keys/4+1) - 2
			what = fmt.Sprintf("DeleteRange(%d, %d)", lo, hi)
			m, md = m.DeleteRange(lo, hi), md.deleteRange(lo, hi)
		case op < 88:
			k := key()
			what = fmt.Sprintf("Split(%d)+Join", k)
			less, rest := m.Split(k)
			i, _ := md.find(k)
			if err := verify(less, md[:i], probe); err != nil {
				t.Fatalf("seed %d step %d: Split(%d) less: %v", seed, step, k, err)
			}
			if err := verify(rest, md[i:], probe); err != nil {
				t.Fatalf("seed %d step %d: Split(%d) rest: %v", seed, step, k, err)
			}
			if r.IntN(2) == 0 {
				m = Join(less, rest)
			} else {
				// Wrong order: Join must fall back and still be right.
				m = Join(rest, less)
			}
		case op < 96:
			n := r.IntN(20)
			what = fmt.Sprintf("Builder(%d ops)", n)
			b := m.Builder()
			asc := r.IntN(2) == 0
			mid := -1
			for i := range n {
				var k int
				if asc {
					k = keys + step*20 + i // above every key: the spine path
				} else {
					k = key()
				}
				if r.IntN(4) == 0 {
					b.Delete(k)
					md = md.delete(k)
				} else {
					v := r.Int()
					b.Set(k, v)
					md = md.set(k, v)
				}
				if b.Len() != len(md) {
					t.Fatalf("seed %d step %d: Builder.Len %d, model %d", seed, step, b.Len(), len(md))
				}
				if i == n/2 && r.IntN(2) == 0 {
					// A Map mid-way, which later builder ops must not change.
					old = append(old, version{b.Map(), md})
					mid = len(old) - 1
				}
			}
			m = b.Map()
			if mid >= 0 {
				if err := verify(old[mid].m, old[mid].md, probe); err != nil {
					t.Fatalf("seed %d step %d: mid-way builder Map changed: %v", seed, step, err)
				}
			}
		case op < 98:
			what = "Clear"
			m, md = m.Clear(), nil
		default:
			// Join of two disjoint maps in the right order.
			hi := m.Clear()
			var hmd model
			for i := range r.IntN(30) {
				k := 1000 + i*3 + r.IntN(3)
				hi = hi.Set(k, i)
				hmd = hmd.set(k, i)
			}
			lo := m.DeleteRange(1000, math.MaxInt)
			lmd := md.deleteRange(1000, math.MaxInt)
			what = "Join"
			m, md = Join(lo, hi), append(slices.Clone(lmd), hmd...)
		}
		if err := verify(m, md, probe); err != nil {
			t.Fatalf("seed %d step %d: after %s: %v", seed, step, what, err)
		}
		// The versions kept include the previous one, prev.
		old = append(old, version{m, md})
		if len(old) > 4 {
			old = old[len(old)-4:]
		}
		for i, o := range old {
			if err := verify(o.m, o.md, probe); err != nil {
				t.Fatalf("seed %d step %d: after %s, version %d back changed: %v", seed, step, what, len(old)-1-i, err)
			}
		}
	}
}

// shape writes the tree's structure: keys in preorder with nil markers.
func shape[K, V any](t *node[K, V], sb *strings.Builder) {
	if t == nil {
		sb.WriteString(".")
		return
	}
	fmt.Fprintf(sb, "(%v ", t.key)
	shape(t.left, sb)
	sb.WriteString(" ")
	shape(t.right, sb)
	sb.WriteString(")")
}

func shapeOf[K, V any](m Map[K, V]) string {
	var sb strings.Builder
	shape(m.root, &sb)
	return sb.String()
}

func TestShapeDeterminism(t *testing.T) {
	for _, cf := range configs {
		t.Run(cf.name, func(t *testing.T) {
			for seed := range seeds() {
				r := rand.New(rand.NewPCG(seed, 1))
				keys := r.Perm(200 + r.IntN(300))
				a := cf.make()
				for _, k := range keys {
					a = a.Set(k, k)
				}
				// Another order, with extra keys set and deleted on the way.
				b := cf.make()
				r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
				for _, k := range keys {
					b = b.Set(k+10000, 0).Set(k, k)
				}
				for _, k := range keys {
					b = b.Delete(k + 10000)
				}
				// And a builder fed in ascending order.
				slices.Sort(keys)
				bl := cf.make().Builder()
				for _, k := range keys {
					bl.Set(k, k)
				}
				c := bl.Map()
				sa, sb, sc := shapeOf(a), shapeOf(b), shapeOf(c)
				if sa != sb || sa != sc {
					t.Fatalf("seed %d: shapes differ:\n%s\n%s\n%s", seed, sa, sb, sc)
				}
			}
		})
	}
}

func TestStringKeys(t *testing.T) {
	m := NewOrdered[string, int]()
	const n = 5000
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for _, i := range perm {
		m = m.Set(fmt.Sprintf("file%08d", i), i)
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	i := 0
	for k, v := range m.All() {
		if k != fmt.Sprintf("file%08d", i) || v != i {
			t.Fatalf("entry %d: %q %d", i, k, v)
		}
		i++
	}
	if i != n {
		t.Fatalf("All gave %d entries, want %d", i, n)
	}
	// Paging a listing with After.
	var pages int
	last := ""
	got := 0
	for {
		var page []string
		for k := range m.After(last) {
			page = append(page, k)
			if len(page) == 100 {
				break
			}
		}
		if len(page) == 0 {
			break
		}
		pages++
		got += len(page)
		last = page[len(page)-1]
	}
	if got != n-0 || pages != n/100 {
		t.Fatalf("paging gave %d entries in %d pages", got, pages)
	}
	// The hash is deterministic: a fixed value pins it across processes.
	if h := hashString("file00000042"); h != hashString("file00000042") || h == hashString("file00000043") {
		t.Fatalf("hashString not deterministic or collides")
	}
}

func TestOrderedKinds(t *testing.T) {
	type path string
	p := NewOrdered[path, bool]().Set("b", true).Set("a", true).Set("c", false)
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	if k, _, _ := p.Min(); k != "a" {
		t.Fatalf("Min %q", k)
	}
	f := NewOrdered[float64, int]()
	f = f.Set(math.NaN(), 1).Set(0, 2).Set(math.Copysign(0, -1), 3).Set(math.NaN(), 4).Set(math.Inf(-1), 5).Set(1.5, 6)
	if err := f.Check(); err != nil {
		t.Fatal(err)
	}
	if f.Len() != 4 {
		t.Fatalf("float map Len %d, want 4 (NaN, -Inf, 0, 1.5)", f.Len())
	}
	if v, ok := f.Get(0); !ok || v != 3 {
		t.Fatalf("Get(0) = %d %v", v, ok)
	}
	if v, ok := f.Get(math.NaN()); !ok || v != 4 {
		t.Fatalf("Get(NaN) = %d %v", v, ok)
	}
	f32 := NewOrdered[float32, int]().Set(1, 1).Set(-1, 2)
	u8 := NewOrdered[uint8, int]().Set(255, 1).Set(0, 2)
	i16 := NewOrdered[int16, int]().Set(-5, 1).Set(5, 2)
	u32 := NewOrdered[uint32, int]().Set(7, 1).Set(1<<31, 2)
	for _, err := range []error{f32.Check(), u8.Check(), i16.Check(), u32.Check()} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestZeroMap(t *testing.T) {
	var m Map[string, int]
	if _, ok := m.Get("x"); ok || m.Len() != 0 {
		t.Fatal("zero Map not empty")
	}
	for range m.All() {
		t.Fatal("zero Map yields")
	}
	for range m.From("a") {
		t.Fatal("zero Map yields")
	}
	if _, _, ok := m.Min(); ok {
		t.Fatal("zero Map has Min")
	}
	if m.Delete("x").Len() != 0 || m.DeleteRange("a", "z").Len() != 0 || m.Check() != nil {
		t.Fatal("zero Map")
	}
	l, r := m.Split("m")
	if l.Len() != 0 || r.Len() != 0 {
		t.Fatal("zero Map split")
	}
	j := Join(m, NewOrdered[string, int]().Set("a", 1))
	if v, _ := j.Get("a"); v != 1 || j.Check() != nil {
		t.Fatal("Join with zero Map")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("Set on zero Map did not panic")
			}
		}()
		m.Set("a", 1)
	}()
}

func TestEarlyBreak(t *testing.T) {
	m := NewOrdered[int, int]()
	for i := range 100 {
		m = m.Set(i, i)
	}
	for name, seq := range map[string]func(func(int, int) bool){
		"All": m.All(), "From": m.From(10), "After": m.After(10), "Backward": m.Backward(),
	} {
		n := 0
		for range seq {
			n++
			if n == 5 {
				break
			}
		}
		if n != 5 {
			t.Errorf("%s: %d", name, n)
		}
	}
}

func TestJoinDifferentConfigs(t *testing.T) {
	a := New[int, int](cmp.Compare[int], func(k int) uint64 { return uint64(k) })
	b := New[int, int](cmp.Compare[int], func(k int) uint64 { return uint64(k * 7) })
	for i := range 50 {
		a = a.Set(i, i)
		b = b.Set(i+25, -i)
	}
	j := Join(a, b)
	if err := j.Check(); err != nil {
		t.Fatal(err)
	}
	if j.Len() != 75 {
		t.Fatalf("Len %d", j.Len())
	}
	if v, _ := j.Get(30); v != -5 {
		t.Fatalf("Get(30) = %d, want right's -5", v)
	}
	// Two NewOrdered maps link directly.
	x := NewOrdered[int, int]().Set(1, 1)
	y := NewOrdered[int, int]().Set(2, 2)
	if j := Join(x, y); j.Check() != nil || j.Len() != 2 {
		t.Fatal("Join of NewOrdered maps")
	}
}

func TestBuilder(t *testing.T) {
	for _, cf := range configs {
		t.Run(cf.name, func(t *testing.T) {
			n := 20000
			if cf.name == "ties" {
				n = 1000 // with four priorities the tree is mostly chains
			}
			// Sorted input.
			b := cf.make().Builder()
			var md model
			for i := range n {
				b.Set(i*2, i)
				md = append(md, kv{i * 2, i})
			}
			m1 := b.Map()
			if err := verify(m1, md, 77); err != nil {
				t.Fatal(err)
			}
			// Reuse after Map: sorted appends, out-of-order sets, deletes.
			md1 := md
			md = slices.Clone(md)
			for i := n; i < n+100; i++ {
				b.Set(i*2, i)
				md = md.set(i*2, i)
			}
			for i := range 100 {
				b.Set(i*2+1, -i)
				md = md.set(i*2+1, -i)
				b.Set(i*4, 0)
				md = md.set(i*4, 0)
				b.Delete(i * 6)
				md = md.delete(i * 6)
			}
			b.Delete(-1)
			if b.Len() != len(md) {
				t.Fatalf("Len %d, model %d", b.Len(), len(md))
			}
			m2 := b.Map()
			if err := verify(m2, md, 77); err != nil {
				t.Fatal(err)
			}
			if err := verify(m1, md1, 77); err != nil {
				t.Fatalf("first Map changed: %v", err)
			}
			// Unsorted input, from a non-empty map.
			r := rand.New(rand.NewPCG(3, 4))
			b2 := m2.Builder()
			plain := map[int]int{}
			for _, e := range md {
				plain[e.k] = e.v
			}
			for range 5000 {
				k := r.IntN(3 * n)
				if r.IntN(3) == 0 {
					b2.Delete(k)
					delete(plain, k)
				} else {
					b2.Set(k, k)
					plain[k] = k
				}
			}
			var md2 model
			for k, v := range plain {
				md2 = append(md2, kv{k, v})
			}
			slices.SortFunc(md2, func(a, b kv) int { return cmp.Compare(a.k, b.k) })
			if err := verify(b2.Map(), md2, 5); err != nil {
				t.Fatal(err)
			}
			if err := verify(m2, md, 77); err != nil {
				t.Fatalf("map a builder started from changed: %v", err)
			}
			if err := verify(m1, md1, 77); err != nil {
				t.Fatalf("first Map changed: %v", err)
			}
		})
	}
}

func TestAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under coverage or race")
	}
	m := NewOrdered[string, int]()
	for i := range 1000 {
		m = m.Set(fmt.Sprintf("file%08d", i), i)
	}
	if a := testing.AllocsPerRun(100, func() { m.Delete("nope") }); a != 0 {
		t.Errorf("Delete of absent key: %v allocs", a)
	}
	if a := testing.AllocsPerRun(100, func() { m.DeleteRange("x", "y") }); a != 0 {
		t.Errorf("empty DeleteRange: %v allocs", a)
	}
	if a := testing.AllocsPerRun(100, func() { m.Get("file00000500") }); a != 0 {
		t.Errorf("Get: %v allocs", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		for range m.All() {
		}
	}); a > 1 {
		t.Errorf("All: %v allocs", a)
	}
	if a := testing.AllocsPerRun(100, func() {
		for range m.After("file00000500") {
			break
		}
	}); a > 1 {
		t.Errorf("After: %v allocs", a)
	}
	if s := unsafe.Sizeof(node[string, int]{}); s != 48 {
		t.Errorf("node[string, int] is %d bytes, want 48", s)
	}
}
