package mem_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// extents lists f's data extents with SeekData and SeekHole, checking
// that each call moves the offset where it says and that the walk ends
// with ENXIO at or before size.
func extents(t *testing.T, f layer.File, size int64) [][2]int64 {
	t.Helper()
	var out [][2]int64
	for off := int64(0); ; {
		d, err := f.Seek(off, layer.SeekData)
		if errors.Is(err, syscall.ENXIO) {
			return out
		}
		if err != nil || d < off || d >= size {
			t.Fatalf("Seek(%d, SeekData) = %d, %v (size %d)", off, d, err, size)
		}
		h, err := f.Seek(d, layer.SeekHole)
		if err != nil || h <= d || h > size {
			t.Fatalf("Seek(%d, SeekHole) = %d, %v (size %d)", d, h, err, size)
		}
		if cur, _ := f.Seek(0, io.SeekCurrent); cur != h {
			t.Fatalf("the offset after Seek(%d, SeekHole) = %d is %d", d, h, cur)
		}
		out = append(out, [2]int64{d, h})
		if h == size {
			return out
		}
		off = h
	}
}

// TestSeekDataHole writes runs of bytes at random offsets, up to a TiB
// and near the largest size, truncates now and then, and walks the file's
// extents with SeekData and SeekHole: every byte written and still in the
// file lies in a data extent, every byte outside the extents reads as
// zeros, and the extents hold no more than the 64 KiB chunks the writes
// and truncations touched, so that a copy of a sparse file costs its
// data.
func TestSeekDataHole(t *testing.T) {
	for seed := range 20 {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 3))
			f, err := mem.New().OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			type run struct{ off, n int64 }
			var runs []run
			var size int64
			// The chunks any write touched, and the one a truncation
			// cut in: what the extents may hold.
			touched := map[int64]bool{}
			for range 12 {
				switch rng.IntN(5) {
				case 0:
					size = []int64{0, 1, 65536, 1 << 20, size / 2, size + 1<<30}[rng.IntN(6)]
					if err := f.Truncate(size); err != nil {
						t.Fatal(err)
					}
					touched[(size-1)>>16] = true
				default:
					off := []int64{rng.Int64N(1 << 20), rng.Int64N(1 << 40), 1<<62 + rng.Int64N(1<<20), size}[rng.IntN(4)]
					n := 1 + rng.Int64N(200_000)
					if _, err := f.WriteAt(slices.Repeat([]byte{byte(1 + rng.IntN(255))}, int(n)), off); err != nil {
						t.Fatal(err)
					}
					runs = append(runs, run{off, n})
					for c := off >> 16; c <= (off+n-1)>>16; c++ {
						touched[c] = true
					}
					size = max(size, off+n)
				}
				// The runs still in the file, cut at its end.
				kept := runs[:0]
				for _, r := range runs {
					if r.off < size {
						kept = append(kept, run{r.off, min(r.n, size-r.off)})
					}
				}
				runs = kept
			}
			ext := extents(t, f, size)
			in := func(off int64) bool {
				for _, e := range ext {
					if off >= e[0] && off < e[1] {
						return true
					}
				}
				return false
			}
			for _, r := range runs {
				for _, off := range []int64{r.off, r.off + r.n/2, r.off + r.n - 1} {
					if !in(off) {
						t.Fatalf("byte %d, written, is in no data extent of %v", off, ext)
					}
				}
			}
			var data int64
			for _, e := range ext {
				data += e[1] - e[0]
			}
			if data > int64(len(touched))<<16 {
				t.Errorf("extents of %d bytes for %d chunks touched: %v", data, len(touched), ext)
			}
			// Holes read as zeros: the byte before each extent and after it.
			buf := make([]byte, 1)
			for _, e := range ext {
				for _, off := range []int64{e[0] - 1, e[1]} {
					if off < 0 || off >= size || in(off) {
						continue
					}
					if _, err := f.ReadAt(buf, off); err != nil || buf[0] != 0 {
						t.Fatalf("byte %d, in a hole, reads %d, %v", off, buf[0], err)
					}
				}
			}
		})
	}
}

// TestSeekDataHoleErrors checks the edges lseek(2) has: ENXIO at and past
// the end and in an empty file, EINVAL for a negative offset and for a
// directory.
func TestSeekDataHoleErrors(t *testing.T) {
	fsys := mem.New()
	f, err := fsys.OpenFile("f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, whence := range []int{layer.SeekData, layer.SeekHole} {
		if _, err := f.Seek(0, whence); !errors.Is(err, syscall.ENXIO) {
			t.Errorf("Seek(0, %d) of an empty file = %v, want ENXIO", whence, err)
		}
	}
	if _, err := f.WriteAt([]byte("x"), 1<<20); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		off    int64
		whence int
		want   int64
		err    error
	}{
		{0, layer.SeekData, 1 << 20, nil},
		{0, layer.SeekHole, 0, nil},
		{1 << 20, layer.SeekHole, 1<<20 + 1, nil},
		{1<<20 + 1, layer.SeekData, 0, syscall.ENXIO},
		{1<<20 + 1, layer.SeekHole, 0, syscall.ENXIO},
		{-1, layer.SeekData, 0, syscall.EINVAL},
	} {
		got, err := f.Seek(c.off, c.whence)
		if c.err != nil && !errors.Is(err, c.err) || c.err == nil && (err != nil || got != c.want) {
			t.Errorf("Seek(%d, %d) = %d, %v; want %d, %v", c.off, c.whence, got, err, c.want, c.err)
		}
	}
	if err := fsys.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := fsys.Open("d")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.(io.Seeker).Seek(0, layer.SeekData); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Seek(0, SeekData) of a directory = %v, want EINVAL", err)
	}
}
