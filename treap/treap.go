package treap

import (
	"cmp"
	"reflect"
	"strings"
	"sync/atomic"
	"unsafe"
)

// node is one entry of a treap. For a string key and an 8-byte value it is
// 48 bytes: left and right (16), key (16), val (8), prio (4) and owner
// (4), which is exactly one of Go's size classes.
//
// key, val and prio never change once a node is reachable. left and
// right change only on a Builder's nodes, which no reader can reach, and
// on the nodes of an Owner (see SetOwned), where a writer replaces a
// child with one atomic store while readers load it atomically.
type node[K, V any] struct {
	left, right *node[K, V]
	key         K
	val         V
	// prio is derived from the hash of key. A node's priority is higher
	// than its children's; ties are broken by key order (the smaller key
	// is the ancestor), so a set of keys has exactly one shape.
	prio uint32
	// owner is the Owner whose edits may change the node in place:
	// noOwner for a node of a persistent Map, builderOwner for a node a
	// Builder created since its last Map call (only that Builder can
	// reach it), or the Owner given to SetOwned or DeleteOwned.
	owner Owner
}

// loadLink and storeLink read and replace a child pointer that an owner's
// edit may replace while readers follow it.
func loadLink[K, V any](p **node[K, V]) *node[K, V] {
	return (*node[K, V])(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(p))))
}

func storeLink[K, V any](p **node[K, V], t *node[K, V]) {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(p)), unsafe.Pointer(t))
}

// config is what every version of a map shares: the order and the hash.
type config[K any] struct {
	cmp  func(a, b K) int
	hash func(K) uint64
	// ordered is set by NewOrdered: two ordered configs of the same K
	// are interchangeable, so Join can link their trees directly.
	ordered bool
	// str is set by NewOrdered when K's underlying type is string:
	// compare then calls strings.Compare directly instead of through cmp.
	str bool
}

// compare is c.cmp(a, b), without the indirect call for string keys.
func (c *config[K]) compare(a, b K) int {
	if c.str {
		return compareStrings(unsafe.Pointer(&a), unsafe.Pointer(&b))
	}
	return c.cmp(a, b)
}

// compareStrings compares the strings at a and b; c.str guarantees that
// K's underlying type is string, so the reinterpretation is exact.
func compareStrings(a, b unsafe.Pointer) int {
	return strings.Compare(*(*string)(a), *(*string)(b))
}

// prio is the priority of key k: the top 32 bits of the hash, remixed so
// that a weak hash (such as the identity on integers) still gives
// well-spread priorities.
func (c *config[K]) prio(k K) uint32 {
	return uint32(mix64(c.hash(k)) >> 32)
}

// mix64 is the splitmix64 finalizer, a bijection with full avalanche.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Map is an immutable ordered map from K to V. Every method that changes
// it returns a new Map and leaves the receiver unchanged; the two share
// all but O(log n) nodes.
//
// Map is a small value type: copy it freely. The zero Map has no order
// and is not usable except as an empty map to read; make maps with New or
// NewOrdered.
type Map[K, V any] struct {
	root *node[K, V]
	n    int
	cfg  *config[K]
}

// New returns an empty map ordered by cmp, which must be a strict weak
// order returning a negative number, zero or a positive number like
// cmp.Compare. hash gives each key its priority: it must be deterministic
// and agree with cmp (keys that compare equal hash equally); it need not
// be strong, since it is remixed. A nil cmp or hash makes the first Set
// panic.
func New[K, V any](cmp func(a, b K) int, hash func(K) uint64) Map[K, V] {
	return Map[K, V]{cfg: &config[K]{cmp: cmp, hash: hash}}
}

// NewOrdered returns an empty map ordered by cmp.Compare, with a fast,
// deterministic hash of the key's bytes (strings) or bits (integers and
// floats), so that equal contents give equal shapes in every process.
func NewOrdered[K cmp.Ordered, V any]() Map[K, V] {
	str := reflect.TypeFor[K]().Kind() == reflect.String
	return Map[K, V]{cfg: &config[K]{cmp: orderedCompare[K](), hash: orderedHash[K](), ordered: true, str: str}}
}

