package treap

// Owner names one writer's run of in-place edits; see SetOwned. The
// zero Owner and the largest one are reserved: use 1 to MaxOwner.
type Owner uint32

const (
	noOwner      Owner = 0
	builderOwner Owner = ^Owner(0)
	// MaxOwner is the largest Owner a caller may use.
	MaxOwner = builderOwner - 1
)

// SetOwned is Set for a map that one writer changes while readers read
// it, without copying the path to k each time. Nodes that earlier
// SetOwned and DeleteOwned calls with the same owner made are changed in
// place: the new subtree, expected O(1) nodes, is linked into the lowest
// of them on the path with one atomic store, so that a reader holding m
// sees the change whole or not at all. Other nodes are copied as Set
// copies them, and the copies belong to o.
//
// The returned Map replaces m in the writer's hands; a reader may still
// read m, and sees this and later changes in it. The caller guarantees
// that no Map it treats as immutable reaches a node of o: to freeze
// everything made so far, move on to a new Owner. An Owner must not come
// back while nodes it made are alive, unless Disown cleared them first.
// An Owner outside 1 to MaxOwner owns nothing: SetOwned is then Set.
func (m Map[K, V]) SetOwned(o Owner, k K, v V) Map[K, V] {
	c := m.config()
	if !validOwner(o) {
		return m.Set(k, v)
	}
	p := c.prio(k)
	a := alloc[K, V]{owner: o}
	var pbuf [64]*node[K, V]
	var lbuf [64]bool
	path, left := pbuf[:0], lbuf[:0]
	added := true
	var sub *node[K, V]
	t := m.root
	for {
		if t == nil {
			sub = a.new()
			sub.key, sub.val, sub.prio = k, v, p
			break
		}
		d := c.compare(k, t.key)
		if d == 0 {
			sub = clone(t, o)
			sub.key, sub.val = k, v
			added = false
			break
		}
		if p > t.prio || (p == t.prio && d < 0) {
			x := a.new()
			x.key, x.val, x.prio = k, v, p
			var eq *node[K, V]
			x.left, x.right, eq = split3(c, t, k, &a)
			added = eq == nil
			sub = x
			break
		}
		path, left = append(path, t), append(left, d < 0)
		if d < 0 {
			t = t.left
		} else {
			t = t.right
		}
	}
	n := m.n
	if added {
		n++
	}
	return Map[K, V]{root: publish(o, m.root, path, left, sub), n: n, cfg: c}
}

// DeleteOwned is Delete done as SetOwned does Set: in place in o's
// nodes, published with one atomic store. If k is absent it returns m
// and changes nothing. An Owner outside 1 to MaxOwner makes it Delete.
func (m Map[K, V]) DeleteOwned(o Owner, k K) Map[K, V] {
	if m.root == nil {
		return m
	}
	if !validOwner(o) {
		return m.Delete(k)
	}
	c := m.cfg
	var pbuf [64]*node[K, V]
	var lbuf [64]bool
	path, left := pbuf[:0], lbuf[:0]
	t := m.root
	for t != nil {
		d := c.compare(k, t.key)
		if d == 0 {
			break
		}
		path, left = append(path, t), append(left, d < 0)
		if d < 0 {
			t = t.left
		} else {
			t = t.right
		}
	}
	if t == nil {
		return m
	}
	a := alloc[K, V]{owner: o}
	sub := join(t.left, t.right, &a)
	return Map[K, V]{root: publish(o, m.root, path, left, sub), n: m.n - 1, cfg: c}
}

// publish links sub, a new subtree no reader can reach yet, in place of
// the child of path's last node on the side left says, and returns the
// root. It stores into the lowest node on the path that o owns, copying
// the nodes below it; with none, the copies reach up to a new root.
func publish[K, V any](o Owner, root *node[K, V], path []*node[K, V], left []bool, sub *node[K, V]) *node[K, V] {
	for i := len(path) - 1; i >= 0; i-- {
		p := path[i]
		if p.owner == o {
			if left[i] {
				storeLink(&p.left, sub)
			} else {
				storeLink(&p.right, sub)
			}
			return root
		}
		n := clone(p, o)
		if left[i] {
			n.left = sub
		} else {
			n.right = sub
		}
		sub = n
	}
	return sub
}

// validOwner reports whether o may own nodes: the zero Owner marks a
// persistent Map's nodes and the largest a Builder's.
func validOwner(o Owner) bool { return o != noOwner && o <= MaxOwner }

// Disown gives up every Owner's claim on the nodes of m, so that no later
// edit changes them in place: a writer whose Owners wrap around calls it
// on every map it keeps before it reuses one. It costs O(n). Readers may
// read m meanwhile; other writers must not change it.
func (m Map[K, V]) Disown() {
	if m.root == nil {
		return
	}
	var buf [64]*node[K, V]
	s := append(buf[:0], m.root)
	for len(s) > 0 {
		t := s[len(s)-1]
		s = s[:len(s)-1]
		if t.owner != builderOwner {
			t.owner = noOwner
		}
		if t.left != nil {
			s = append(s, t.left)
		}
		if t.right != nil {
			s = append(s, t.right)
		}
	}
}
