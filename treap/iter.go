package treap

import "iter"

// The iterators walk the tree with an explicit stack of at most the
// tree's height, kept on the goroutine stack for heights up to 64.

// All returns an iterator over the entries in ascending key order.
func (m Map[K, V]) All() iter.Seq2[K, V] {
	root := m.root
	return func(yield func(K, V) bool) {
		var buf [64]*node[K, V]
		s := buf[:0]
		for t := root; t != nil; t = t.left {
			s = append(s, t)
		}
		ascend(s, yield)
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
		var buf [64]*node[K, V]
		s := buf[:0]
		for t := root; t != nil; {
			if c.compare(t.key, k) >= min {
				s = append(s, t)
				t = t.left
			} else {
				t = t.right
			}
		}
		ascend(s, yield)
	}
}

// ascend yields the nodes on stack s and their right subtrees in order.
func ascend[K, V any](s []*node[K, V], yield func(K, V) bool) {
	for len(s) > 0 {
		t := s[len(s)-1]
		s = s[:len(s)-1]
		if !yield(t.key, t.val) {
			return
		}
		for t = t.right; t != nil; t = t.left {
			s = append(s, t)
		}
	}
}

// Backward returns an iterator over the entries in descending key order.
func (m Map[K, V]) Backward() iter.Seq2[K, V] {
	root := m.root
	return func(yield func(K, V) bool) {
		var buf [64]*node[K, V]
		s := buf[:0]
		for t := root; t != nil; t = t.right {
			s = append(s, t)
		}
		for len(s) > 0 {
			t := s[len(s)-1]
			s = s[:len(s)-1]
			if !yield(t.key, t.val) {
				return
			}
			for t = t.left; t != nil; t = t.right {
				s = append(s, t)
			}
		}
	}
}
