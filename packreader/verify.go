package packreader

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"io"
	"slices"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/layer"
)

// Stats summarizes a pack.
type Stats struct {
	Entries   int   // all entries, the root included
	Files     int   // regular files
	Dirs      int   // directories, the root included
	Symlinks  int   // symbolic links
	Whiteouts int   // whiteouts, opaque markers included
	Contents  int   // distinct stored contents
	Logical   int64 // bytes of all regular files, as if not deduplicated
	Unique    int64 // bytes of the distinct contents
	Stored    int64 // bytes of the data region (contents plus alignment)
	Size      int64 // bytes of the pack file
	Frames    int   // compressed frames, holes included (0 uncompressed)
	Filtered  int   // frames stored through the x86-64 branch filter
}

// Saved returns the bytes dedup saved: Logical minus Unique.
func (s Stats) Saved() int64 { return s.Logical - s.Unique }

// Stats counts the pack's entries and frames. It reads every record and
// frame entry: O(entries + frames).
func (r *Reader) Stats() (_ Stats, err error) {
	g, err := r.rlock("stats", ".")
	if err != nil {
		return Stats{}, err
	}
	defer r.runlock("stats", ".", g, &err)
	s := Stats{Entries: int(r.count), Stored: int64(r.footer.DataSize), Size: int64(r.size)}
	seen := map[uint64]bool{}
	for i := range r.count {
		rc, err := r.rec(i)
		if err != nil {
			return s, err
		}
		switch rc.Type {
		case packformat.TypeFile:
			s.Files++
			s.Logical += int64(rc.Size)
			if rc.Size > 0 && !seen[rc.Off] {
				seen[rc.Off] = true
				s.Contents++
				s.Unique += int64(rc.Size)
			}
		case packformat.TypeDir:
			s.Dirs++
		case packformat.TypeSymlink:
			s.Symlinks++
		case packformat.TypeWhiteout:
			s.Whiteouts++
		}
	}
	if r.zstd {
		for i := uint64(0); i+1 < r.footer.FrameCount; i++ {
			f, _, err := r.frame(i)
			if err != nil {
				return s, err
			}
			s.Frames++
			if f.Filter != packformat.FilterNone {
				s.Filtered++
			}
		}
	}
	return s, nil
}

// Verify checks the whole pack: every block of the index, key table and
// string table against the check table, every record, every key, the tree they form (each
// entry listed exactly once, in its parent's sorted run), names, opaque
// flags, the string table's layout, the logical size in the footer, every
// content against both its CRC-32C and its SHA-256, and that every byte of
// the data region outside the contents is zero. It returns the first
// problem found, wrapping ErrCorrupt. Verify holds off Close until it
// returns.
func (r *Reader) Verify() (err error) {
	g, err := r.rlock("verify", ".")
	if err != nil {
		return err
	}
	defer r.runlock("verify", ".", g, &err)
	if err := r.checkAll(); err != nil {
		return err
	}
	var logical, strPos uint64
	listed := uint64(1) // the root
	var files []fileCheck
	for d := range r.count {
		dr, err := r.rec(d)
		if err != nil {
			return err
		}
		// Names and targets fill the string table in index order, and
		// each key is its name's.
		if uint64(dr.NameOff) != strPos {
			return corrupt("entry %d: name at %d, want %d", d, dr.NameOff, strPos)
		}
		strPos += uint64(dr.NameLen)
		name := r.strs[dr.NameOff:strPos]
		if binary.BigEndian.Uint64(r.keys[d*packformat.KeySize:]) != packformat.Key(string(name)) {
			return corrupt("entry %d: key does not match its name %q", d, name)
		}
		switch dr.Type {
		case packformat.TypeFile:
			logical += dr.Size
			files = append(files, fileCheck{span{dr.Off, dr.Size}, d, dr.CRC, dr.Sum})
			continue
		case packformat.TypeSymlink:
			if dr.Off != strPos {
				return corrupt("entry %d: target at %d, want %d", d, dr.Off, strPos)
			}
			strPos += dr.Size
			continue
		case packformat.TypeDir:
		default:
			continue
		}
		ents, err := r.list(d, dr, 0, -1)
		if err != nil {
			return err
		}
		hasOpq := false
		for k, e := range ents {
			if e.Name() == layer.OpaqueName {
				rc, _ := r.rec(dr.Off + uint64(k))
				hasOpq = rc.Type == packformat.TypeWhiteout
			}
		}
		if hasOpq != (dr.Flags&packformat.FlagOpaque != 0) {
			return corrupt("entry %d: opaque flag disagrees with its %s entry", d, layer.OpaqueName)
		}
		if dr.Size > 0 && dr.Off != listed {
			return corrupt("entry %d: children at %d, want %d", d, dr.Off, listed)
		}
		listed += dr.Size
	}
	if listed != r.count {
		return corrupt("%d entries listed in directories, %d in the index", listed, r.count)
	}
	if strPos != uint64(len(r.strs)) {
		return corrupt("string table of %d bytes, names and targets fill %d", len(r.strs), strPos)
	}
	if logical != r.footer.Logical {
		return corrupt("footer logical size %d, entries sum to %d", r.footer.Logical, logical)
	}
	if r.version == packformat.Version3 {
		return r.verify3(files)
	}
	return r.checkContents(files)
}

