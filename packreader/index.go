package packreader

import (
	"cmp"
	"encoding/binary"
	"io/fs"
	"syscall"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/pathwalk"
)

// rec checks the index block of record i, then decodes and checks the
// record; the caller holds r.mu.
func (r *Reader) rec(i uint64) (packformat.Record, error) {
	if i >= r.count {
		return packformat.Record{}, corrupt("entry %d out of range", i)
	}
	if err := r.checkBlock(i / packformat.RecordsPerBlock); err != nil {
		return packformat.Record{}, err
	}
	return r.decode(i)
}

// decode decodes and checks record i < r.count, whose index block the
// caller has checked; the caller holds r.mu.
func (r *Reader) decode(i uint64) (packformat.Record, error) {
	return r.decodeFrom(i, r.index[i*packformat.RecordSize:])
}

// decodeFrom decodes and checks record i from b.
func (r *Reader) decodeFrom(i uint64, b []byte) (rc packformat.Record, err error) {
	if !r.valid(i, b) {
		return rc, r.recordError(i, b)
	}
	rc.Decode(b)
	return rc, nil
}

// valid reports whether record i, encoded in b, passes the checks that
// recordError spells out: the fast path of every decode, reading the
// fields in place.
func (r *Reader) valid(i uint64, b []byte) bool {
	b = b[:packformat.RecordSize]
	le := binary.LittleEndian
	typ, flags, mode := b[10], b[11], le.Uint32(b[12:])
	nameEnd := uint64(le.Uint32(b[4:])) + uint64(le.Uint16(b[8:]))
	size, off := le.Uint64(b[24:]), le.Uint64(b[32:])
	if le.Uint32(b[60:]) != 0 || flags&^packformat.FlagsKnown != 0 || mode&^packformat.ModeMask != 0 ||
		nameEnd > r.footer.StringsSize || (le.Uint16(b[8:]) == 0) != (i == 0) ||
		flags&packformat.FlagOpaque != 0 && typ != packformat.TypeDir {
		return false
	}
	switch typ {
	case packformat.TypeDir:
		return off > i && off <= r.count && size <= r.count-off
	case packformat.TypeFile:
		if r.version == packformat.Version3 {
			return r.validContent3(size, off, uint64(le.Uint32(b[56:])))
		}
		return off >= packformat.HeaderSize && off%packformat.DataAlign == 0 && off <= r.dataEnd && size <= r.dataEnd-off
	case packformat.TypeSymlink:
		return off <= r.footer.StringsSize && size <= r.footer.StringsSize-off
	case packformat.TypeWhiteout:
		return off == 0 && size == 0
	}
	return false
}

// recordError says what is wrong with record i, encoded in b, which valid
// rejected.
func (r *Reader) recordError(i uint64, b []byte) error {
	rc, ok := packformat.DecodeRecord(b)
	if !ok {
		return corrupt("entry %d: reserved bytes set", i)
	}
	if rc.Flags&^packformat.FlagsKnown != 0 || rc.Mode&^packformat.ModeMask != 0 {
		return corrupt("entry %d: unknown flags %#x or mode %#o", i, rc.Flags, rc.Mode)
	}
	if uint64(rc.NameOff)+uint64(rc.NameLen) > r.footer.StringsSize || (rc.NameLen == 0) != (i == 0) {
		return corrupt("entry %d: bad name", i)
	}
	if rc.Flags&packformat.FlagOpaque != 0 && rc.Type != packformat.TypeDir {
		return corrupt("entry %d: opaque non-directory", i)
	}
	switch rc.Type {
	case packformat.TypeDir:
		if rc.Off <= i || rc.Off > r.count || rc.Size > r.count-rc.Off {
			return corrupt("entry %d: bad child range %d+%d", i, rc.Off, rc.Size)
		}
	case packformat.TypeFile:
		if r.version == packformat.Version3 {
			if !r.validContent3(rc.Size, rc.Off, uint64(rc.CRC)) {
				return corrupt("entry %d: bad content %d+%d in frame %d", i, rc.Off, rc.Size, rc.CRC)
			}
			break
		}
		if rc.Off < packformat.HeaderSize || rc.Off%packformat.DataAlign != 0 || rc.Off > r.dataEnd || rc.Size > r.dataEnd-rc.Off {
			return corrupt("entry %d: bad data range %d+%d", i, rc.Off, rc.Size)
		}
	case packformat.TypeSymlink:
		if rc.Off > r.footer.StringsSize || rc.Size > r.footer.StringsSize-rc.Off {
			return corrupt("entry %d: bad symlink target", i)
		}
	case packformat.TypeWhiteout:
		if rc.Off != 0 || rc.Size != 0 {
			return corrupt("entry %d: whiteout with data", i)
		}
	default:
		return corrupt("entry %d: unknown type %d", i, rc.Type)
	}
	return corrupt("entry %d: invalid", i)
}

