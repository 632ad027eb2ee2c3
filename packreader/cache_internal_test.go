package packreader

import "testing"

func TestFrameCacheReuse(t *testing.T) {
	c := newFrameCache(256 << 10)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range uint32(40) {
			if e := c.get(i); e != nil {
				e.release()
				continue
			}
			b := c.buffer(64 << 10)
			b = b[:64<<10]
			e := c.put(i, b)
			e.release()
		}
	})
	if allocs > 45 {
		t.Errorf("%v allocations per run of 40 frames", allocs)
	}
}
