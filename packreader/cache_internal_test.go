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

// TestFrameBuffersOutliveReader: the buffers a closed Reader's cache held
// serve the next Reader's frames (framePools), except one a read still
// copies from, which waits for that read.
func TestFrameBuffersOutliveReader(t *testing.T) {
	const n = 64 << 10
	c := newFrameCache(16 * n)
	mine := map[*byte]bool{}
	var busy *cacheEntry
	for i := range uint32(8) {
		b := c.buffer(n)[:n]
		if cap(b) < n+decodeSlack {
			t.Fatalf("buffer of capacity %d for a frame of %d", cap(b), n)
		}
		e := c.put(i, b)
		if i == 0 {
			busy = e // still being copied from
			continue
		}
		mine[&b[:1][0]] = true
		e.release()
	}
	c.clear()
	// sync.Pool drops some of what it is given under the race detector,
	// and a garbage collection may empty it: one reuse is the claim.
	reused := 0
	for range 8 {
		b := poolBuffer(bufferSize(n))
		if b == nil {
			break
		}
		p := &b[:1][0]
		if p == &busy.b[:1][0] {
			t.Fatal("the buffer of a frame a read is copying from was reused")
		}
		if mine[p] {
			reused++
		}
	}
	if reused == 0 {
		t.Error("no buffer of the closed cache was reused")
	}
	busy.release()
}
