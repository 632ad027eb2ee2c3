package treap

import "fmt"

// Check verifies the invariants of m: keys in strictly ascending order,
// every priority equal to the one its key's hash gives, every node's
// priority above its children's (ties broken by key), no node still
// owned by a Builder, and the count. It returns an error describing the
// first violation, or nil. It costs O(n).
func (m Map[K, V]) Check() error {
	if m.root == nil {
		if m.n != 0 {
			return fmt.Errorf("treap: empty tree but Len %d", m.n)
		}
		return nil
	}
	c := m.cfg
	if c == nil {
		return fmt.Errorf("treap: Map has nodes but no config")
	}
	var buf [64]*node[K, V]
	s := buf[:0]
	n := 0
	var prev *node[K, V]
	for t := m.root; t != nil; t = t.left {
		s = append(s, t)
	}
	for len(s) > 0 {
		t := s[len(s)-1]
		s = s[:len(s)-1]
		if n++; n > m.n {
			return fmt.Errorf("treap: more than Len %d nodes", m.n)
		}
		if prev != nil && c.cmp(prev.key, t.key) >= 0 {
			return fmt.Errorf("treap: key %v not below next key %v", prev.key, t.key)
		}
		if t.owner == builderOwner {
			return fmt.Errorf("treap: node %v still owned by a Builder", t.key)
		}
		if p := c.prio(t.key); p != t.prio {
			return fmt.Errorf("treap: node %v has priority %#x, its hash gives %#x", t.key, t.prio, p)
		}
		for _, ch := range [2]*node[K, V]{t.left, t.right} {
			if ch != nil && (ch.prio > t.prio || ch.prio == t.prio && c.cmp(ch.key, t.key) < 0) {
				return fmt.Errorf("treap: child %v (priority %#x) beats parent %v (priority %#x)", ch.key, ch.prio, t.key, t.prio)
			}
		}
		prev = t
		for t = t.right; t != nil; t = t.left {
			s = append(s, t)
		}
	}
	if n != m.n {
		return fmt.Errorf("treap: %d nodes but Len %d", n, m.n)
	}
	return nil
}
