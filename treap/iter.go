package treap

import "iter"

// The iterators walk the tree with an explicit stack of at most the
// tree's height, kept on the goroutine stack for heights up to 64. They
// load each child once, atomically, and keep bounds, so that they stay
// exact while an Owner edits the map in place (see SetOwned).
//
// Such an edit may link a new key below a node that an earlier edit has
// since unlinked, where an iterator that reached that node before can
// still come upon it out of place. So each node pushed must lie below its
// bound, the nearest ancestor the walk went left from (above it, for
// Backward, going right); one that does not is skipped with the subtree
// on its far side, which holds no key that was there when the walk began.
// And a node is yielded only beyond the last key yielded. What an
// iterator yields is then strictly in order, and holds every entry that
// no edit touched while it ran.

// step is an iterator's stack entry: a node not yet yielded, and the node
// whose key bounds it (nil for none).
type step[K, V any] struct{ t, bound *node[K, V] }

// pushLeft pushes t and its left spine, each below its bound: the nearest
// ancestor pushed, or bound for t. A node not below it is out of place:
// it is skipped with its right subtree, and the walk goes on to its left.
func pushLeft[K, V any](c *config[K], s []step[K, V], t, bound *node[K, V]) []step[K, V] {
	for ; t != nil; t = loadLink(&t.left) {
		if bound != nil && c.compare(t.key, bound.key) >= 0 {
			continue
		}
		s = append(s, step[K, V]{t, bound})
		bound = t
	}
	return s
}

// pushRight is pushLeft for descending walks: t and its right spine,
// each above its bound.
func pushRight[K, V any](c *config[K], s []step[K, V], t, bound *node[K, V]) []step[K, V] {
	for ; t != nil; t = loadLink(&t.right) {
		if bound != nil && c.compare(t.key, bound.key) <= 0 {
			continue
		}
		s = append(s, step[K, V]{t, bound})
		bound = t
	}
	return s
}

// All returns an iterator over the entries in ascending key order.
func (m Map[K, V]) All() iter.Seq2[K, V] {
	root, c := m.root, m.cfg
	return func(yield func(K, V) bool) {
		var buf [64]step[K, V]
		ascend(c, pushLeft(c, buf[:0], root, nil), nil, 1, yield)
	}
}

// From returns an iterator over the entries with keys >= k, ascending.
func (m Map[K, V]) From(k K) iter.Seq2[K, V] {
	return m.from(k, 0)
}

// After returns an iterator over the entries with keys > k, ascending.
// It pages through a listing: continue After the last key seen.
func (m Map[K, V]) After(k K) iter.Seq2[K, V] {
	return m.from(k, 1)
}

// from iterates ascending over the keys t with cmp(t, k) >= min.
func (m Map[K, V]) from(k K, min int) iter.Seq2[K, V] {
	root, c := m.root, m.cfg
	return func(yield func(K, V) bool) {
		var buf [64]step[K, V]
		s := buf[:0]
		var bound *node[K, V]
		for t := root; t != nil; {
			if c.compare(t.key, k) < min {
				t = loadLink(&t.right)
			} else if bound != nil && c.compare(t.key, bound.key) >= 0 {
				t = loadLink(&t.left) // out of place
			} else {
				s = append(s, step[K, V]{t, bound})
				bound = t
				t = loadLink(&t.left)
			}
		}
		ascend(c, s, &k, min, yield)
	}
}

// ascend yields the nodes on stack s and their right subtrees in order,
// each only if its key k has cmp(k, *lo) >= min (lo nil: any); after a
// yield, lo is the key yielded and min 1.
func ascend[K, V any](c *config[K], s []step[K, V], lo *K, min int, yield func(K, V) bool) {
	var last K
	for len(s) > 0 {
		e := s[len(s)-1]
		s = s[:len(s)-1]
		t := e.t
		if lo == nil || c.compare(t.key, *lo) >= min {
			if !yield(t.key, t.val) {
				return
			}
			last, lo, min = t.key, &last, 1
		}
		s = pushLeft(c, s, loadLink(&t.right), e.bound)
	}
}

// Backward returns an iterator over the entries in descending key order.
func (m Map[K, V]) Backward() iter.Seq2[K, V] {
	root, c := m.root, m.cfg
	return func(yield func(K, V) bool) {
		var buf [64]step[K, V]
		s := pushRight(c, buf[:0], root, nil)
		var last K
		var hi *K
		for len(s) > 0 {
			e := s[len(s)-1]
			s = s[:len(s)-1]
			t := e.t
			if hi == nil || c.compare(t.key, *hi) < 0 {
				if !yield(t.key, t.val) {
					return
				}
				last, hi = t.key, &last
			}
			s = pushRight(c, s, loadLink(&t.left), e.bound)
		}
	}
}