// validContent3 reports whether a version-3 file record's content (size
// bytes at stream position off, from frame first) lies in the stream:
// that the frame holds it is checked when the content is read.
func (r *Reader) validContent3(size, off, first uint64) bool {
	if size == 0 {
		return off == 0 && first == 0
	}
	return off < r.footer.Stream && size <= r.footer.Stream-off && first+1 < r.footer.FrameCount
}

// nameAt returns the name of record i < r.count without decoding the
// rest, after checking the blocks it comes from.
func (r *Reader) nameAt(i uint64) ([]byte, error) {
	if err := r.checkBlock(i / packformat.RecordsPerBlock); err != nil {
		return nil, err
	}
	b := r.index[i*packformat.RecordSize:]
	off := uint64(binary.LittleEndian.Uint32(b[4:]))
	n := uint64(binary.LittleEndian.Uint16(b[8:]))
	if off+n > uint64(len(r.strs)) {
		return nil, corrupt("entry %d: bad name", i)
	}
	if err := r.checkStrings(off, n); err != nil {
		return nil, err
	}
	return r.strs[off : off+n : off+n], nil
}

// keyResident reports whether key i is in memory (lazy packs only).
func (r *Reader) keyResident(i uint64) bool {
	k := r.count*packformat.RecordSize + i*packformat.KeySize
	return r.metaFilled(k, k+packformat.KeySize)
}

// nameResident reports whether record i's index block and the
// string-table blocks of its name are in memory (lazy packs only).
func (r *Reader) nameResident(i uint64) bool {
	ib := i * packformat.RecordSize
	if !r.metaFilled(ib, ib+packformat.RecordSize) {
		return false
	}
	b := r.index[ib:]
	off := uint64(binary.LittleEndian.Uint32(b[4:]))
	n := uint64(binary.LittleEndian.Uint16(b[8:]))
	if n == 0 || off+n > uint64(len(r.strs)) {
		return false
	}
	so := r.footer.StringsOff - r.footer.IndexOff
	return r.metaFilled(so+off, so+off+n)
}

