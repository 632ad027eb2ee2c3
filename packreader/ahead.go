package packreader

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/packfs/packfs/internal/packformat"
)

// A file of a compressed pack read in sequence, by Read or by ReadAt
// calls each starting where the one before ended, has the frames after
// the one it reads decompressed ahead of it, on other goroutines, into
// the Reader's cache: so that a reader with a small buffer (io.Copy's
// 32 KiB, bufio's 4 KiB) finds them there, decompressed on every core,
// as WriteTo and ReadFile have them.
//
//   - A frame is read ahead once its file has read two pieces in a row,
//     up to aheadFrames frames past the one the last read ended in, on
//     at most as many goroutines (one a frame); a file read at random
//     offsets gets none.
//   - A goroutine takes the Reader's read lock itself, and with it the
//     fault guard of the mapping (rlock), checks the frame table entry,
//     and claims the frame in the cache (frameCache.claim): a read that
//     comes to a frame being decompressed waits for it rather than
//     decompressing it again, and one that comes first decompresses it
//     itself, so that the goroutine finds it claimed and does nothing.
//   - A frame that fails (a bad CRC or zstd frame, a fault in the
//     mapping) is dropped: the read that comes to it decompresses it
//     and reports its error there, at that offset, as it would without
//     read-ahead.
//   - Frames read ahead are cached as any other, under the cache's
//     bound, and get one pass of the CLOCK hand before they may be
//     evicted; a cache too small to keep a few frames beside them
//     (WithCacheSize) gets no read-ahead.
//   - Close of the file stops the goroutines that have not started and
//     waits for those that have (a frame each).
//
// A file holds a readAhead only once it reads from a compressed pack: the
// handle of an uncompressed pack, which never reads ahead, stays small
// (an Open of a small file allocates the handle and nothing else).
type readAhead struct {
	end   int64  // where the file's last read ended
	inSeq int    // reads in a row that started where the one before ended
	next  uint64 // the first frame not read ahead yet

	// endFrame is the first frame a goroutine found past the content (or
	// not a frame), plus one; 0 while none did. The reader's goroutine
	// never looks frames up for read-ahead, so that a fault in the
	// mapping there cannot fail a read whose own bytes were there.
	endFrame atomic.Uint64

	wg      sync.WaitGroup
	running atomic.Int32
	stop    atomic.Bool
}

// aheadFrames returns how many frames a file's read-ahead keeps going
// at once, 0 for none: one per core up to 4, and never more than an
// eighth of the cache's bound.
func (r *Reader) aheadFrames() int {
	if !r.zstd || r.cache == nil {
		return 0
	}
	n := min(runtime.GOMAXPROCS(0), 4)
	return int(min(int64(n), r.cache.max/packformat.ZstdFrameSize/8))
}

// readAhead notes a read of n bytes at off that just ended in frame
// f.at.i, and reads ahead if the file reads in sequence. The caller
// holds f.mu and r.mu (for reading).
func (f *file) readAhead(off int64, n int) {
	depth := f.r.aheadFrames()
	if depth == 0 {
		return
	}
	if f.ahead == nil {
		f.ahead = new(readAhead)
	}
	a := f.ahead
	if off != a.end || off == 0 {
		a.inSeq, a.next = 0, 0
	} else {
		a.inSeq++
	}
	a.end = off + int64(n)
	if a.inSeq < 1 || !f.at.valid || f.closed {
		return
	}
	cur := f.at.i
	a.next = max(a.next, cur+1)
	stop := cur + uint64(depth)
	if e := a.endFrame.Load(); e != 0 {
		stop = min(stop, e-2)
	}
	for a.next <= stop && a.running.Load() < int32(depth) {
		j := a.next
		a.next++
		a.running.Add(1)
		a.wg.Add(1)
		go f.fetch(j)
	}
}

// fetch decompresses frame j of the file's content into the cache,
// unless it is cached or claimed already, or is not a zstd frame, or the
// file was closed. It runs on its own goroutine and touches nothing of
// f but what never changes (r, name, rc, ahead once set) and f.ahead's
// atomics. Its
// error, set by runlock on a fault in the mapping, goes nowhere: a read
// that comes to the frame reports its own.
func (f *file) fetch(j uint64) (err error) {
	a := f.ahead
	defer a.wg.Done()
	defer a.running.Add(-1)
	if a.stop.Load() {
		return nil
	}
	r := f.r
	g, err := r.rlock("read", f.name)
	if err != nil {
		return err
	}
	defer r.runlock("read", f.name, g, &err)
	if a.stop.Load() {
		return nil
	}
	fr, raw, err := r.frame(j)
	if err != nil || fr.Pos >= f.rc.Off+f.rc.Size {
		for {
			e := a.endFrame.Load()
			if e != 0 && e <= j+1 || a.endFrame.CompareAndSwap(e, j+1) {
				break
			}
		}
		return err
	}
	if fr.Stored == 0 || uint64(fr.Stored) == raw {
		return nil
	}
	e, mine := r.cache.claim(uint32(j), int(raw), true)
	defer e.release()
	if mine {
		return r.decodeClaimed(e, j, fr, raw)
	}
	return nil
}

// stopReadAhead stops the file's read-ahead and waits for goroutines
// that started. The caller holds f.mu.
func (f *file) stopReadAhead() {
	if f.ahead != nil {
		f.ahead.stop.Store(true)
		f.ahead.wg.Wait()
	}
}
