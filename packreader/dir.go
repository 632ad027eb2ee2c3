package packreader

import (
	"encoding/binary"
	"io/fs"
	"strings"
	"time"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/layer"
)

// fileInfo describes one entry: what Stat returns and DirEntry.Info
// builds.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime int64
	// Version 3: the Reader and record whose attributes Sys decodes,
	// when asked: most callers of Stat never ask.
	r *Reader
	i uint32
}

// Sys is what FileInfo.Sys returns for an entry of a version-3 pack
// (version-2 packs record neither owners nor inodes: nil).
type Sys struct {
	// Uid and Gid are the owner's ids, or NoOwner when the source gave
	// none (an in-memory layer, say).
	Uid, Gid uint32
	// Ino is the entry's inode number, stable for the pack: entries that
	// were hard links to one file in the source share it.
	Ino uint64
	// Nlink is the link count: the entries sharing the inode, and for a
	// directory 2 plus its subdirectories.
	Nlink uint32
	// User and Group are the owner's names, where the pack records them
	// (see OwnerNames).
	User, Group string
}

// NoOwner is Sys's Uid and Gid when the pack records no owner.
const NoOwner = packformat.NoOwner

// Owner returns the entry's owner, as packwriter reads it back when a
// pack is repacked.
func (s *Sys) Owner() (uid, gid uint32) { return s.Uid, s.Gid }

// Inode returns the entry's inode number and link count.
func (s *Sys) Inode() (ino uint64, nlink uint32) { return s.Ino, s.Nlink }

func (r *Reader) info(name string, i uint64, rc packformat.Record) *fileInfo {
	fi := &fileInfo{name: name, size: sizeOf(rc), mode: modeOf(rc), mtime: rc.Mtime}
	if r.version == packformat.Version3 {
		fi.r, fi.i = r, uint32(i)
	}
	return fi
}

// sys decodes the attributes of record i: nil once the Reader is closed
// or when the attribute block is damaged (FileInfo.Sys has no error to
// return; Verify reports the damage).
func (r *Reader) sys(i uint64) (_ *Sys, err error) {
	g, err := r.rlock("stat", ".")
	if err != nil {
		return nil, err
	}
	defer r.runlock("stat", ".", g, &err)
	a, err := r.attr(i)
	if err != nil {
		return nil, err
	}
	s := &Sys{Uid: a.Uid, Gid: a.Gid, Ino: uint64(a.Ino), Nlink: a.Nlink}
	if users, groups, _ := r.names(); users != nil || groups != nil {
		s.User, s.Group = users[a.Uid], groups[a.Gid]
	}
	return s, nil
}

// attr returns record i's entry in the attribute table, after checking
// its block. The caller holds r.mu.
func (r *Reader) attr(i uint64) (packformat.Attr, error) {
	if err := r.checkBlock(r.attrBase + i*packformat.AttrSize/packformat.BlockSize); err != nil {
		return packformat.Attr{}, err
	}
	a := packformat.DecodeAttr(r.attrs[i*packformat.AttrSize:])
	if a.Ino == 0 || uint64(a.Ino) > r.count || a.Nlink == 0 {
		return a, corrupt("entry %d: bad inode %d or link count %d", i, a.Ino, a.Nlink)
	}
	return a, nil
}

// modeOf returns the fs.FileMode of a checked record.
func modeOf(rc packformat.Record) fs.FileMode { return fileMode(rc.Type, rc.Mode) }

// fileMode returns the fs.FileMode of a checked record's type and mode.
func fileMode(typ uint8, mode uint32) fs.FileMode {
	m := fs.FileMode(mode)
	switch typ {
	case packformat.TypeDir:
		m |= fs.ModeDir
	case packformat.TypeSymlink:
		m |= fs.ModeSymlink
	case packformat.TypeWhiteout:
		m |= layer.ModeWhiteout
	}
	return m
}

// sizeOf returns the size a FileInfo reports for a checked record: the
// content's or the target's length, and 0 for directories and whiteouts.
func sizeOf(rc packformat.Record) int64 {
	if rc.Type == packformat.TypeFile || rc.Type == packformat.TypeSymlink {
		return int64(rc.Size)
	}
	return 0
}

func (fi *fileInfo) Name() string      { return fi.name }
func (fi *fileInfo) Size() int64       { return fi.size }
func (fi *fileInfo) Mode() fs.FileMode { return fi.mode }
func (fi *fileInfo) ModTime() time.Time {
	if fi.mtime == packformat.NoTime {
		return time.Time{}
	}
	return time.Unix(0, fi.mtime)
}
func (fi *fileInfo) IsDir() bool { return fi.mode.IsDir() }

// Sys returns a *Sys for an entry of a format-3 pack (decoded at each
// call), nil otherwise.
func (fi *fileInfo) Sys() any {
	if fi.r == nil {
		return nil
	}
	if s, err := fi.r.sys(uint64(fi.i)); err == nil {
		return s
	}
	return nil
}
func (fi *fileInfo) Type() fs.FileMode          { return fi.mode.Type() }
func (fi *fileInfo) Info() (fs.FileInfo, error) { return fi, nil }
func (fi *fileInfo) String() string             { return fs.FormatDirEntry(fi) }

// dirEntry is one entry of a listing. It holds what Name, Type and IsDir
// report; Info decodes the entry's record again (ReadDir checked it), as
// os decodes a directory entry's inode only when asked.
type dirEntry struct {
	name string
	r    *Reader
	i    uint32
	mode fs.FileMode
}

