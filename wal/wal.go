package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/packfs/packfs/vfs"
)

// ErrCorrupt is wrapped by the error Open gives for damage that a torn
// write cannot explain: a bad record before one that was written after it
// had been made durable, a segment shorter than its slot says was durable,
// a bad record in a segment that a later one follows, a missing segment.
var ErrCorrupt = errors.New("wal: corrupt log")

// ErrClosed is what an Append or Sync on a closed Log gives.
var ErrClosed = errors.New("wal: log closed")

// LSN is a position in the log: a segment id in the high 24 bits, a byte
// offset in the segment in the low 40. Later positions compare greater.
type LSN uint64

const offsetBits = 40

// maxSegments bounds segment ids, so that positions stay ordered.
const maxSegments = 1 << (64 - offsetBits)

func lsn(id uint64, off int64) LSN { return LSN(id<<offsetBits | uint64(off)) }

// Segment returns the id of the segment the position is in.
func (p LSN) Segment() uint64 { return uint64(p) >> offsetBits }

// Options configures Open.
type Options struct {
	// First is the id of the first segment to replay; older segments are
	// left over from a checkpoint and are removed.
	First uint64
	// FirstExists says that segment First was made durable, header and
	// name, before the caller recorded First: its absence or a damaged
	// header is then corruption, not a crash while it was being created.
	FirstExists bool
	// ReadOnly replays without changing anything: a torn tail is left in
	// place, and Append fails.
	ReadOnly bool
	// BufferSize is how many bytes Append gathers before writing them to
	// the file without a sync. The default is 1 MiB.
	BufferSize int
	// Preallocate, when positive, extends a segment with zeros that many
	// bytes at a time ahead of its records, so that a sync overwrites
	// allocated blocks instead of growing the file: on ext4 an fdatasync
	// that changes the size also commits the journal. Replay reads the
	// zeros as a torn tail and cuts them off. A large entry written to
	// the segment directly (see AppendSplit) also reserves the blocks of
	// several steps past it, where the file system can (vfs.Allocator),
	// so that the writes of a large file land within the file's size.
	// Rotate and Close cut what is left of both off. Both are only a
	// help: a disk without room for them fails no append or sync, and
	// what a refused reservation grew is cut at once, so that a log
	// never keeps the last of a disk's room from other writers.
	Preallocate int64
	// Gather, if set, is called by the committer about to write and sync
	// for all that wait, just before it takes the appended bytes: it may
	// wait a moment for appends it knows are coming, so that they share
	// this sync instead of needing the next.
	Gather func()
}

// Log is an open write-ahead log: a sequence of segment files in a
// vfs.FS. Appends gather in memory; Sync writes them and makes them
// durable with one fdatasync shared by every committer waiting at that
// moment. Its methods are safe for concurrent use.
type Log struct {
	fsys     vfs.FS
	readOnly bool
	bufSize  int
	prealloc int64
	gather   func()

	// mu guards the fields below it: the segment being appended, the
	// bytes not yet written to it, and the sticky error.
	mu      sync.Mutex
	seg     vfs.File
	id      uint64
	written int64  // bytes of the segment handed to the file
	durable int64  // bytes of the segment known durable
	buf     []byte // bytes after written
	spare   []byte // the buffer the last flush wrote, for reuse
	err     error  // sticky: a write or sync failed
	closed  bool
	syncing chan struct{} // closed when the leader's sync ends; nil: none runs
	segs    []uint64      // the live segments, oldest first
	size    int64         // bytes in the live segments, buffered included

	// flushMu admits one writer of the segment file at a time: the group
	// commit leader.
	flushMu   sync.Mutex
	allocated int64         // the segment file's size, or a bound on it after a write or cut that failed part of the way; guarded by flushMu
	filled    int64         // the end of the records and zeros written to it, within allocated; guarded by flushMu
	noAlloc   bool          // the segment's file system cannot allocate; guarded by flushMu
	allocOff  bool          // the disk ran out in this segment: no more reservations or zeros until the next; guarded by flushMu
	slot      int64         // the durable offset the segment's slot holds, -1 if it has none; guarded by flushMu
	synced    atomic.Uint64 // an LSN: everything before it is durable

	// mapMu guards the windows AppendMapped has mapped (see mapped.go).
	mapMu   sync.Mutex
	windows map[windowKey]weak.Pointer[Mapping]
	noMap   bool
}

