package treap

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPrefixOrder checks that where two keys' prefixes differ they order
// the keys as strings.Compare does, on keys of 0 to 12 bytes from a small
// alphabet with NUL and 0xff in it, so that shared prefixes, padding and
// keys that are prefixes of others all come up; and that Get finds every
// key of a map of them and none of the others.
func TestPrefixOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 8))
	alphabet := "\x00\x01a\xfe\xff"
	key := func() string {
		var b strings.Builder
		for range r.IntN(13) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	m := NewOrdered[string, int]()
	in := map[string]bool{}
	for range 20_000 {
		a, b := key(), key()
		if pa, pb := prefix8(a), prefix8(b); pa != pb {
			if want := strings.Compare(a, b); (pa < pb) != (want < 0) {
				t.Fatalf("prefixes order %q and %q as %v, strings.Compare gives %d", a, b, pa < pb, want)
			}
		}
		m = m.Set(a, len(a))
		in[a] = true
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	for range 20_000 {
		k := key()
		if _, ok := m.Get(k); ok != in[k] {
			t.Fatalf("Get(%q) found %v, want %v", k, ok, in[k])
		}
	}
}
