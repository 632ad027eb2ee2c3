package packfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/packfs/packfs/wal"
)

// opKind names a change the durable store logs. The log holds changes,
// not their effects: replaying them in order over the same layers, with
// the same clock, rebuilds the same tree.
type opKind byte

const (
	opMkdir     opKind = iota + 1 // path, a: perm
	opMkdirAll                    // path, a: perm
	opOpen                        // path, a: flag, b: perm (an open that creates or truncates)
	opWriteFile                   // path, a: perm, data
	opWriteAt                     // path, a: offset, data (through a handle)
	opTruncate                    // path, a: size (through a handle)
	opRemove                      // path
	opRemoveAll                   // path
	opRename                      // path, path2
	opSymlink                     // path: the target, path2: the link
	opChmod                       // path, a: mode
	opChtimes                     // path, a: atime, b: mtime, c: which are zero
	opChown                       // path, a: uid, b: gid
	opLchown                      // path, a: uid, b: gid
	opLchtimes                    // as opChtimes, not following a final symlink
	opLast
)

// op is one logged change. time is the clock the change ran with, in
// Unix nanoseconds.
type op struct {
	kind        opKind
	time        int64
	path, path2 string
	a, b, c     int64
	data        []byte
}

// encode appends the op to buf.
func (o *op) encode(buf []byte) []byte { return append(o.encodeHead(buf), o.data...) }

// encodeHead appends the op to buf but for its data's bytes, which
// follow it in the entry: a large write is logged from where it lies.
func (o *op) encodeHead(buf []byte) []byte {
	buf = append(buf, byte(o.kind))
	buf = binary.AppendVarint(buf, o.time)
	buf = binary.AppendUvarint(buf, uint64(len(o.path)))
	buf = append(buf, o.path...)
	buf = binary.AppendUvarint(buf, uint64(len(o.path2)))
	buf = append(buf, o.path2...)
	buf = binary.AppendVarint(buf, o.a)
	buf = binary.AppendVarint(buf, o.b)
	buf = binary.AppendVarint(buf, o.c)
	return binary.AppendUvarint(buf, uint64(len(o.data)))
}

// maxChunk bounds the data of one entry of the log, below wal.MaxEntry
// with room for the rest of the record (paths are under 4,096 bytes). A
// variable, so that a test can make it small.
var maxChunk = wal.MaxEntry - 1<<16

// size bounds the bytes of the op's entry: its strings and data, and at
// most 1+5×10+3×10 bytes of kind and varints.
func (o *op) size() int { return 81 + len(o.path) + len(o.path2) + len(o.data) }

// split reports whether the op takes more than one entry of the log.
func (o *op) split() bool {
	return len(o.data) > maxChunk && (o.kind == opWriteFile || o.kind == opWriteAt)
}

// entries encodes the op as entries of the log, one unit: a write of more
// than maxChunk bytes becomes its first chunk and writes at the offsets
// of the others, which replay to the same file, with the same clock.
func (o *op) entries() [][]byte {
	if !o.split() {
		return [][]byte{o.encode(nil)}
	}
	first := *o
	first.data = o.data[:maxChunk]
	es := [][]byte{first.encode(nil)}
	base := int64(0)
	if o.kind == opWriteAt {
		base = o.a
	}
	for off := maxChunk; off < len(o.data); off += maxChunk {
		c := op{kind: opWriteAt, time: o.time, path: o.path, a: base + int64(off), data: o.data[off:min(off+maxChunk, len(o.data))]}
		es = append(es, c.encode(nil))
	}
	return es
}

// appendEntries appends the entries of the op, as entries returns them,
// to buf, one after another, and the end of each in buf to ends.
func (o *op) appendEntries(buf []byte, ends []int) ([]byte, []int) {
	if !o.split() {
		buf = o.encode(buf)
		return buf, append(ends, len(buf))
	}
	for _, e := range o.entries() {
		buf = append(buf, e...)
		ends = append(ends, len(buf))
	}
	return buf, ends
}

var errBadOp = errors.New("malformed change record")

// decodeOp decodes an entry of the log. data aliases b.
func decodeOp(b []byte) (op, error) {
	var o op
	if len(b) == 0 || b[0] == 0 || opKind(b[0]) >= opLast {
		return o, errBadOp
	}
	o.kind = opKind(b[0])
	b = b[1:]
	varint := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	bytesField := func() []byte {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			b = nil
			return nil
		}
		v := b[n : n+int(l) : n+int(l)]
		b = b[n+int(l):]
		return v
	}
	o.time = varint()
	o.path = string(bytesField())
	o.path2 = string(bytesField())
	o.a, o.b, o.c = varint(), varint(), varint()
	if b == nil {
		return o, errBadOp
	}
	o.data = bytesField()
	if b == nil || len(b) != 0 {
		return o, errBadOp
	}
	return o, nil
}

// Chtimes flags: the time was zero, which leaves it unchanged.
const (
	zeroAtime = 1 << iota
	zeroMtime
)

// chtimesOp is the change Chtimes (kind opChtimes) or Lchtimes
// (opLchtimes) makes.
func chtimesOp(kind opKind, name string, atime, mtime time.Time) op {
	o := op{kind: kind, path: name}
	if atime.IsZero() {
		o.c |= zeroAtime
	} else {
		o.a = atime.UnixNano()
	}
	if mtime.IsZero() {
		o.c |= zeroMtime
	} else {
		o.b = mtime.UnixNano()
	}
	return o
}

func timeOrZero(ns int64, zero bool) time.Time {
	if zero {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// apply makes the change o to u. It is the one place the store changes
// its layers, live and at replay alike.
func apply(u *FS, o op) error {
	switch o.kind {
	case opMkdir:
		return u.Mkdir(o.path, fs.FileMode(o.a))
	case opMkdirAll:
		return u.MkdirAll(o.path, fs.FileMode(o.a))
	case opOpen:
		f, err := u.OpenFile(o.path, int(o.a), fs.FileMode(o.b))
		if err != nil {
			return err
		}
		return f.Close()
	case opWriteFile:
		return u.WriteFile(o.path, o.data, fs.FileMode(o.a))
	case opWriteAt, opTruncate:
		f, err := u.OpenFile(o.path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if o.kind == opWriteAt {
			_, err = f.WriteAt(o.data, o.a)
		} else {
			err = f.Truncate(o.a)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case opRemove:
		return u.Remove(o.path)
	case opRemoveAll:
		return u.RemoveAll(o.path)
	case opRename:
		return u.Rename(o.path, o.path2)
	case opSymlink:
		return u.Symlink(o.path, o.path2)
	case opChmod:
		return u.Chmod(o.path, fs.FileMode(o.a))
	case opChtimes:
		return u.Chtimes(o.path, timeOrZero(o.a, o.c&zeroAtime != 0), timeOrZero(o.b, o.c&zeroMtime != 0))
	case opChown:
		return u.Chown(o.path, int(o.a), int(o.b))
	case opLchown:
		return u.Lchown(o.path, int(o.a), int(o.b))
	case opLchtimes:
		return u.Lchtimes(o.path, timeOrZero(o.a, o.c&zeroAtime != 0), timeOrZero(o.b, o.c&zeroMtime != 0))
	}
	return fmt.Errorf("change of unknown kind %d", o.kind)
}