// Open replays the log in fsys and opens it for appending. apply gets
// each committed unit in order: an entry appended alone, or the entries
// of one transaction together. A torn tail (a record a crash cut short,
// or a transaction without its commit) ends the replay and is truncated
// away. An error from apply stops Open and is returned.
func Open(fsys vfs.FS, opts Options, apply func(entries [][]byte) error) (*Log, error) {
	if opts.First >= maxSegments {
		return nil, fmt.Errorf("%w: segment %d: ids end at %d", ErrCorrupt, opts.First, uint64(maxSegments-1))
	}
	l := &Log{fsys: fsys, readOnly: opts.ReadOnly, bufSize: opts.BufferSize, prealloc: opts.Preallocate, gather: opts.Gather}
	if l.bufSize <= 0 {
		l.bufSize = 1 << 20
	}
	names, err := fsys.ReadDir()
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, n := range names {
		id, ok := parseSegmentName(n)
		switch {
		case !ok || id >= maxSegments:
		case id < opts.First:
			if !l.readOnly {
				if err := fsys.Remove(n); err != nil {
					return nil, err
				}
			}
		default:
			ids = append(ids, id)
		}
	}
	for i, id := range ids {
		if id != opts.First+uint64(i) {
			return nil, fmt.Errorf("%w: segment %d missing", ErrCorrupt, opts.First+uint64(i))
		}
	}
	if len(ids) == 0 && opts.FirstExists {
		return nil, fmt.Errorf("%w: segment %d missing", ErrCorrupt, opts.First)
	}
	// exists says the segment replayed next had been made durable: the
	// caller says so of the first, a sealed segment of the one after it.
	exists := opts.FirstExists
	unsealed, unsealedEnd := false, int64(0) // a segment a crash in Rotate left unsealed
	for i, id := range ids {
		last := i == len(ids)-1
		h, end, units, err := l.replaySegment(id, last, exists, apply)
		if err != nil {
			return nil, err
		}
		if unsealed && (!last || units > 0) {
			return nil, fmt.Errorf("%w: %s is followed by segments but not sealed", ErrCorrupt, segmentName(id-1))
		}
		if !last && !h.sealed && h.version >= 2 {
			// Rotate makes the next segment durable before it seals
			// this one: a crash in between leaves this one unsealed
			// and the next, the last, without records.
			unsealed, unsealedEnd = true, end
		}
		exists = h.sealed
		l.segs = append(l.segs, id)
		l.size += end
		if last {
			l.id, l.written, l.durable, l.allocated, l.filled = id, end, end, end, end
			l.slot = -1
			if h.version >= 2 {
				l.slot = h.durable
			}
		}
	}
	if len(ids) == 0 {
		l.id = opts.First
		if !l.readOnly {
			if err := l.create(l.id); err != nil {
				return nil, err
			}
		}
		l.segs = append(l.segs, l.id)
		l.size = segHeaderSize
		l.written, l.durable, l.allocated, l.filled, l.slot = segHeaderSize, segHeaderSize, segHeaderSize, segHeaderSize, segHeaderSize
	} else if !l.readOnly {
		if unsealed {
			// Finish the Rotate the crash cut short.
			if err := l.seal(l.id-1, unsealedEnd); err != nil {
				return nil, err
			}
		}
		if l.seg, err = fsys.OpenFile(segmentName(l.id), os.O_WRONLY, 0); err != nil {
			return nil, err
		}
		// What replay read may be a killed process's writes, still only
		// in the page cache: sync them before anything (a slot, a
		// record's durable offset) claims them durable.
		if err := l.seg.Sync(); err != nil {
			l.seg.Close()
			return nil, err
		}
	}
	l.synced.Store(uint64(lsn(l.id, l.written)))
	return l, nil
}

