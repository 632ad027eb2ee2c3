package packwriter

import (
	"encoding/binary"
	"runtime"
	"sync"

	"github.com/packfs/packfs/internal/packformat"
)

// packed reports whether the pack's tables are stored in compressed
// groups: in every compressed pack.
func (w *writer) packed() bool { return w.v3 && w.st.zstd }

// packGroups cuts tables, the raw bytes from the index to the end of the
// attribute table laid out as in an uncompressed pack, into groups of
// packformat.GroupSize bytes, each shuffled (packformat.Shuffle) and
// compressed at the pack's level on every core, or kept raw if that is
// no smaller.
func (w *writer) packGroups(tables []byte, l packformat.TablesLayout) ([][]byte, error) {
	n := packformat.Groups(uint64(len(tables)))
	out := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan uint64)
	for range min(runtime.GOMAXPROCS(0), int(n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			enc, err := getEncoder(w.st.level)
			if err == nil {
				defer putEncoder(w.st.level, enc)
			}
			shuf := make([]byte, packformat.GroupSize)
			for g := range next {
				if err != nil {
					errs[g] = err
					continue
				}
				lo := g * packformat.GroupSize
				raw := tables[lo:min(lo+packformat.GroupSize, uint64(len(tables)))]
				l.Shuffle(shuf[:len(raw)], raw, lo)
				c := enc.EncodeAll(shuf[:len(raw)], nil)
				if len(c) >= len(raw) {
					c = raw
				}
				out[g] = c
			}
		}()
	}
	for g := range n {
		next <- g
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeGroups writes the groups from indexOff, then the group directory,
// and returns the directory's offset.
func (w *writer) writeGroups(out [][]byte, indexOff uint64) (uint64, error) {
	dir := make([]byte, 0, len(out)*packformat.GroupEntrySize)
	end := uint64(0)
	for g := range out {
		if _, err := w.out.Write(out[g]); err != nil {
			return 0, err
		}
		end += uint64(len(out[g]))
		dir = binary.LittleEndian.AppendUint64(dir, end)
	}
	if _, err := w.out.Write(dir); err != nil {
		return 0, err
	}
	return indexOff + end, nil
}
