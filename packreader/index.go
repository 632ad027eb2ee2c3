package packreader

import (
	"io/fs"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

// rec decodes and checks record i; the caller holds r.mu.
func (r *Reader) rec(i uint64) (packformat.Record, error) {
	if i >= r.count {
		return packformat.Record{}, corrupt("entry %d out of range", i)
	}
	rc, ok := packformat.DecodeRecord(r.index[i*packformat.RecordSize:])
	if !ok {
		return rc, corrupt("entry %d: reserved bytes set", i)
	}
	if rc.Flags&^packformat.FlagsKnown != 0 || rc.Mode&^packformat.ModeMask != 0 {
		return rc, corrupt("entry %d: unknown flags %#x or mode %#o", i, rc.Flags, rc.Mode)
	}
	if uint64(rc.NameOff)+uint64(rc.NameLen) > uint64(len(r.strs)) || (rc.NameLen == 0) != (i == 0) {
		return rc, corrupt("entry %d: bad name", i)
	}
	if rc.Flags&packformat.FlagOpaque != 0 && rc.Type != packformat.TypeDir {
		return rc, corrupt("entry %d: opaque non-directory", i)
	}
	switch rc.Type {
	case packformat.TypeDir:
		if rc.Off <= i || rc.Off > r.count || rc.Size > r.count-rc.Off {
			return rc, corrupt("entry %d: bad child range %d+%d", i, rc.Off, rc.Size)
		}
	case packformat.TypeFile:
		if rc.Off < packformat.HeaderSize || rc.Off%packformat.DataAlign != 0 || rc.Off > r.dataEnd || rc.Size > r.dataEnd-rc.Off {
			return rc, corrupt("entry %d: bad data range %d+%d", i, rc.Off, rc.Size)
		}
	case packformat.TypeSymlink:
		if rc.Off > uint64(len(r.strs)) || rc.Size > uint64(len(r.strs))-rc.Off {
			return rc, corrupt("entry %d: bad symlink target", i)
		}
	case packformat.TypeWhiteout:
		if rc.Off != 0 || rc.Size != 0 {
			return rc, corrupt("entry %d: whiteout with data", i)
		}
	default:
		return rc, corrupt("entry %d: unknown type %d", i, rc.Type)
	}
	return rc, nil
}

// nameAt returns the name of record i without decoding the rest.
func (r *Reader) nameAt(i uint64) ([]byte, error) {
	b := r.index[i*packformat.RecordSize:]
	off := uint64(b[4]) | uint64(b[5])<<8 | uint64(b[6])<<16 | uint64(b[7])<<24
	n := uint64(b[8]) | uint64(b[9])<<8
	if off+n > uint64(len(r.strs)) {
		return nil, corrupt("entry %d: bad name", i)
	}
	return r.strs[off : off+n : off+n], nil
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

// lookup finds name among the children of directory d (record dr).
func (r *Reader) lookup(d uint64, dr packformat.Record, name string) (uint64, packformat.Record, bool, error) {
	lo, hi := dr.Off, dr.Off+dr.Size
	for lo < hi {
		m := lo + (hi-lo)/2
		nb, err := r.nameAt(m)
		if err != nil {
			return 0, packformat.Record{}, false, err
		}
		switch c := compareName(nb, name); {
		case c < 0:
			lo = m + 1
		case c > 0:
			hi = m
		default:
			rc, err := r.rec(m)
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

// target returns the symlink target of rc.
func (r *Reader) target(rc packformat.Record) string {
	return string(r.strs[rc.Off : rc.Off+rc.Size])
}

type frame struct {
	i  uint64
	rc packformat.Record
}

// walk resolves name from the root, following symlinks inside the pack by
// the rules of package pathwalk in every element and, if follow, in the
// last. The caller holds r.mu.
func (r *Reader) walk(name string, follow bool) (uint64, packformat.Record, error) {
	if !fs.ValidPath(name) {
		return 0, packformat.Record{}, fs.ErrInvalid
	}
	root, err := r.rec(0)
	if err != nil {
		return 0, root, err
	}
	if name == "." {
		return 0, root, nil
	}
	var buf [16]frame
	stack := append(buf[:0], frame{0, root})
	w := pathwalk.New(name)
	for {
		elem, step, last := w.Next()
		dir := stack[len(stack)-1]
		switch step {
		case pathwalk.Stay:
			if last {
				return dir.i, dir.rc, nil
			}
			continue
		case pathwalk.Up:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			if last {
				top := stack[len(stack)-1]
				return top.i, top.rc, nil
			}
			continue
		}
		ci, cr, ok, err := r.lookup(dir.i, dir.rc, elem)
		if err != nil {
			return 0, cr, err
		}
		if !ok {
			return 0, cr, syscall.ENOENT
		}
		if cr.Type == packformat.TypeSymlink && (follow || !last) {
			abs, err := w.Follow(r.target(cr), last)
			if err != nil {
				return 0, cr, err
			}
			if abs {
				stack = stack[:1]
			}
			continue
		}
		if last {
			return ci, cr, nil
		}
		if cr.Type != packformat.TypeDir {
			return 0, cr, syscall.ENOTDIR
		}
		stack = append(stack, frame{ci, cr})
	}
}

// fileInfo describes one entry; it is also its fs.DirEntry.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime int64
}

func (r *Reader) info(name string, rc packformat.Record) *fileInfo {
	fi := new(fileInfo)
	r.fillInfo(fi, name, rc)
	return fi
}

func (r *Reader) fillInfo(fi *fileInfo, name string, rc packformat.Record) {
	*fi = fileInfo{name: name, mtime: rc.Mtime, mode: fs.FileMode(rc.Mode)}
	switch rc.Type {
	case packformat.TypeDir:
		fi.mode |= fs.ModeDir
	case packformat.TypeFile:
		fi.size = int64(rc.Size)
	case packformat.TypeSymlink:
		fi.mode |= fs.ModeSymlink
		fi.size = int64(rc.Size)
	case packformat.TypeWhiteout:
		fi.mode |= layer.ModeWhiteout
	}
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
func (fi *fileInfo) IsDir() bool                { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any                   { return nil }
func (fi *fileInfo) Type() fs.FileMode          { return fi.mode.Type() }
func (fi *fileInfo) Info() (fs.FileInfo, error) { return fi, nil }
func (fi *fileInfo) String() string             { return fs.FormatDirEntry(fi) }

// baseName is the last element of an fs path ("." for the root).
func baseName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// list returns up to n (all if n < 0) entries of directory d from
// position from, checking names and their order.
func (r *Reader) list(d uint64, dr packformat.Record, from uint64, n int) ([]fs.DirEntry, error) {
	end := dr.Size
	if n >= 0 && uint64(n) < end-from {
		end = from + uint64(n)
	}
	out := make([]fs.DirEntry, 0, end-from)
	infos := make([]fileInfo, end-from) // one allocation for the run
	// The children's names are usually adjacent in the string table (the
	// writer stores them in index order): convert their span to one string
	// and slice it, instead of allocating a string per name.
	var span string
	var spanOff uint64
	if end > from {
		first, _ := packformat.DecodeRecord(r.index[(dr.Off+from)*packformat.RecordSize:])
		last, _ := packformat.DecodeRecord(r.index[(dr.Off+end-1)*packformat.RecordSize:])
		lo, hi := uint64(first.NameOff), uint64(last.NameOff)+uint64(last.NameLen)
		if lo <= hi && hi <= uint64(len(r.strs)) && hi-lo <= 64*(end-from)+1<<16 {
			span, spanOff = string(r.strs[lo:hi]), lo
		}
	}
	var prev string
	if from > 0 {
		p, err := r.nameAt(dr.Off + from - 1)
		if err != nil {
			return nil, err
		}
		prev = string(p)
	}
	for k := from; k < end; k++ {
		i := dr.Off + k
		rc, err := r.rec(i)
		if err != nil {
			return nil, err
		}
		no, nl := uint64(rc.NameOff), uint64(rc.NameLen)
		var name string
		if no >= spanOff && no+nl <= spanOff+uint64(len(span)) {
			name = span[no-spanOff : no-spanOff+nl]
		} else {
			name = string(r.strs[no : no+nl])
		}
		if uint64(rc.Parent) != d || !validName(name) || (k > 0 && prev >= name) {
			return nil, corrupt("entry %d: bad name %q or parent %d in directory %d", i, name, rc.Parent, d)
		}
		prev = name
		fi := &infos[k-from]
		r.fillInfo(fi, name, rc)
		out = append(out, fi)
	}
	return out, nil
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