// replaySegment replays segment id and returns its header, where its
// valid records end and how many units it held, having truncated a torn
// tail if the segment is the last. exists says the segment had been made
// durable, so that a damaged header is no crash while it was created.
func (l *Log) replaySegment(id uint64, last, exists bool, apply func([][]byte) error) (segHeader, int64, int, error) {
	name := segmentName(id)
	b, err := l.read(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w: segment %d missing: %w", ErrCorrupt, id, err)
		}
		return segHeader{}, 0, 0, err
	}
	h, err := checkSegmentHeader(b, id)
	if err != nil {
		// A crash while the segment was being created leaves its header
		// short or zero; the segment was never used, so it starts again.
		if last && !exists && torn(b, 0) {
			if !l.readOnly {
				if err := l.recreate(id); err != nil {
					return segHeader{}, 0, 0, err
				}
			}
			return segHeader{version: segVersion, size: segHeaderSize, durable: segHeaderSize}, segHeaderSize, 0, nil
		}
		return segHeader{}, 0, 0, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	off := h.size
	good := off // the end of the last committed unit
	units := 0
	var tx [][]byte
	var txStart, txCount int
	inTx := false
	for off < len(b) {
		r, perr := parseRecord(b[off:])
		if perr == nil {
			switch {
			case r.typ == recBegin && !inTx:
				inTx, txStart, tx = true, off, tx[:0]
				txCount = int(binary.LittleEndian.Uint32(r.payload))
			case r.typ == recTx && inTx:
				tx = append(tx, r.payload)
			case r.typ == recCommit && inTx:
				if int(binary.LittleEndian.Uint32(r.payload)) != txCount || len(tx) != txCount {
					perr = fmt.Errorf("transaction of %d entries commits %d", len(tx), txCount)
					break
				}
				if err := apply(tx); err != nil {
					return h, 0, 0, fmt.Errorf("wal: %s at %d: %w", name, txStart, err)
				}
				inTx = false
				good = off + r.size
				units++
			case r.typ == recEntry && !inTx:
				if err := apply([][]byte{r.payload}); err != nil {
					return h, 0, 0, fmt.Errorf("wal: %s at %d: %w", name, off, err)
				}
				good = off + r.size
				units++
			default:
				perr = fmt.Errorf("record of type %d out of place", r.typ)
			}
		}
		if perr != nil {
			if !last || !torn(b, off) {
				return h, 0, 0, fmt.Errorf("%w: %s at %d: %v", ErrCorrupt, name, off, perr)
			}
			break
		}
		off += r.size
	}
	switch {
	case int64(good) < h.durable:
		// The slot is rewritten only to offsets already durable, and a
		// crash never takes back what was durable.
		return h, 0, 0, fmt.Errorf("%w: %s: records end at %d, but %d had been made durable", ErrCorrupt, name, good, h.durable)
	case h.sealed && last:
		return h, 0, 0, fmt.Errorf("%w: %s is sealed: the log goes on in segment %d, which is missing", ErrCorrupt, name, id+1)
	case h.sealed && int64(len(b)) != h.durable:
		return h, 0, 0, fmt.Errorf("%w: %s is sealed at %d but holds %d bytes", ErrCorrupt, name, h.durable, len(b))
	case !last && inTx:
		// A transaction never spans segments, and a segment is synced
		// whole before the next is made.
		return h, 0, 0, fmt.Errorf("%w: %s ends inside a transaction", ErrCorrupt, name)
	}
	if good < len(b) && !l.readOnly {
		// The tail holds a torn record or an uncommitted transaction.
		if err := l.truncate(name, int64(good)); err != nil {
			return h, 0, 0, err
		}
	}
	return h, int64(good), units, nil
}

// read reads segment name whole. A read-only log may read a segment that
// its writer is cutting at that moment (Rotate cuts preallocated zeros):
// then what was read is what the segment held, and is kept.
func (l *Log) read(name string) ([]byte, error) {
	if !l.readOnly {
		return vfs.ReadFile(l.fsys, name)
	}
	f, err := l.fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return b[:n], nil
}

// torn reports whether bad bytes at off in a last segment can be a torn
// tail: no valid record after them claims that off had been made durable.
// A crash may leave any part of what was not yet synced, so valid records
// may follow; but every record carries the durable offset when it was
// made, and one that claims more than off proves the damage hit durable
// bytes.
func torn(b []byte, off int) bool {
	for i := off + 1; i+recHeaderSize <= len(b); i++ {
		if binary.LittleEndian.Uint32(b[i:]) != recMagic {
			continue
		}
		if r, err := parseRecord(b[i:]); err == nil && r.synced > int64(off) {
			return false
		}
	}
	return true
}

