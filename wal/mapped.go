package wal

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"weak"
)

// A large entry's data, once written to its segment, lies in the page
// cache; AppendMapped hands the caller a read-only mapping of it there, so
// that an in-memory copy of the data can be those very pages rather than
// a second copy. Segments are mapped in windows of mapWindow bytes,
// aligned, each shared by every view into it and unmapped by the garbage
// collector once no Mapping of it is reachable. The log keeps only weak
// pointers to its windows.
//
// A mapping stays valid after its segment is closed or removed (the
// kernel keeps a removed file while it is mapped), and the log never cuts
// a segment below the records it has written: Rotate cuts only zeros
// after them, and only Open cuts a torn tail, before any mapping of the
// segment by that log. Reading a mapped byte reads the segment's page,
// so a view is only as good as the page cache: an I/O error on a page
// evicted and read again faults, as it does for a mapped pack; and a log
// opened again in the same process, after a failed sync lost written
// pages, may cut a torn tail below a view the earlier log handed out,
// which then faults too.

// mapWindow is the size and alignment of a mapped window of a segment.
const mapWindow = 64 << 20

// Mapping is a window of a segment mapped read-only. A view that
// AppendMapped returns stays readable while its Mapping is reachable.
type Mapping struct {
	data []byte
}

// windowKey names a window: its segment and its index in it.
type windowKey struct {
	id  uint64
	idx int64
}

// mapper is what a segment file that can be mapped offers (an *os.File).
type mapper interface{ Fd() uintptr }

// AppendMapped appends as AppendSplit does and, when the tail was written
// to the segment at once (directMin bytes or more) and the log's files
// can be mapped, returns a read-only view of the tail's bytes in the
// segment and the Mapping that keeps it valid. Otherwise the view is nil.
// The view must never be written to.
func (l *Log) AppendMapped(head, tail []byte) (LSN, []byte, *Mapping, error) {
	end, err := l.AppendSplit(head, tail)
	if err != nil || len(tail) < directMin {
		return end, nil, nil, err
	}
	off := int64(end&(1<<offsetBits-1)) - int64(len(tail))
	view, m := l.view(end.Segment(), off, len(tail))
	return end, view, m, nil
}

// view returns the n bytes at off of segment id as mapped, or nil where
// they straddle a window or the segment cannot be mapped.
func (l *Log) view(id uint64, off int64, n int) ([]byte, *Mapping) {
	idx := off / mapWindow
	if (off+int64(n)-1)/mapWindow != idx {
		return nil, nil
	}
	l.mapMu.Lock()
	defer l.mapMu.Unlock()
	if l.noMap {
		return nil, nil
	}
	k := windowKey{id, idx}
	m := l.windows[k].Value()
	if m == nil {
		var err error
		if m, err = l.mapWindow(id, idx); err != nil {
			// A file system without mmap: views are not tried again.
			// (A segment that could not be opened is only this one.)
			l.noMap = errors.Is(err, errNoMap)
			return nil, nil
		}
		if l.windows == nil {
			l.windows = map[windowKey]weak.Pointer[Mapping]{}
		}
		l.windows[k] = weak.Make(m)
	}
	in := off - idx*mapWindow
	return m.data[in : in+int64(n) : in+int64(n)], m
}

// mapWindow maps window idx of segment id; l.mapMu is held.
func (l *Log) mapWindow(id uint64, idx int64) (*Mapping, error) {
	f, err := l.fsys.OpenFile(segmentName(id), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fd, ok := f.(mapper)
	if !ok {
		return nil, errNoMap
	}
	data, err := mmapWindow(int(fd.Fd()), idx*mapWindow, mapWindow)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoMap, err)
	}
	m := &Mapping{data: data}
	runtime.AddCleanup(m, munmapWindow, data)
	return m, nil
}

// forget drops the log's weak pointers to windows of segments before id,
// which are gone from the log; l.mapMu is taken.
func (l *Log) forget(id uint64) {
	l.mapMu.Lock()
	defer l.mapMu.Unlock()
	for k := range l.windows {
		if k.id < id {
			delete(l.windows, k)
		}
	}
}
