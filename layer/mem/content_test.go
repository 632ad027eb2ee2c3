package mem

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"unsafe"

	"github.com/packfs/packfs/internal/testsize"
)

var contentSeeds = flag.Int("mem.seeds", 8, "seeds for the randomized content test")

// TestContentRandom applies random writes, shared writes and truncates to
// a content and to a plain byte slice, and checks after each step that the
// new version matches, that every earlier version kept is unchanged, and
// that no write touched the memory a shared write gave.
func TestContentRandom(t *testing.T) {
	for seed := range *contentSeeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			var c *content
			var model []byte
			type kept struct {
				c    *content
				want []byte
			}
			var old []kept
			type sharedBuf struct{ mem, want []byte }
			var shared []sharedBuf
			steps := 300
			if testsize.Short() || raceEnabled {
				steps = 60
			}
			for step := range steps {
				// Sizes around the chunk and tree boundaries.
				limit := []int64{100, chunkSize * 3, chunkSize*fanout + 5*chunkSize}[rng.IntN(3)]
				switch op := rng.IntN(10); {
				case op < 5: // append
					p := randBytes(rng, rng.IntN(3*chunkSize/2)+1)
					t.Logf("append %d at %d", len(p), len(model))
					c = c.writeAt(p, int64(len(model)))
					model = append(model, p...)
				case op == 7: // a shared write, aligned or not
					off := rng.Int64N(limit)
					if rng.IntN(2) == 0 {
						off &^= chunkSize - 1
					}
					p := randBytes(rng, rng.IntN(3*chunkSize)+1)
					t.Logf("shared write %d at %d (size %d)", len(p), off, len(model))
					// The caller's memory, with bytes past p that no
					// write may touch.
					mem := append(bytes.Clone(p), bytes.Repeat([]byte{0xee}, 64)...)
					shared = append(shared, sharedBuf{mem, bytes.Clone(mem)})
					pin := new(int)
					c = c.writeShared(mem[:len(p)], off, pin)
					whole := (off+chunkSize-1)&^(chunkSize-1)+chunkSize <= off+int64(len(p))
					if whole && (c.pins == nil || c.pins.pin != any(pin)) {
						t.Fatalf("seed %d step %d: a shared write of whole chunks does not keep its pin", seed, step)
					}
					if end := int(off) + len(p); end > len(model) {
						model = append(model, make([]byte, end-len(model))...)
					}
					copy(model[off:], p)
				case op < 8: // overwrite or write past the end
					off := rng.Int64N(limit)
					p := randBytes(rng, rng.IntN(chunkSize)+1)
					t.Logf("write %d at %d (size %d)", len(p), off, len(model))
					c = c.writeAt(p, off)
					if end := int(off) + len(p); end > len(model) {
						model = append(model, make([]byte, end-len(model))...)
					}
					copy(model[off:], p)
				default: // truncate
					size := rng.Int64N(limit)
					t.Logf("truncate %d (size %d)", size, len(model))
					c = c.truncate(size)
					if int(size) <= len(model) {
						model = model[:size:size]
					} else {
						model = append(model, make([]byte, int(size)-len(model))...)
					}
				}
				if rng.IntN(8) == 0 {
					old = append(old, kept{c, bytes.Clone(model)})
				}
				if c.Size() != int64(len(model)) {
					t.Fatalf("seed %d step %d: size %d, want %d", seed, step, c.Size(), len(model))
				}
				if step%25 != 24 {
					// Random windows between full comparisons; see below.
				} else if got := c.bytes(); !bytes.Equal(got, model) {
					t.Fatalf("seed %d step %d: contents differ at %d", seed, step, firstDiff(got, model))
				}
				// A random ReadAt agrees with the model.
				for range 3 {
					if len(model) == 0 {
						break
					}
					off := rng.IntN(len(model))
					p := make([]byte, rng.IntN(2*chunkSize))
					n := c.readAt(p, int64(off))
					if want := min(len(p), len(model)-off); n != want || !bytes.Equal(p[:n], model[off:off+n]) {
						t.Fatalf("seed %d step %d: readAt(%d, %d) = %d bytes, want %d", seed, step, len(p), off, n, want)
					}
				}
				if step%50 != 49 && step != steps-1 {
					continue
				}
				for i, k := range old {
					if got := k.c.bytes(); !bytes.Equal(got, k.want) {
						t.Fatalf("seed %d step %d: kept version %d changed at %d", seed, step, i, firstDiff(got, k.want))
					}
				}
				for i, b := range shared {
					if !bytes.Equal(b.mem, b.want) {
						t.Fatalf("seed %d step %d: the memory of shared write %d was written to at %d", seed, step, i, firstDiff(b.mem, b.want))
					}
				}
			}
		})
	}
}