func (l *Log) truncate(name string, size int64) error {
	f, err := l.fsys.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// create makes segment id durable with its header, and makes it the
// segment appended to.
func (l *Log) create(id uint64) error {
	f, err := l.fsys.OpenFile(segmentName(id), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	return l.start(f, id)
}

// recreate writes segment id's header over a torn one.
func (l *Log) recreate(id uint64) error {
	f, err := l.fsys.OpenFile(segmentName(id), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	return l.start(f, id)
}

// start writes segment id's header to f, makes it and its name durable,
// and makes f the segment appended to.
func (l *Log) start(f vfs.File, id uint64) error {
	_, err := f.WriteAt(segmentHeader(id), 0)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = l.fsys.SyncDir()
	}
	if err != nil {
		f.Close()
		return err
	}
	l.seg = f
	l.allocated, l.filled, l.slot = segHeaderSize, segHeaderSize, segHeaderSize
	l.allocOff = false
	return nil
}

// seal marks segment id, whose records end at end, as followed by the
// next segment, and makes that durable.
func (l *Log) seal(id uint64, end int64) error {
	f, err := l.fsys.OpenFile(segmentName(id), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = sealFile(f, id, end)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func sealFile(f vfs.File, id uint64, end int64) error {
	if _, err := f.WriteAt(encodeSlot(id, end, slotSealed), slotOff); err != nil {
		return err
	}
	return f.Sync()
}

// Append adds entries to the log as one committed unit: one entry alone,
// or several as a transaction that replay gives whole or not at all. It
// returns the position after the unit, for Sync. The entries are copied.
func (l *Log) Append(entries ...[]byte) (LSN, error) {
	if len(entries) == 0 {
		return l.End(), nil
	}
	for _, e := range entries {
		if len(e) > MaxEntry {
			return 0, fmt.Errorf("wal: entry of %d bytes, the most is %d", len(e), MaxEntry)
		}
	}
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	n := len(l.buf)
	if len(entries) == 1 {
		l.buf = appendRecord(l.buf, recEntry, l.durable, entries[0])
	} else {
		var count [4]byte
		binary.LittleEndian.PutUint32(count[:], uint32(len(entries)))
		l.buf = appendRecord(l.buf, recBegin, l.durable, count[:])
		for _, e := range entries {
			l.buf = appendRecord(l.buf, recTx, l.durable, e)
		}
		l.buf = appendRecord(l.buf, recCommit, l.durable, count[:])
	}
	l.size += int64(len(l.buf) - n)
	end := lsn(l.id, l.written+int64(len(l.buf)))
	full := len(l.buf) >= l.bufSize
	l.mu.Unlock()
	if full {
		if err := l.flush(0); err != nil {
			return 0, err
		}
	}
	return end, nil
}

// directMin is the size from which AppendSplit writes an entry to the
// segment itself rather than gathering it in the buffer.
const directMin = 32 << 10

// overlapMin is the size of tail from which AppendSplit computes its CRC
// on another goroutine while it writes it: the CRC of 1 MiB takes about
// a fifth of the time its write to tmpfs does (some 100 µs), a goroutine
// about a microsecond.
const overlapMin = 256 << 10

// AppendSplit appends one entry, head followed by tail, as Append does,
// without joining them first. A tail of directMin bytes or more is
// written straight to the segment, behind what was buffered, and not
// copied: a large write is logged with no copy but the page cache's.
// The segment is written then; it is synced, as ever, by Sync.
func (l *Log) AppendSplit(head, tail []byte) (LSN, error) {
	if len(head)+len(tail) > MaxEntry {
		return 0, fmt.Errorf("wal: entry of %d bytes, the most is %d", len(head)+len(tail), MaxEntry)
	}
	if len(tail) < directMin {
		l.mu.Lock()
		if err := l.usable(); err != nil {
			l.mu.Unlock()
			return 0, err
		}
		n := len(l.buf)
		l.buf = appendRecordSplit(l.buf, recEntry, l.durable, head, tail)
		l.size += int64(len(l.buf) - n)
		end := lsn(l.id, l.written+int64(len(l.buf)))
		full := len(l.buf) >= l.bufSize
		l.mu.Unlock()
		if full {
			if err := l.flush(0); err != nil {
				return 0, err
			}
		}
		return end, nil
	}
	// The file is written in offset order under flushMu: what the
	// buffer holds first, then this record.
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	n := len(l.buf)
	data := appendRecordSplit(l.buf, recEntry, l.durable, head, tail[:0])
	binary.LittleEndian.PutUint32(data[n+4:], uint32(len(head)+len(tail)))
	l.buf, l.spare = l.spare[:0], nil
	seg, id, at := l.seg, l.id, l.written
	size := int64(len(data)) + int64(len(tail))
	l.written += size
	l.size += size - int64(n)
	end := lsn(id, l.written)
	l.mu.Unlock()

	// The record's CRC covers tail too, which is written from where it
	// lies. A large tail is written first, while another goroutine
	// computes the CRC, and the header with it after: the order of the
	// writes is free, since no byte of them counts before the sync that
	// follows them, and replay checks the CRC of what a crash leaves.
	l.allocate(seg, at+size)
	var err error
	rec := data[n:]
	if len(tail) >= overlapMin {
		crc := make(chan uint32, 1)
		go func() { crc <- recordCRC(rec, tail) }()
		_, err = seg.WriteAt(tail, at+int64(len(data)))
		binary.LittleEndian.PutUint32(rec[8:], <-crc)
		if err == nil {
			_, err = seg.WriteAt(data, at)
		}
	} else {
		binary.LittleEndian.PutUint32(rec[8:], recordCRC(rec, tail))
		_, err = seg.WriteAt(data, at)
		if err == nil {
			_, err = seg.WriteAt(tail, at+int64(len(data)))
		}
	}
	l.allocated = max(l.allocated, at+size)
	l.filled = max(l.filled, at+size)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.err = fmt.Errorf("wal: %s: %w", segmentName(id), err)
		return 0, l.err
	}
	if cap(data) <= 4*l.bufSize {
		l.spare = data[:0]
	}
	return end, nil
}

// Writes reports whether appending one entry of n bytes now would write
// to the segment, not only to the buffer: AppendSplit writes a large
// entry at once, and an append that fills the buffer writes it out. Only
// an append that writes can fail for want of disk; one that does not
// fails only on a log already failed or closed. Other appends may change
// the answer; a Sync, which empties the buffer, only to false.
func (l *Log) Writes(n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return n >= directMin || len(l.buf)+recHeaderSize+n >= l.bufSize
}

func (l *Log) usable() error {
	switch {
	case l.closed:
		return ErrClosed
	case l.err != nil:
		return l.err
	case l.readOnly:
		return fmt.Errorf("wal: %w: opened read-only", os.ErrPermission)
	}
	return nil
}

// End returns the position after the last append.
func (l *Log) End() LSN {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lsn(l.id, l.written+int64(len(l.buf)))
}

// Size returns the bytes in the log's live segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

// Sync makes everything before p durable. Committers that call Sync at
// the same time share one write and one fdatasync: whoever gets the file
// first writes what every one of them appended.
//
// A failed write or sync is sticky: this and every later Append and Sync
// fail, and the sync is never retried, because after a failed fsync the
// kernel may have dropped the dirty pages and a retry would report
// success for data that is gone. Reopen the log to go on.
func (l *Log) Sync(p LSN) error {
	for LSN(l.synced.Load()) < p {
		// One committer at a time writes and syncs for all: the leader.
		// The others wait for its sync to end, all woken together, and
		// then either are served or elect the next leader, who gathers
		// what they append meanwhile.
		l.mu.Lock()
		if err := l.usable(); err != nil {
			l.mu.Unlock()
			return err
		}
		if done := l.syncing; done != nil {
			l.mu.Unlock()
			<-done
			continue
		}
		done := make(chan struct{})
		l.syncing = done
		l.mu.Unlock()
		err := l.flush(p)
		l.mu.Lock()
		l.syncing = nil
		l.mu.Unlock()
		close(done)
		if err != nil {
			return err
		}
	}
	return l.stickyErr()
}

// SyncAll makes every append so far durable.
func (l *Log) SyncAll() error { return l.Sync(l.End()) }

// Synced returns the position before which everything is durable.
func (l *Log) Synced() LSN { return LSN(l.synced.Load()) }

func (l *Log) stickyErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// flush writes the buffered bytes to the segment and, unless upTo is 0,
// syncs it; a flush waiting its turn that finds upTo already durable has
// been served by the leader before it, and returns.
func (l *Log) flush(upTo LSN) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	sync := upTo != 0
	if sync && LSN(l.synced.Load()) >= upTo {
		return l.stickyErr()
	}
	if sync && l.gather != nil {
		l.gather()
	}
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	data := l.buf
	l.buf, l.spare = l.spare[:0], nil
	seg, id, at, durable := l.seg, l.id, l.written, l.durable
	l.written += int64(len(data))
	l.mu.Unlock()

	var err error
	end := at + int64(len(data))
	if len(data) > 0 {
		_, err = seg.WriteAt(data, at)
	}
	l.allocated = max(l.allocated, end)
	l.filled = max(l.filled, end)
	if err == nil && sync && l.prealloc > 0 && end >= l.filled && !l.allocOff {
		// Zeros ahead of the records, only when a sync follows: the
		// records are written once, and a flush of a full buffer between
		// syncs grows the file without writing zeros it then overwrites.
		// They are no part of the records: a disk with room for the
		// records but not for the zeros fails no sync (the sync says
		// whether the records are durable), and the segment writes no
		// more zeros.
		if l.extend(seg, end) != nil {
			l.allocOff = true
		}
	}
	slot := sync && l.slot >= 0 && durable > l.slot
	if err == nil && slot {
		// The same sync carries the slot forward to what the last one
		// made durable: the slot never claims bytes this sync may still
		// lose, and a segment cut short below it is no crash.
		_, err = seg.WriteAt(encodeSlot(id, durable, 0), slotOff)
	}
	if err == nil && sync {
		err = seg.Sync()
	}
	if err == nil && slot {
		l.slot = durable
	}
	if err != nil {
		l.mu.Lock()
		l.err = fmt.Errorf("wal: %s: %w", segmentName(id), err)
		err = l.err
		l.mu.Unlock()
		return err
	}
	l.mu.Lock()
	if sync && l.id == id {
		l.durable = at + int64(len(data))
	}
	if cap(data) <= 4*l.bufSize {
		l.spare = data[:0] // written: its bytes may be reused
	}
	l.mu.Unlock()
	if sync {
		l.synced.Store(uint64(lsn(id, at+int64(len(data)))))
	}
	return nil
}

// zeros is what a segment is extended with.
var zeros = make([]byte, 64<<10)

// extend writes zeros to the segment, from end, where the records
// written end, to the next step of the preallocation size; l.flushMu is
// held. Written zeros, not allocated ones: on ext4 a write into allocated
// blocks marks them written, a change of metadata that the next
// fdatasync commits to the journal, as it does a change of size.
func (l *Log) extend(seg vfs.File, end int64) error {
	to := (end/l.prealloc + 1) * l.prealloc
	for l.filled < to {
		n := min(int64(len(zeros)), to-l.filled)
		if _, err := seg.WriteAt(zeros[:n], l.filled); err != nil {
			// Part of them may have been written: Rotate and Close cut
			// up to here too.
			l.allocated = max(l.allocated, l.filled+n)
			return err
		}
		l.filled += n
		l.allocated = max(l.allocated, l.filled)
	}
	return nil
}

// allocateSteps is how many preallocation steps past a large write's end
// allocate reserves.
const allocateSteps = 8

// allocate reserves the segment's blocks up to allocateSteps
// preallocation steps past end, where a large write is about to end, if
// end lies past the file's size and its file system can (vfs.Allocator);
// l.flushMu is held. The write then lands within the file's size: on
// ext4 a 64 KiB write that extends a file costs 1.3x one into allocated
// blocks (in the page cache, before any sync). Replay reads the reserved
// zeros as a torn tail, as it reads those of extend; Rotate and Close cut
// them off. A failed reservation is no error: the write that follows
// says whether the disk is full.
func (l *Log) allocate(seg vfs.File, end int64) {
	a, ok := seg.(vfs.Allocator)
	if !ok || l.noAlloc || l.allocOff || l.prealloc <= 0 || end <= l.allocated {
		return
	}
	to := end + allocateSteps*l.prealloc
	err := a.Allocate(l.allocated, to-l.allocated)
	if err == nil {
		l.allocated = to
		return
	}
	if errors.Is(err, errors.ErrUnsupported) {
		l.noAlloc = true
		return
	}
	// A full disk: ext4 keeps the blocks it found before it ran out and
	// grows the file over them, which would leave the disk full for
	// every other writer until Rotate or Close. Cut them off, and
	// reserve no more in this segment; if the cut fails too, the file
	// may be as large as to, which Rotate and Close cut.
	l.allocOff = true
	if seg.Truncate(l.allocated) != nil {
		l.allocated = to
	}
}

// Rotate makes everything appended so far durable and starts a new
// segment; later appends go to it. It returns the new segment's id, from
// which a replay after a checkpoint of everything before it starts.
func (l *Log) Rotate() (uint64, error) {
	if err := l.SyncAll(); err != nil {
		return 0, err
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return 0, err
	}
	if len(l.buf) > 0 {
		// Appended after the sync above: keep it in the old segment, so
		// that the new one starts with the state a checkpoint covers.
		return 0, errors.New("wal: Rotate raced with Append; the caller must hold appends")
	}
	old := l.seg
	next := l.id + 1
	if next >= maxSegments {
		return 0, fmt.Errorf("wal: segment ids exhausted at %d", l.id)
	}
	if l.allocated > l.written {
		// Cut the preallocated zeros off before a segment follows: only
		// the last segment may end in anything but a record.
		if err := old.Truncate(l.written); err != nil {
			l.err = err
			return 0, err
		}
		if err := old.Sync(); err != nil {
			l.err = err
			return 0, err
		}
		l.allocated, l.filled = l.written, l.written
	}
	// A new segment that cannot be made (a full disk, say) costs
	// nothing: the old one is whole and durable, unsealed, and goes on
	// taking appends, and a later Rotate tries again.
	oldID, oldEnd, sealable := l.id, l.written, l.slot >= 0
	f, err := l.fsys.OpenFile(segmentName(next), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	if err := l.start(f, next); err != nil {
		l.fsys.Remove(segmentName(next))
		return 0, err
	}
	l.id = next
	if sealable {
		// Only once the next segment is durable does the old one say
		// that it exists: a sealed last segment is then damage.
		if err := sealFile(old, oldID, oldEnd); err != nil {
			old.Close()
			l.err = fmt.Errorf("wal: %s: %w", segmentName(oldID), err)
			return 0, l.err
		}
	}
	old.Close()
	l.written, l.durable = segHeaderSize, segHeaderSize
	l.segs = append(l.segs, next)
	l.size += segHeaderSize
	l.synced.Store(uint64(lsn(next, segHeaderSize)))
	return next, nil
}

// Drop removes the segments before id, which a checkpoint has covered.
func (l *Log) Drop(id uint64) error {
	l.mu.Lock()
	var drop []uint64
	for len(l.segs) > 0 && l.segs[0] < id && l.segs[0] != l.id {
		drop = append(drop, l.segs[0])
		l.segs = l.segs[1:]
	}
	l.mu.Unlock()
	for _, d := range drop {
		// The size of a dropped segment is not tracked: Size after a
		// Drop counts only what was appended since.
		if err := l.fsys.Remove(segmentName(d)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	l.mu.Lock()
	l.size = l.written + int64(len(l.buf))
	l.mu.Unlock()
	if len(drop) > 0 {
		l.forget(drop[len(drop)-1] + 1)
		return l.fsys.SyncDir()
	}
	return nil
}

// Close makes every append durable and closes the log. A log opened
// read-only just closes.
func (l *Log) Close() error {
	var err error
	if !l.readOnly {
		err = l.SyncAll()
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	// A last sync of the slot, so that a closed log vouches for every
	// record it holds, and of the zeros past them cut off, so that a
	// closed log holds no blocks it will not use. The cut comes first: a
	// crash before the sync may keep the old size or the new one, and
	// either ends in records or zeros.
	cut := l.seg != nil && l.allocated > l.written
	slot := l.seg != nil && l.slot >= 0 && l.durable > l.slot
	if err == nil && cut {
		if err = l.seg.Truncate(l.written); err == nil {
			l.allocated, l.filled = l.written, l.written
		}
	}
	if err == nil && slot {
		_, err = l.seg.WriteAt(encodeSlot(l.id, l.durable, 0), slotOff)
	}
	if err == nil && (cut || slot) {
		err = l.seg.Sync()
	}
	if err == nil && slot {
		l.slot = l.durable
	}
	if l.seg != nil {
		if cerr := l.seg.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
