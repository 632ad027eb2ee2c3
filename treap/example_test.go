package treap_test

import (
	"fmt"
	"strings"

	"github.com/packfs/packfs/treap"
)

func ExampleNewOrdered() {
	m0 := treap.NewOrdered[string, int]()
	m1 := m0.Set("b", 2).Set("a", 1).Set("c", 3)
	m2 := m1.Delete("b")
	for k, v := range m1.All() {
		fmt.Println(k, v)
	}
	fmt.Println(m0.Len(), m1.Len(), m2.Len())
	// Output:
	// a 1
	// b 2
	// c 3
	// 0 3 2
}

func ExampleNew() {
	// Case-insensitive keys: the hash must agree with the order.
	m := treap.New[string, int](
		func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) },
		func(k string) uint64 {
			var h uint64 = 14695981039346656037 // FNV-1a
			for i := range len(k) {
				c := k[i]
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				h = (h ^ uint64(c)) * 1099511628211
			}
			return h
		})
	m = m.Set("Readme", 1).Set("README", 2).Set("go.mod", 3)
	v, _ := m.Get("readme")
	fmt.Println(m.Len(), v)
	for k := range m.After("go.mod") {
		fmt.Println(k)
	}
	// Output:
	// 2 2
	// README
}

func ExampleBuilder() {
	b := treap.NewOrdered[string, int]().Builder()
	for i := range 5 {
		b.Set(fmt.Sprintf("file%02d", i), i) // ascending: O(1) each
	}
	first := b.Map()
	b.Delete("file00") // the builder goes on; first is unaffected
	second := b.Map()
	fmt.Println(first.Len(), second.Len())
	k, _, _ := second.Min()
	fmt.Println(k)
	// Output:
	// 5 4
	// file01
}

func ExampleMap_After() {
	m := treap.NewOrdered[string, int]()
	for i := range 7 {
		m = m.Set(fmt.Sprintf("f%d", i), i)
	}
	// Page through the keys three at a time.
	last := ""
	for {
		var page []string
		for k := range m.After(last) {
			if page = append(page, k); len(page) == 3 {
				break
			}
		}
		if len(page) == 0 {
			break
		}
		fmt.Println(page)
		last = page[len(page)-1]
	}
	// Output:
	// [f0 f1 f2]
	// [f3 f4 f5]
	// [f6]
}