// TestContentWideWrites writes runs of many chunks at once, plain and
// shared, across the boundaries of the tree's leaves (fanout chunks) and
// past the capacity of a one-leaf tree, so that one write sets chunks in
// two leaves and grows the tree: each version matches its model, and
// versions kept from before stay as they were.
func TestContentWideWrites(t *testing.T) {
	leaf := int64(fanout * chunkSize)
	seeds, steps := 4, 24
	if testsize.Short() || raceEnabled {
		seeds, steps = 1, 12
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		var c *content
		var model []byte
		type kept struct {
			c    *content
			want []byte
		}
		var old []kept
		for step := range steps {
			// Around a boundary between leaves.
			edge := []int64{leaf, 2 * leaf, 3 * leaf}[rng.IntN(3)]
			off := edge - rng.Int64N(3*chunkSize) + rng.Int64N(3*chunkSize)
			if step == 0 {
				off = rng.Int64N(chunkSize) // from an empty file past a leaf
			}
			if rng.IntN(2) == 0 {
				off &^= chunkSize - 1
			}
			p := randBytes(rng, int(chunkSize*(2+rng.Int64N(fanout+4)))+rng.IntN(chunkSize))
			if rng.IntN(2) == 0 {
				c = c.writeShared(p, off, new(int))
			} else {
				c = c.writeAt(p, off)
			}
			if end := int(off) + len(p); end > len(model) {
				model = append(model, make([]byte, end-len(model))...)
			}
			copy(model[off:], p)
			if got := c.bytes(); !bytes.Equal(got, model) {
				t.Fatalf("seed %d step %d: write of %d at %d: contents differ at %d", seed, step, len(p), off, firstDiff(got, model))
			}
			if step%6 == 0 {
				old = append(old, kept{c, bytes.Clone(model)})
			}
			if rng.IntN(4) == 0 {
				size := rng.Int64N(int64(len(model)) + 1)
				c = c.truncate(size)
				model = append(model[:min(int(size), len(model)):min(int(size), len(model))], make([]byte, max(0, int(size)-len(model)))...)
			}
		}
		for i, k := range old {
			if got := k.c.bytes(); !bytes.Equal(got, k.want) {
				t.Fatalf("seed %d: kept version %d changed at %d", seed, i, firstDiff(got, k.want))
			}
		}
	}
}

// TestContentAppendCopiesNothing checks that appending in small pieces
// reuses the tail's capacity: the allocated bytes stay within a small
// factor of the data.
func TestContentAppendCopiesNothing(t *testing.T) {
	var c *content
	p := make([]byte, 100)
	allocs := testing.AllocsPerRun(1, func() {
		c = nil
		for range 10000 {
			c = c.writeAt(p, c.Size())
		}
	})
	// Each append makes one new content and, now and then, a chunk or a
	// tree node: the tail lives outside the tree and doubles, so chunk
	// reallocations are logarithmic and tree nodes change once a chunk.
	if allocs > 10000+1000 {
		t.Errorf("10000 appends made %v allocations", allocs)
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rng.Uint32())
	}
	p := make([]byte, n)
	rand.NewChaCha8(seed).Read(p)
	return p
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestContentSharedPins: the versions a shared write leads to keep its
// pin, through truncation, growth and later writes, and a version
// without a shared chunk has none.
func TestContentSharedPins(t *testing.T) {
	if size := unsafe.Sizeof(content{}); size > 64 {
		t.Errorf("a content takes %d bytes, past its 64-byte size class", size)
	}
	pin := new(int)
	p := bytes.Repeat([]byte{7}, 2*chunkSize)
	c := (*content)(nil).writeAt([]byte("head"), 0).writeShared(p, chunkSize, pin)
	for what, v := range map[string]*content{
		"shared":    c,
		"shorter":   c.truncate(chunkSize + 10),
		"longer":    c.truncate(10 * chunkSize),
		"written":   c.writeAt([]byte("x"), 5*chunkSize),
		"appended":  c.writeAt([]byte("y"), c.Size()),
		"overwrite": c.writeAt([]byte("z"), chunkSize+1),
	} {
		if v.pins == nil || v.pins.next != nil || v.pins.pin != any(pin) {
			t.Errorf("%s: pins %v, want the shared write's", what, v.pins)
		}
	}
	if got := c.bytes(); !bytes.Equal(got[chunkSize:], p) || string(got[:4]) != "head" {
		t.Errorf("contents differ at %d", firstDiff(got[chunkSize:], p))
	}
	if v := (*content)(nil).writeShared(p[:chunkSize-1], 1, pin); v.pins != nil {
		t.Errorf("a shared write of no whole chunk keeps pins %v", v.pins)
	}
}

// TestWriteSharedPinOfAnyType writes through a file's WriteShared with
// pins of types == cannot compare (a slice, a struct holding one, a func,
// a map): none panics, a run of writes from one slice or map keeps it
// once, and the file reads back what was written.
func TestWriteSharedPinOfAnyType(t *testing.T) {
	type holder struct{ b []byte }
	data := make([]byte, 8*chunkSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, pin := range []any{data, holder{data}, func() {}, map[int]int{}, &data} {
		f := New()
		h, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		w := h.(*file)
		for off := 0; off < len(data); off += chunkSize {
			p := data[off : off+chunkSize]
			if _, err := w.WriteShared(p, int64(off), true, func() ([]byte, any, error) { return p, pin, nil }); err != nil {
				t.Fatalf("%T: %v", pin, err)
			}
		}
		c := w.ino.cur.Load().state().data
		// A func's pointer is its code, not what it holds, and a holder
		// cannot compare: each write keeps its own, one node each.
		kept := 0
		for l := c.pins; l != nil; l = l.next {
			kept++
		}
		want := 1
		switch pin.(type) {
		case holder, func():
			want = len(data) / chunkSize
		}
		if kept != want {
			t.Errorf("%T: %d pins kept, want %d", pin, kept, want)
		}
		if got := c.bytes(); !bytes.Equal(got, data) {
			t.Errorf("%T: the file reads other bytes than were written", pin)
		}
		h.Close()
	}
}
