package treap

import "testing"

// FuzzOps reads the input as a sequence of three-byte operations
// (op, a, b) on small integer keys and checks every version against the
// model, and each previous version against its own.
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 2, 2, 3, 1, 0})
	f.Add([]byte{1, 5, 9, 7, 0, 200, 6, 100, 1, 5, 10, 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		m := configs[int(data[0])%len(configs)].make()
		data = data[1:]
		if len(data) > 3*200 {
			data = data[:3*200] // at most 200 operations: long inputs add little
		}
		var md model
		prev, prevmd := m, md
		for step := 0; len(data) >= 3; step++ {
			op, a, b := data[0], int(data[1]), int(data[2])
			data = data[3:]
			switch op % 8 {
			case 0, 1, 2:
				m, md = m.Set(a, b), md.set(a, b)
			case 3, 4:
				m, md = m.Delete(a), md.delete(a)
			case 5:
				hi := a + b%32 - 2
				m, md = m.DeleteRange(a, hi), md.deleteRange(a, hi)
			case 6:
				less, rest := m.Split(a)
				i, _ := md.find(a)
				if err := verify(less, md[:i], b); err != nil {
					t.Fatalf("step %d: Split(%d) less: %v", step, a, err)
				}
				if err := verify(rest, md[i:], b); err != nil {
					t.Fatalf("step %d: Split(%d) rest: %v", step, a, err)
				}
				if b%2 == 0 {
					m = Join(less, rest)
				} else {
					m = Join(rest, less)
				}
			case 7:
				bl := m.Builder()
				for i := range b % 8 {
					k := (a + i*(b%5)) % 256
					if i%3 == 2 {
						bl.Delete(k)
						md = md.delete(k)
					} else {
						bl.Set(k, i)
						md = md.set(k, i)
					}
					if i == 3 {
						mid := bl.Map()
						if err := verify(mid, md, a); err != nil {
							t.Fatalf("step %d: builder mid-way: %v", step, err)
						}
					}
				}
				m = bl.Map()
			}
			if err := verify(m, md, b); err != nil {
				t.Fatalf("step %d: op %d %d %d: %v", step, op%8, a, b, err)
			}
			if err := verify(prev, prevmd, a); err != nil {
				t.Fatalf("step %d: op %d %d %d: previous version changed: %v", step, op%8, a, b, err)
			}
			prev, prevmd = m, md
		}
	})
}
