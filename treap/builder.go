package treap

// Builder builds a map by mutating its own nodes in place, without the
// path copying of Map.Set: use it for bulk loads. Keys added in ascending
// order cost O(1) amortized each (a Cartesian-tree build along the right
// spine); others cost O(log n). A Builder is not safe for concurrent use.
//
// A Builder only mutates nodes it created since its last Map call; it
// copies any other node before changing it, so Maps it started from or
// returned are never affected.
type Builder[K, V any] struct {
	cfg  *config[K]
	root *node[K, V]
	n    int
	// spine is the right spine of root, from the root down, all the
	// builder's own;
	// valid only if spineOK.
	spine   []*node[K, V]
	spineOK bool
	// max is the largest key, valid only if hasMax.
	max    K
	hasMax bool
}

// Builder returns a builder that starts from the entries of m.
func (m Map[K, V]) Builder() *Builder[K, V] {
	return &Builder[K, V]{cfg: m.cfg, root: m.root, n: m.n}
}

// NewBuilder returns a builder of an empty map; see New for cmp and hash.
func NewBuilder[K, V any](cmp func(a, b K) int, hash func(K) uint64) *Builder[K, V] {
	return New[K, V](cmp, hash).Builder()
}

// Len returns the number of entries.
func (b *Builder[K, V]) Len() int { return b.n }

// Set maps k to v.
func (b *Builder[K, V]) Set(k K, v V) {
	c := b.cfg
	if c == nil {
		panic("treap: Builder of a zero Map; make maps with New or NewOrdered")
	}
	if !b.hasMax && b.root != nil {
		t := b.root
		for t.right != nil {
			t = t.right
		}
		b.max, b.hasMax = t.key, true
	}
	if !b.hasMax || c.compare(k, b.max) > 0 {
		b.push(k, v, c.prio(k))
		return
	}
	ta := alloc[K, V]{owner: builderOwner, inPlace: true}
	root, added := insert(c, b.root, k, v, c.prio(k), &ta)
	b.root, b.spineOK = root, false
	if added {
		b.n++
	}
}

// push appends k, greater than every key, by popping the right spine
// down to the first node that beats it.
func (b *Builder[K, V]) push(k K, v V, p uint32) {
	if !b.spineOK {
		b.loadSpine()
	}
	x := &node[K, V]{key: k, val: v, prio: p, owner: builderOwner}
	s := b.spine
	var last *node[K, V]
	// On equal priorities the spine node has the smaller key and wins.
	for len(s) > 0 && s[len(s)-1].prio < p {
		last = s[len(s)-1]
		s = s[:len(s)-1]
	}
	x.left = last
	if len(s) == 0 {
		b.root = x
	} else {
		s[len(s)-1].right = x
	}
	b.spine = append(s, x)
	b.n++
	b.max, b.hasMax = k, true
}

// loadSpine collects the right spine, copying nodes it does not own.
func (b *Builder[K, V]) loadSpine() {
	s := b.spine[:0]
	link := &b.root
	for t := *link; t != nil; t = t.right {
		if t.owner != builderOwner {
			t = clone(t, builderOwner)
			*link = t
		}
		s = append(s, t)
		link = &t.right
	}
	b.spine, b.spineOK = s, true
}

// Delete removes k, if present.
func (b *Builder[K, V]) Delete(k K) {
	c := b.cfg
	if b.root == nil || find(c, b.root, k) == nil {
		return
	}
	ta := alloc[K, V]{owner: builderOwner, inPlace: true}
	b.root = remove(c, b.root, k, &ta)
	b.n--
	b.spineOK = false
	if b.hasMax && c.compare(k, b.max) == 0 {
		var zero K
		b.max, b.hasMax = zero, false
	}
}

// Map returns the map built so far. The builder stays usable: the nodes
// it created become part of the returned Map and immutable, and later
// changes copy them.
func (b *Builder[K, V]) Map() Map[K, V] {
	freeze(b.root)
	b.spineOK = false
	clear(b.spine)
	b.spine = b.spine[:0]
	return Map[K, V]{root: b.root, n: b.n, cfg: b.cfg}
}

// freeze gives up the builder's ownership of every node reachable from
// t. Its nodes hang only below its nodes, so it visits only those and
// their immediate children.
func freeze[K, V any](t *node[K, V]) {
	if t == nil || t.owner != builderOwner {
		return
	}
	var buf [64]*node[K, V]
	s := append(buf[:0], t)
	for len(s) > 0 {
		t := s[len(s)-1]
		s = s[:len(s)-1]
		t.owner = noOwner
		if t.left != nil && t.left.owner == builderOwner {
			s = append(s, t.left)
		}
		if t.right != nil && t.right.owner == builderOwner {
			s = append(s, t.right)
		}
	}
}