// config returns the map's configuration, or panics with a clear
// message for the zero Map.
func (m Map[K, V]) config() *config[K] {
	if m.cfg == nil {
		panic("treap: use of zero Map; make maps with New or NewOrdered")
	}
	return m.cfg
}

// Len returns the number of entries.
func (m Map[K, V]) Len() int { return m.n }

// Get returns the value stored under k and whether there is one.
func (m Map[K, V]) Get(k K) (V, bool) {
	if t := m.root; t != nil {
		c := m.cfg
		if c.str {
			return getString(t, *(*string)(unsafe.Pointer(&k)))
		}
		for t != nil {
			d := c.cmp(k, t.key)
			if d == 0 {
				return t.val, true
			}
			if d < 0 {
				t = loadLink(&t.left)
			} else {
				t = loadLink(&t.right)
			}
		}
	}
	var zero V
	return zero, false
}

// getString is Get for keys whose underlying type is string.
func getString[K, V any](t *node[K, V], k string) (V, bool) {
	for t != nil {
		d := strings.Compare(k, *(*string)(unsafe.Pointer(&t.key)))
		if d == 0 {
			return t.val, true
		}
		if d < 0 {
			t = loadLink(&t.left)
		} else {
			t = loadLink(&t.right)
		}
	}
	var zero V
	return zero, false
}

// Set returns a map with k mapped to v. It copies the O(log n) nodes on
// the path to k and shares the rest with m.
func (m Map[K, V]) Set(k K, v V) Map[K, V] {
	c := m.config()
	var a alloc[K, V]
	root, added := insert(c, m.root, k, v, c.prio(k), &a)
	n := m.n
	if added {
		n++
	}
	return Map[K, V]{root: root, n: n, cfg: c}
}

// Delete returns a map without k. If k is absent it returns m itself and
// allocates nothing.
func (m Map[K, V]) Delete(k K) Map[K, V] {
	if m.root == nil {
		return m
	}
	c := m.cfg
	var buf [64]*node[K, V]
	path := buf[:0]
	t := m.root
	for t != nil {
		d := c.compare(k, t.key)
		if d == 0 {
			break
		}
		path = append(path, t)
		if d < 0 {
			t = t.left
		} else {
			t = t.right
		}
	}
	if t == nil {
		return m
	}
	var a alloc[K, V]
	sub := join(t.left, t.right, &a)
	for i := len(path) - 1; i >= 0; i-- {
		p := path[i]
		n := clone(p, noOwner)
		if p.left == t {
			n.left = sub
		} else {
			n.right = sub
		}
		sub, t = n, p
	}
	return Map[K, V]{root: sub, n: m.n - 1, cfg: c}
}

// Min returns the smallest key and its value, or ok false if m is empty.
func (m Map[K, V]) Min() (k K, v V, ok bool) {
	t := m.root
	if t == nil {
		return k, v, false
	}
	for l := loadLink(&t.left); l != nil; l = loadLink(&t.left) {
		t = l
	}
	return t.key, t.val, true
}

// Max returns the largest key and its value, or ok false if m is empty.
func (m Map[K, V]) Max() (k K, v V, ok bool) {
	t := m.root
	if t == nil {
		return k, v, false
	}
	for r := loadLink(&t.right); r != nil; r = loadLink(&t.right) {
		t = r
	}
	return t.key, t.val, true
}

// Clear returns an empty map with the same order and hash as m.
func (m Map[K, V]) Clear() Map[K, V] {
	return Map[K, V]{cfg: m.cfg}
}

// clone returns a copy of t owned by o. The writer alone calls it, so it
// reads t's children plainly.
func clone[K, V any](t *node[K, V], o Owner) *node[K, V] {
	return &node[K, V]{left: t.left, right: t.right, key: t.key, val: t.val, prio: t.prio, owner: o}
}

// alloc makes the node copies of one operation, owned by owner. With
// inPlace (a Builder) it hands back the nodes owner already owns, to
// mutate in place; otherwise it copies every node it is asked for, so
// that nothing a reader can reach changes.
type alloc[K, V any] struct {
	owner   Owner
	inPlace bool
}

// new returns a zeroed node owned by a.owner.
func (a *alloc[K, V]) new() *node[K, V] {
	return &node[K, V]{owner: a.owner}
}

