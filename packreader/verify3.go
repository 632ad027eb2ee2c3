package packreader

import (
	"cmp"
	"crypto/sha256"
	"slices"

	"github.com/packfs/packfs/internal/packformat"
)

// verify3 is the part of Verify that version 3 adds: every frame (its
// entry, its stored bytes against their CRC-32C, a zstd frame's
// decompression to exactly its raw size), the data region's layout
// (frames in order, not overlapping, zeros between them), each distinct
// content's SHA-256 read through its frames, and the attribute table
// (inode numbers and link counts). The caller holds r.mu.
func (r *Reader) verify3(files []fileCheck) error {
	if _, _, err := r.names(); err != nil {
		return err
	}
	n := r.footer.FrameCount
	if p, err := r.framePos(0); err != nil {
		return err
	} else if n > 1 && p != 0 {
		return corrupt("frame 0 at stream position %d, want 0", p)
	}
	if n == 1 && r.footer.Stream != 0 {
		return corrupt("stream of %d bytes without frames", r.footer.Stream)
	}
	if p, err := r.framePos(n - 1); err != nil {
		return err
	} else if p != r.footer.Stream {
		return corrupt("frame table: bad sentinel")
	}
	pos := uint64(packformat.HeaderSize)
	var scratch []byte
	for i := uint64(0); i+1 < n; i++ {
		f, raw, err := r.frame(i)
		if err != nil {
			return err
		}
		if f.Stored == 0 {
			continue
		}
		if f.Off < pos {
			return corrupt("frame %d at %d overlaps the one before it", i, f.Off)
		}
		if err := r.checkZero(pos, f.Off); err != nil {
			return err
		}
		pos = f.Off + uint64(f.Stored)
		if uint64(cap(scratch)) < raw {
			scratch = make([]byte, 0, raw+decodeSlack)
		}
		if _, err := r.loadFrame(i, f, raw, scratch); err != nil {
			return err
		}
	}
	if err := r.checkZero(pos, r.dataEnd); err != nil {
		return err
	}
	// Contents: each distinct one hashed once.
	slices.SortFunc(files, func(a, b fileCheck) int {
		return cmp.Or(cmp.Compare(a.off, b.off), cmp.Compare(a.size, b.size), cmp.Compare(a.crc, b.crc), cmp.Compare(a.entry, b.entry))
	})
	buf := getBuf()
	defer putBuf(buf)
	var sum [16]byte
	for k, f := range files {
		if r.packed {
			// Packed tables keep no SHA-256 prefix; the frames' CRC-32C
			// above checked every stored byte.
			if f.sum != ([16]byte{}) {
				return corrupt("entry %d: a SHA-256 prefix in packed tables", f.entry)
			}
			continue
		}
		if k == 0 || f.span != files[k-1].span || f.crc != files[k-1].crc {
			rc := packformat.Record{Off: f.off, Size: f.size, CRC: f.crc}
			h := sha256.New()
			for off := uint64(0); off < f.size; {
				m := min(f.size-off, uint64(len(buf)))
				if err := r.readContent(buf[:m], rc, off); err != nil {
					return err
				}
				h.Write(buf[:m])
				off += m
			}
			copy(sum[:], h.Sum(nil))
		}
		if f.sum != sum {
			return corrupt("entry %d: content SHA-256 mismatch", f.entry)
		}
	}
	return r.verifyAttrs()
}

// verifyAttrs checks every entry of the attribute table: an entry's inode
// is its own or that of an earlier regular file with the same content,
// mode and time, each inode's link count is the number of entries sharing
// it, and a directory's is 2 plus its subdirectories. The caller holds
// r.mu.
func (r *Reader) verifyAttrs() error {
	links := map[uint32]uint32{}
	for i := range r.count {
		rc, err := r.rec(i)
		if err != nil {
			return err
		}
		a, err := r.attr(i)
		if err != nil {
			return err
		}
		if rc.Type == packformat.TypeDir {
			subdirs := uint32(0)
			for c := rc.Off; c < rc.Off+rc.Size; c++ {
				cr, err := r.rec(c)
				if err != nil {
					return err
				}
				if cr.Type == packformat.TypeDir {
					subdirs++
				}
			}
			if a.Ino != uint32(i+1) || a.Nlink != 2+subdirs {
				return corrupt("entry %d: directory inode %d, link count %d", i, a.Ino, a.Nlink)
			}
			continue
		}
		if uint64(a.Ino) != i+1 {
			first := uint64(a.Ino) - 1
			fr, err := r.rec(first)
			if err != nil {
				return err
			}
			fa, err := r.attr(first)
			if err != nil {
				return err
			}
			if first > i || rc.Type != packformat.TypeFile || fr.Type != packformat.TypeFile || fa.Ino != a.Ino ||
				fr.Off != rc.Off || fr.Size != rc.Size || fr.Mode != rc.Mode || fr.Mtime != rc.Mtime || fa.Uid != a.Uid || fa.Gid != a.Gid {
				return corrupt("entry %d: hard link to entry %d, which is not the same file", i, first)
			}
		}
		links[a.Ino]++
	}
	for i := range r.count {
		a, _ := r.attr(i)
		if n, ok := links[a.Ino]; ok && a.Nlink != n {
			return corrupt("entry %d: link count %d, %d entries share its inode", i, a.Nlink, n)
		}
	}
	return nil
}
