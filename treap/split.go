package treap

// Split returns the entries of m with keys less than k and those with
// keys greater than or equal to k. It copies O(log n) nodes and counts the
// smaller half, so it costs O(log n + min(len(less), len(rest))).
func (m Map[K, V]) Split(k K) (less, rest Map[K, V]) {
	less, rest = m.Clear(), m.Clear()
	if m.root == nil {
		return less, rest
	}
	c := m.cfg
	if mk, _, _ := m.Min(); c.compare(mk, k) >= 0 {
		return less, m
	}
	if mk, _, _ := m.Max(); c.compare(mk, k) < 0 {
		return m, rest
	}
	var pa alloc[K, V]
	less.root, rest.root = split2(c, m.root, k, &pa)
	less.n = countFirst(less.root, rest.root, m.n)
	rest.n = m.n - less.n
	return less, rest
}

// Join returns the union of left and right, whose keys must all be less
// than right's; it then costs O(log n) and copies only the nodes on the
// facing edges of the two trees. Join never panics: if the precondition
// does not hold, or the maps were made by different New calls, it inserts
// right's entries into left one by one (right's values win on equal keys),
// and the result is still correct. The result has left's order and hash
// (right's if left is a zero Map).
func Join[K, V any](left, right Map[K, V]) Map[K, V] {
	switch {
	case right.root == nil:
		if left.cfg == nil {
			return right
		}
		return left
	case left.root == nil:
		if left.cfg == nil {
			return right
		}
		if left.cfg == right.cfg || (left.cfg.ordered && right.cfg.ordered) {
			return Map[K, V]{root: right.root, n: right.n, cfg: left.cfg}
		}
	case left.cfg == right.cfg || (left.cfg.ordered && right.cfg.ordered):
		lk, _, _ := left.Max()
		rk, _, _ := right.Min()
		if left.cfg.cmp(lk, rk) < 0 {
			var pa alloc[K, V]
			return Map[K, V]{root: join(left.root, right.root, &pa), n: left.n + right.n, cfg: left.cfg}
		}
	}
	b := left.Builder()
	for k, v := range right.All() {
		b.Set(k, v)
	}
	return b.Map()
}

// DeleteRange returns m without the keys k with lo <= k < hi. It costs
// O(log n) plus the size of the removed part, which it counts; if nothing
// is in range it returns m and allocates nothing.
func (m Map[K, V]) DeleteRange(lo, hi K) Map[K, V] {
	if m.root == nil {
		return m
	}
	c := m.cfg
	if c.compare(lo, hi) >= 0 {
		return m
	}
	// The first key >= lo: if there is none, or it is >= hi, the range is empty.
	var first *node[K, V]
	for t := m.root; t != nil; {
		if c.compare(t.key, lo) >= 0 {
			first, t = t, t.left
		} else {
			t = t.right
		}
	}
	if first == nil || c.compare(first.key, hi) >= 0 {
		return m
	}
	var pa alloc[K, V]
	a, rest := split2(c, m.root, lo, &pa)
	mid, b := split2(c, rest, hi, &pa)
	return Map[K, V]{root: join(a, b, &pa), n: m.n - count(mid), cfg: c}
}

// count returns the number of nodes in the tree t.
func count[K, V any](t *node[K, V]) int {
	if t == nil {
		return 0
	}
	var buf [64]*node[K, V]
	s := append(buf[:0], t)
	n := 0
	for len(s) > 0 {
		t := s[len(s)-1]
		s = s[:len(s)-1]
		n++
		if t.left != nil {
			s = append(s, t.left)
		}
		if t.right != nil {
			s = append(s, t.right)
		}
	}
	return n
}

// countFirst returns the size of a given that a and b hold total nodes
// together, counting both in turn so that it takes the time of the smaller.
func countFirst[K, V any](a, b *node[K, V], total int) int {
	var bufA, bufB [64]*node[K, V]
	sa, sb := bufA[:0], bufB[:0]
	if a != nil {
		sa = append(sa, a)
	}
	if b != nil {
		sb = append(sb, b)
	}
	na, nb := 0, 0
	for {
		if len(sa) == 0 {
			return na
		}
		t := sa[len(sa)-1]
		sa = sa[:len(sa)-1]
		na++
		if t.left != nil {
			sa = append(sa, t.left)
		}
		if t.right != nil {
			sa = append(sa, t.right)
		}
		if len(sb) == 0 {
			return total - nb
		}
		t = sb[len(sb)-1]
		sb = sb[:len(sb)-1]
		nb++
		if t.left != nil {
			sb = append(sb, t.left)
		}
		if t.right != nil {
			sb = append(sb, t.right)
		}
	}
}