// own returns t itself if it may be mutated in place (a Builder's own
// node), and a copy of t otherwise.
func (a *alloc[K, V]) own(t *node[K, V]) *node[K, V] {
	if a.inPlace && t.owner == a.owner {
		return t
	}
	return clone(t, a.owner)
}

// insert puts k, v with priority p into the tree at root and returns the
// new root and whether k was absent. Persistent (a.inPlace false) it
// copies every node it changes; for a Builder (a.inPlace true) it changes
// its own nodes in place and copies only the others, making the copies
// its own.
func insert[K, V any](c *config[K], root *node[K, V], k K, v V, p uint32, a *alloc[K, V]) (*node[K, V], bool) {
	link := &root
	t := root
	for t != nil {
		d := c.compare(k, t.key)
		if d == 0 {
			n := a.own(t)
			n.key, n.val = k, v
			*link = n
			return root, false
		}
		if p > t.prio || (p == t.prio && d < 0) {
			break
		}
		n := a.own(t)
		*link = n
		if d < 0 {
			link, t = &n.left, n.left
		} else {
			link, t = &n.right, n.right
		}
	}
	x := a.new()
	x.key, x.val, x.prio = k, v, p
	var eq *node[K, V]
	// k beats t, so with a consistent hash k is not below t; split3 still
	// drops it if an inconsistent hash put it there.
	x.left, x.right, eq = split3(c, t, k, a)
	*link = x
	return root, eq == nil
}

// remove deletes k, which must be present, from the tree at root (see
// insert for a) and returns the new root.
func remove[K, V any](c *config[K], root *node[K, V], k K, a *alloc[K, V]) *node[K, V] {
	link := &root
	t := root
	for t != nil {
		d := c.compare(k, t.key)
		if d == 0 {
			*link = join(t.left, t.right, a)
			return root
		}
		n := a.own(t)
		*link = n
		if d < 0 {
			link, t = &n.left, n.left
		} else {
			link, t = &n.right, n.right
		}
	}
	return root
}

// split3 splits t into the keys less than k, the keys greater than k,
// and the node holding k itself (nil if none).
func split3[K, V any](c *config[K], t *node[K, V], k K, a *alloc[K, V]) (l, r, eq *node[K, V]) {
	lp, rp := &l, &r
	for t != nil {
		d := c.compare(k, t.key)
		if d == 0 {
			*lp, *rp = t.left, t.right
			return l, r, t
		}
		n := a.own(t)
		if d < 0 {
			*rp = n
			rp, t = &n.left, n.left
		} else {
			*lp = n
			lp, t = &n.right, n.right
		}
	}
	*lp, *rp = nil, nil
	return l, r, nil
}

// split2 splits t into the keys less than k and the keys greater than or
// equal to k.
func split2[K, V any](c *config[K], t *node[K, V], k K, a *alloc[K, V]) (l, r *node[K, V]) {
	lp, rp := &l, &r
	for t != nil {
		n := a.own(t)
		if c.compare(t.key, k) < 0 {
			*lp = n
			lp, t = &n.right, n.right
		} else {
			*rp = n
			rp, t = &n.left, n.left
		}
	}
	*lp, *rp = nil, nil
	return l, r
}

// join links two trees where every key of l is less than every key of r.
// On equal priorities the smaller key, from l, becomes the ancestor.
func join[K, V any](l, r *node[K, V], a *alloc[K, V]) *node[K, V] {
	var root *node[K, V]
	link := &root
	for l != nil && r != nil {
		if l.prio >= r.prio {
			n := a.own(l)
			*link = n
			link, l = &n.right, n.right
		} else {
			n := a.own(r)
			*link = n
			link, r = &n.left, n.left
		}
	}
	if l != nil {
		*link = l
	} else {
		*link = r
	}
	return root
}

// find returns the node holding k, or nil.
func find[K, V any](c *config[K], t *node[K, V], k K) *node[K, V] {
	for t != nil {
		d := c.compare(k, t.key)
		if d == 0 {
			return t
		}
		if d < 0 {
			t = t.left
		} else {
			t = t.right
		}
	}
	return nil
}
