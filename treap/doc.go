// Package treap implements a generic persistent ordered map: a treap
// whose versions share structure, so that every version is an immutable
// snapshot and a change costs O(log n) time and memory.
//
// # Basics
//
// Make a map with NewOrdered for keys of an ordered type, or with New
// and an order and a hash of your own. Set and Delete return a new Map
// and leave the old one as it was:
//
//	m := treap.NewOrdered[string, int]()
//	m1 := m.Set("a", 1)
//	m2 := m1.Delete("a") // m1 still holds "a"
//
// All, From, After and Backward iterate in key order and may stop
// early; Split, Join and DeleteRange cut and glue maps by key ranges.
// A Builder loads many entries without copying, in O(n) for keys in
// ascending order, and hands out Maps as it goes.
//
// A node's priority comes from the hash of its key, not from a random
// source, so a set of keys always has the same shape, whatever the order
// in which it was built. The hash must therefore be deterministic and
// agree with the order: keys that compare equal must hash equally.
//
// The zero Map is empty and may be read, but it has no order: Set on it,
// or a nil cmp or hash given to New, panics. No other input panics.
//
// # Concurrency
//
// A Map is an immutable value: any number of goroutines may read it, and
// derive new versions from it, with no locks. To share a changing map,
// keep one writer that derives each new version and publishes it with an
// atomic.Pointer[treap.Map[K, V]] (or under the writer's mutex); readers
// load the pointer and read the version they got for as long as they
// like. A Builder is not safe for concurrent use, but the Maps it
// returns are ordinary Maps.
//
// A writer that publishes a version per change pays the O(log n) path
// copy each time. SetOwned and DeleteOwned avoid it while readers keep
// reading without locks: they change in place the nodes that earlier
// edits of the same Owner made, publishing each change with one atomic
// store of a new subtree of expected O(1) nodes, and copy only the
// nodes they do not own. A reader holding the map sees each such change
// whole or not at all; a lookup finds every key the change leaves alone,
// and an iterator yields each of them once, in order. Such a map is
// immutable only once the writer moves on to a new Owner: that is how a
// snapshot freezes it in O(1).
//
// # Complexity
//
// With n entries, expected costs are: Get, Set, Delete, Min, Max, and
// starting an iterator at a key, O(log n); each further step of an
// iterator, O(1) amortized; Len and Clear, O(1). Set and Delete allocate
// O(log n) nodes of one size-class each (48 bytes for a string key and
// an 8-byte value), and Delete of an absent key allocates nothing. Join
// is O(log n); Split is O(log n + the smaller part) and DeleteRange
// O(log n + the removed part), because they count. A Builder's Set is
// O(1) amortized for ascending keys and O(log n) otherwise; its Map is
// O(entries set since the last Map). SetOwned and DeleteOwned take
// O(log n) time and, on a path their Owner made, allocate an expected
// O(1) nodes. The expected height is about 3 ln n
// (about 41 for a million keys), whatever the insertion order.
//
// # Caveats
//
// The shape, and so the speed, rests on the hash: a hash with few
// distinct values makes long chains of equal priorities (still correct,
// but no longer O(log n)). A hash that disagrees with the order, or that
// changes between runs, makes Check fail and Join fall back to inserting
// one by one. Maps that do not share a New call (two NewOrdered maps of
// the same types do) are joined by insertion too.
package treap