func compareName(b []byte, s string) int {
	n := min(len(b), len(s))
	for i := range n {
		if b[i] != s[i] {
			if b[i] < s[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(b) < len(s):
		return -1
	case len(b) > len(s):
		return 1
	}
	return 0
}

// lookup finds name among the children of directory d (record dr). It is
// the hot path of every path resolution: a binary search over the key
// table, 8 bytes an entry, so that a probe reads one word from a compact
// array (eight keys to a cache line) instead of a record and a name. Only
// keys that tie with the name's (names sharing their first 8 bytes) send
// the probe to the record and the string table, and a match is always
// confirmed there. The blocks read are checked first (one load each once
// checked).
func (r *Reader) lookup(d uint64, dr packformat.Record, name string) (uint64, packformat.Record, bool, error) {
	lo, hi := dr.Off, dr.Off+dr.Size // rec bounded these by r.count
	keys, key := r.keys, packformat.Key(name)
	all := r.keysChecked.Load() || r.allChecked.Load() || r.keySpanChecked(lo, hi)
	for lo < hi {
		m := lo + (hi-lo)/2
		var c int // 0: the names decide
		if all {
			c = cmp.Compare(binary.BigEndian.Uint64(keys[m*packformat.KeySize:m*packformat.KeySize+packformat.KeySize]), key)
		} else {
			var err error
			if c, err = r.compareKey(m, key); err != nil {
				return 0, packformat.Record{}, false, err
			}
		}
		if c == 0 {
			nb, err := r.nameAt(m)
			if err != nil {
				return 0, packformat.Record{}, false, err
			}
			c = compareName(nb, name)
		}
		switch {
		case c < 0:
			lo = m + 1
		case c > 0:
			hi = m
		default:
			rc, err := r.decode(m)
			if err != nil {
				return 0, rc, false, err
			}
			if uint64(rc.Parent) != d {
				return 0, rc, false, corrupt("entry %d: parent %d, listed in %d", m, rc.Parent, d)
			}
			return m, rc, true, nil
		}
	}
	return 0, packformat.Record{}, false, nil
}

// keySpanChecked reports whether the key blocks of entries lo to hi-1, a
// directory's, are all checked, checking them first when they are few
// (a directory of up to about 2,000 entries, 4 blocks): lookup then
// compares keys without a check per probe. keysChecked alone would leave
// a directory's lookups on the checked path for good when they never
// reach some key block of the pack, as lookups of names that sort before
// all of a directory's never leave its first. A block that fails its
// check, or that a fault in the mapping keeps from being read (a pack
// file cut short under its mapping), is left to the probe that reads it,
// which reports it, as before; a lazy pack's blocks are fetched only when
// a probe reads them.
func (r *Reader) keySpanChecked(lo, hi uint64) bool {
	const keysPerBlock = packformat.BlockSize / packformat.KeySize
	if lo >= hi || r.lazy {
		return lo >= hi
	}
	first, last := r.keyBase+lo/keysPerBlock, r.keyBase+(hi-1)/keysPerBlock
	if last-first >= 4 {
		return false
	}
	for b := first; b <= last; b++ {
		if !r.isChecked(b) && !r.checkAside(b) {
			return false
		}
	}
	return true
}

// checkAside checks block b for a caller that may do without it: a fault
// in the mapping while it reads the block says false rather than failing
// the caller's operation (see runlock), and any other panic goes on.
func (r *Reader) checkAside(b uint64) (ok bool) {
	defer func() {
		if e := recover(); e != nil {
			if _, fault := r.faultOffset(e); !fault {
				panic(e)
			}
			ok = false
		}
	}()
	return r.checkBlockSlow(b) == nil
}

// compareKey compares entry m's key with key for lookup, checking its
// block first; 0 lets the names decide. A pack read through an
// io.ReaderAt compares names already in memory rather than fetch keys,
// which only steer. Kept out of lookup's loop, which runs without it once
// every key block is checked (keysChecked): with the checks inline, the
// loop took about 260 instructions more per random small-file read of a
// format-3 pack (cachegrind: 379 against 275 M for 400,000 reads).
func (r *Reader) compareKey(m, key uint64) (int, error) {
	const keysPerBlock = packformat.BlockSize / packformat.KeySize
	if kb := r.keyBase + m/keysPerBlock; !r.isChecked(kb) {
		if r.lazy && !r.keyResident(m) && r.nameResident(m) {
			return 0, nil
		}
		if err := r.checkBlockSlow(kb); err != nil {
			return 0, err
		}
	}
	return cmp.Compare(binary.BigEndian.Uint64(r.keys[m*packformat.KeySize:m*packformat.KeySize+packformat.KeySize]), key), nil
}

// target returns the symlink target of rc, which rec has bounded.
func (r *Reader) target(rc packformat.Record) (string, error) {
	if err := r.checkStrings(rc.Off, rc.Size); err != nil {
		return "", err
	}
	return string(r.strs[rc.Off : rc.Off+rc.Size]), nil
}

// walk resolves name from the root, following symlinks inside the pack by
// the rules of package pathwalk in every element and, if follow, in the
// last. The caller holds r.mu.
func (r *Reader) walk(name string, follow bool) (uint64, packformat.Record, error) {
	if !fs.ValidPath(name) {
		return 0, packformat.Record{}, fs.ErrInvalid
	}
	if name == "." {
		return 0, r.root, nil
	}
	w, err := pathwalk.New(name)
	if err != nil {
		return 0, packformat.Record{}, err
	}
	// stack holds the directories from the root down to the current one,
	// whose record is cur; going up decodes the parent's record again.
	var buf [16]uint64
	stack := buf[:0]
	if n := pathwalk.Depth(name); n > len(buf) {
		stack = make([]uint64, 0, n) // one allocation for a deep path
	}
	stack = append(stack, 0)
	cur := r.root
	up := func() error {
		if len(stack) > 1 {
			stack = stack[:len(stack)-1]
			var err error
			cur, err = r.rec(stack[len(stack)-1])
			return err
		}
		return nil
	}
	for {
		elem, step, last := w.Next()
		switch step {
		case pathwalk.Stay:
			if last {
				return stack[len(stack)-1], cur, nil
			}
			continue
		case pathwalk.Up:
			if err := up(); err != nil {
				return 0, cur, err
			}
			if last {
				return stack[len(stack)-1], cur, nil
			}
			continue
		}
		if err := pathwalk.CheckElem(elem); err != nil {
			return 0, cur, err
		}
		mustDir := last && w.Slash() // from a target "x/"
		ci, cr, ok, err := r.lookup(stack[len(stack)-1], cur, elem)
		if err != nil {
			return 0, cr, err
		}
		if !ok {
			return 0, cr, syscall.ENOENT
		}
		if cr.Type == packformat.TypeSymlink && (follow || !last || mustDir) {
			if cr.Size >= pathwalk.MaxPath {
				return 0, cr, syscall.ENAMETOOLONG // refused before it is copied
			}
			target, err := w.Target([2]uint64{cr.Off, cr.Size}, func() (string, error) { return r.target(cr) })
			if err != nil {
				return 0, cr, err
			}
			abs, err := w.Follow(target, last)
			if err != nil {
				return 0, cr, err
			}
			if abs {
				stack, cur = stack[:1], r.root
			}
			continue
		}
		if last && !(mustDir && cr.Type != packformat.TypeDir) {
			return ci, cr, nil
		}
		if cr.Type != packformat.TypeDir {
			return 0, cr, syscall.ENOTDIR
		}
		stack = append(stack, ci)
		cur = cr
	}
}