func (e *dirEntry) Name() string      { return e.name }
func (e *dirEntry) IsDir() bool       { return e.mode.IsDir() }
func (e *dirEntry) Type() fs.FileMode { return e.mode.Type() }
func (e *dirEntry) String() string    { return fs.FormatDirEntry(e) }

// Info returns the entry's FileInfo. After the Reader is closed it fails
// with fs.ErrClosed.
func (e *dirEntry) Info() (_ fs.FileInfo, err error) {
	g, err := e.r.rlock("stat", e.name)
	if err != nil {
		return nil, err
	}
	defer e.r.runlock("stat", e.name, g, &err)
	rc, err := e.r.rec(uint64(e.i))
	if err != nil {
		return nil, pathErr("stat", e.name, err)
	}
	return e.r.info(e.name, uint64(e.i), rc), nil
}

// listChunk is how many entries list allocates at once: 8 KiB of
// dirEntry, a small-object allocation, so that a long listing neither
// takes the heap lock nor zeroes one large block per call.
const listChunk = 256

// list returns up to n (all if n <= 0, as fs.ReadDirFile says) entries of
// directory d from position from, checking each record, the names and
// their order.
func (r *Reader) list(d uint64, dr packformat.Record, from uint64, n int) ([]fs.DirEntry, error) {
	end := dr.Size
	if n > 0 && uint64(n) < end-from {
		end = from + uint64(n)
	}
	lo, hi := dr.Off+from, dr.Off+end // rec bounded these by r.count
	if err := r.checkRecords(lo, hi); err != nil {
		return nil, err
	}
	var out []fs.DirEntry
	var prev []byte
	if from > 0 {
		p, err := r.nameAt(lo - 1)
		if err != nil {
			return nil, err
		}
		prev = p
	}
	var prevName string
	for c := lo; c < hi; c += listChunk {
		ce := min(c+listChunk, hi)
		span, spanOff, err := r.nameSpan(d, c, ce)
		if err != nil {
			return nil, err
		}
		// Allocate as nameSpan vouches for entries, doubling: a crafted
		// directory may claim a run of other directories' entries, and
		// must not cost the run's size to refuse.
		if need := len(out) + int(ce-c); need > cap(out) {
			grown := make([]fs.DirEntry, len(out), min(int(hi-lo), max(2*cap(out), need, 4*listChunk)))
			copy(grown, out)
			out = grown
		}
		ents := make([]dirEntry, ce-c)
		for i := c; i < ce; i++ {
			b := r.index[i*packformat.RecordSize : i*packformat.RecordSize+packformat.RecordSize]
			if !r.valid(i, b) {
				return nil, r.recordError(i, b)
			}
			parent := binary.LittleEndian.Uint32(b[0:])
			no, nl := uint64(binary.LittleEndian.Uint32(b[4:])), uint64(binary.LittleEndian.Uint16(b[8:]))
			name := span[no-spanOff : no-spanOff+nl] // nameSpan checked it lies within
			ordered := i == dr.Off || (i > lo && prevName < name) || (i == lo && string(prev) < name)
			if uint64(parent) != d || !ordered || !validName(name) {
				return nil, corrupt("entry %d: bad name %q or parent %d in directory %d", i, name, parent, d)
			}
			prevName = name
			e := &ents[i-c]
			*e = dirEntry{name: name, r: r, i: uint32(i), mode: fileMode(b[10], binary.LittleEndian.Uint32(b[12:]))}
			out = append(out, e)
		}
	}
	if out == nil {
		out = []fs.DirEntry{}
	}
	return out, nil
}

// nameSpan returns as one string the string-table bytes from the name of
// record lo to the end of the name of record hi-1, after checking their
// blocks, and the span's offset. The string table holds names and targets
// in index order, so the names of a run of children (with the targets of
// the symlinks among them) follow one another: list slices them out of
// the span instead of allocating a string per name. nameSpan checks that
// they do, and that each record's parent is d, before it copies: so the
// span holds nothing but the names and targets of the records listed, and
// a crafted pack cannot make a listing copy more than its own entries'
// bytes. The caller has checked the index blocks of records lo to hi-1.
func (r *Reader) nameSpan(d, lo, hi uint64) (string, uint64, error) {
	le := binary.LittleEndian
	start := uint64(le.Uint32(r.index[lo*packformat.RecordSize+4:]))
	pos, size := start, uint64(len(r.strs))
	for i := lo; i < hi; i++ {
		b := r.index[i*packformat.RecordSize : i*packformat.RecordSize+packformat.RecordSize]
		if p := le.Uint32(b[0:]); uint64(p) != d {
			return "", 0, corrupt("entry %d: parent %d, listed in %d", i, p, d)
		}
		if off := uint64(le.Uint32(b[4:])); off != pos {
			return "", 0, corrupt("entry %d: name at %d, want %d, after the entry before it", i, off, pos)
		}
		pos += uint64(le.Uint16(b[8:]))
		if b[10] == packformat.TypeSymlink && i+1 < hi {
			if off := le.Uint64(b[32:]); off != pos {
				return "", 0, corrupt("entry %d: target at %d, want %d, after its name", i, off, pos)
			}
			pos += min(le.Uint64(b[24:]), size) // a target past the table fails below
		}
		if pos > size {
			return "", 0, corrupt("entry %d: name or target past the string table", i)
		}
	}
	if err := r.checkStrings(start, pos-start); err != nil {
		return "", 0, err
	}
	return string(r.strs[start:pos]), start, nil
}

func validName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == 0 {
			return false
		}
	}
	return true
}

// baseName is the last element of an fs path ("." for the root).
func baseName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}