// fileCheck is what Verify checks of one file entry's content.
type fileCheck struct {
	span
	entry uint64
	crc   uint32
	sum   [16]byte
}

// checkContents checks the layout of the data region first (contents do
// not overlap, every other byte is zero), then hashes each distinct
// content once and compares every entry's CRC-32C and SHA-256 with it.
// In that order, a crafted pack whose entries give one region many
// overlapping spans costs one pass over the region to refuse, not a pass
// per span. The caller holds r.mu.
func (r *Reader) checkContents(files []fileCheck) error {
	slices.SortFunc(files, func(a, b fileCheck) int {
		return cmp.Or(cmp.Compare(a.off, b.off), cmp.Compare(a.size, b.size), cmp.Compare(a.entry, b.entry))
	})
	var spans []span // the distinct contents, sorted
	for k, f := range files {
		if f.size > 0 && (k == 0 || f.span != files[k-1].span) {
			spans = append(spans, f.span)
		}
	}
	if err := r.checkPadding(spans); err != nil {
		return err
	}
	var crc uint32
	var sum [16]byte
	for k, f := range files {
		if k == 0 || f.span != files[k-1].span {
			var err error
			if crc, sum, err = r.contentSum(f.span); err != nil {
				return err
			}
			r.storeCRC(f.span, crc)
		}
		if f.crc != crc {
			return corrupt("entry %d: content at %d: CRC-32C mismatch", f.entry, f.off)
		}
		if f.sum != sum {
			return corrupt("entry %d: content SHA-256 mismatch", f.entry)
		}
	}
	return nil
}

// checkPadding checks that the contents, distinct and sorted, do not
// overlap and that every other byte of the data region is zero. The
// caller holds r.mu.
func (r *Reader) checkPadding(spans []span) error {
	pos := uint64(packformat.HeaderSize)
	for _, s := range spans {
		if s.off < pos {
			return corrupt("content at %d overlaps the one before it", s.off)
		}
		if err := r.checkZero(pos, s.off); err != nil {
			return err
		}
		pos = s.off + s.size
	}
	return r.checkZero(pos, r.dataEnd)
}

// checkZero checks that the file's bytes from lo to hi-1 are zero.
func (r *Reader) checkZero(lo, hi uint64) error {
	var buf []byte
	if r.mapped == nil {
		b := getBuf()
		defer putBuf(b)
		buf = b[:]
	}
	for off := lo; off < hi; {
		var b []byte
		if r.mapped != nil {
			b = r.mapped[off:hi]
		} else {
			b = buf[:min(hi-off, uint64(len(buf)))]
			if err := readFull(r.ra, b, int64(off)); err != nil {
				return err
			}
		}
		if !allZero(b) {
			return corrupt("nonzero padding between %d and %d", off, off+uint64(len(b)))
		}
		off += uint64(len(b))
	}
	return nil
}

// contentSum returns the CRC-32C and the truncated SHA-256 of the content
// at sp. The caller holds r.mu.
func (r *Reader) contentSum(sp span) (uint32, [16]byte, error) {
	var out [16]byte
	h := sha256.New()
	c := crc32.New(packformat.Castagnoli)
	w := io.MultiWriter(h, c)
	if r.mapped != nil {
		w.Write(r.mapped[sp.off : sp.off+sp.size])
	} else {
		buf := getBuf()
		defer putBuf(buf)
		for off, left := sp.off, sp.size; left > 0; {
			n := min(left, uint64(len(buf)))
			if err := readFull(r.ra, buf[:n], int64(off)); err != nil {
				return 0, out, err
			}
			w.Write(buf[:n])
			off += n
			left -= n
		}
	}
	copy(out[:], h.Sum(nil))
	return c.Sum32(), out, nil
}
