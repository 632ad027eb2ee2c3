package mem_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/packfs/packfs/layer/mem"
)

// TestSmallFirstWriteInline checks the files whose first write brings
// its bytes in the allocation of the file's state (up to 132 bytes):
// a first write at an offset, appends that grow the tail in place and
// past its room, overwrites and truncates, each checked against a model
// and against every snapshot taken before, which must keep its bytes.
func TestSmallFirstWriteInline(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		f := mem.New()
		h, err := f.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		var model []byte
		type kept struct {
			s    *mem.Snapshot
			want []byte
		}
		var snaps []kept
		for step := range 12 {
			switch op := rng.IntN(4); {
			case op < 3 || step == 0:
				off := rng.IntN(len(model) + 40)
				if step == 0 {
					off = rng.IntN(60)
				}
				p := make([]byte, 1+rng.IntN(150))
				for i := range p {
					p[i] = byte(rng.IntN(255) + 1)
				}
				if _, err := h.WriteAt(p, int64(off)); err != nil {
					t.Fatal(err)
				}
				if end := off + len(p); end > len(model) {
					model = append(model, make([]byte, end-len(model))...)
				}
				copy(model[off:], p)
			default:
				size := rng.IntN(len(model) + 20)
				if err := h.Truncate(int64(size)); err != nil {
					t.Fatal(err)
				}
				if size > len(model) {
					model = append(model, make([]byte, size-len(model))...)
				}
				model = model[:size]
			}
			snaps = append(snaps, kept{f.Snapshot(), bytes.Clone(model)})
			got := make([]byte, len(model)+10)
			n, err := h.ReadAt(got, 0)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if !bytes.Equal(got[:n], model) {
				t.Fatalf("seed %d step %d: the file reads %q, want %q", seed, step, got[:n], model)
			}
			for i, k := range snaps {
				b, err := k.s.ReadFile("f")
				if err != nil || !bytes.Equal(b, k.want) {
					t.Fatalf("seed %d step %d: snapshot %d reads %q (%v), want %q", seed, step, i, b, err, k.want)
				}
			}
		}
		h.Close()
	}
}
