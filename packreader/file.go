package packreader

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime"
	"sync"
	"syscall"

	"github.com/packfs/packfs/internal/packformat"
)

var (
	_ fs.ReadDirFile = (*file)(nil)
	_ io.ReaderAt    = (*file)(nil)
	_ io.Seeker      = (*file)(nil)
	_ io.WriterTo    = (*file)(nil)
)

// file is an open entry. Its content's CRC-32C is checked on the first
// read, unless another read of the Reader checked it; a mismatch fails
// that read and every later one.
type file struct {
	r    *Reader
	name string
	i    uint64
	rc   packformat.Record

	mu       sync.Mutex
	closed   bool
	verified bool
	pos      int64   // read offset
	dirPos   uint64  // next ReadDir position
	at       frameAt // format 3: the frame read last
	ahead    *readAhead
}

func (f *file) Stat() (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, pathErr("stat", f.name, os.ErrClosed)
	}
	return f.r.info(baseName(f.name), f.i, f.rc), nil
}

func (f *file) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.readAt("read", p, f.pos)
	f.pos += int64(n)
	if n > 0 && err != io.EOF {
		err = nil // a short read; what failed fails the next one
	}
	return n, err
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.readAt("read", p, off)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// readAt reads at off; the caller holds f.mu.
func (f *file) readAt(op string, p []byte, off int64) (int, error) {
	return f.readAtHint(op, p, off, &f.at)
}

// readAtHint is readAt with the frame hint at (nil: none), for reads
// beside each other: writeToParallel's.
func (f *file) readAtHint(op string, p []byte, off int64, at *frameAt) (_ int, err error) {
	if f.closed {
		return 0, pathErr(op, f.name, os.ErrClosed)
	}
	if off > math.MaxInt64-int64(len(p)) {
		// The kernel checks that the range fits before it looks at
		// the file (rw_verify_area): EINVAL, not EOF, as os gives.
		return 0, pathErr(op, f.name, syscall.EINVAL)
	}
	switch f.rc.Type {
	case packformat.TypeDir:
		return 0, pathErr(op, f.name, syscall.EISDIR)
	case packformat.TypeFile:
	default:
		return 0, io.EOF
	}
	if off < 0 {
		return 0, pathErr(op, f.name, errors.New("negative offset"))
	}
	size := int64(f.rc.Size)
	if off >= size {
		return 0, io.EOF
	}
	g, err := f.r.rlock(op, f.name)
	if err != nil {
		return 0, err
	}
	defer f.r.runlock(op, f.name, g, &err)
	n := int(min(int64(len(p)), size-off))
	if f.r.version == packformat.Version3 {
		// The fast path of a read inside the raw, checked frame this
		// file read last, in the mapping: one copy, as format 2 does.
		if pos := f.rc.Off + uint64(off); at != nil && f.r.mapped != nil && at.holds(pos) && uint64(at.f.Stored) == at.raw &&
			pos+uint64(n) <= at.f.Pos+at.raw && f.r.frameChecked(at.i) {
			copy(p[:n], f.r.mapped[at.f.Off+(pos-at.f.Pos):])
			return n, nil
		}
		// A content checked whole before (placed) is read from the
		// mapping without its frame entry, as ReadFile reads it.
		if start, ok := f.r.placedAt(f.i, f.rc); ok {
			copy(p[:n], f.r.mapped[start+uint64(off):])
			return n, nil
		}
		if done, err := f.r.readContentAt(p[:n], f.rc, uint64(off), at); err != nil {
			// The bytes before the frame that failed are read: Read
			// returns them, and the error at its next call, which
			// starts at that frame, as read(2) does.
			return done, pathErr(op, f.name, err)
		}
		if at != nil {
			f.placeIn(at)
		}
		if at == &f.at {
			f.readAhead(off, n)
		}
		return n, nil
	}
	if !f.verified {
		if err := f.r.checkContent(f.i, f.rc); err != nil {
			return 0, pathErr(op, f.name, err)
		}
		f.verified = true
	}
	if err := f.r.readData(p[:n], f.rc.Off+uint64(off)); err != nil {
		return 0, pathErr(op, f.name, err)
	}
	return n, nil
}

func (f *file) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, pathErr("seek", f.name, os.ErrClosed)
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += int64(f.size())
	case SeekData, SeekHole:
		return f.seekData(offset, whence)
	default:
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	if offset < 0 {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	f.pos = offset
	if f.rc.Type == packformat.TypeDir && offset == 0 {
		f.dirPos = 0
	}
	return offset, nil
}

// SeekData and SeekHole are the whences of lseek(2) that Seek takes, as
// os.File's does on Linux: the next offset at or after the one given
// that holds data, or that starts a hole (the end of the file counts as
// one); past the end, ENXIO. Only format-3 packs store holes: other files
// are one extent of data.
const (
	SeekData = 3
	SeekHole = 4
)

// SeeksHoles reports that Seek takes SeekData and SeekHole, as a
// layer.HoleSeeker's does.
func (f *file) SeeksHoles() bool { return true }

// seekData is Seek with SeekData or SeekHole; the caller holds f.mu.
func (f *file) seekData(off int64, whence int) (_ int64, err error) {
	size := int64(f.size())
	if off < 0 || f.rc.Type == packformat.TypeDir {
		return 0, pathErr("seek", f.name, syscall.EINVAL)
	}
	if off >= size {
		return 0, pathErr("seek", f.name, syscall.ENXIO)
	}
	found := off
	if f.r.version == packformat.Version3 {
		g, err := f.r.rlock("seek", f.name)
		if err != nil {
			return 0, err
		}
		defer f.r.runlock("seek", f.name, g, &err)
		if found, err = f.r.nextExtent(f.rc, off, whence == SeekHole); err != nil {
			return 0, pathErr("seek", f.name, err)
		}
	} else if whence == SeekHole {
		found = size
	}
	if found >= size && whence == SeekData {
		return 0, pathErr("seek", f.name, syscall.ENXIO)
	}
	f.pos = found
	return found, nil
}

// placeIn remembers where the file's content is (see placed) when a
// read just found it whole in at, a raw frame whose CRC-32C matched, in
// the mapping: the next read of the record, by this handle, another or
// ReadFile, then reads no frame entry. The caller holds r.mu.
func (f *file) placeIn(at *frameAt) {
	if f.r.placed == nil || !at.valid || uint64(at.f.Stored) != at.raw || !f.r.frameChecked(at.i) ||
		f.rc.Off < at.f.Pos || f.rc.Off+f.rc.Size > at.f.Pos+at.raw {
		return
	}
	f.r.place(f.i, f.rc, at.f.Off+(f.rc.Off-at.f.Pos))
}

func (f *file) size() uint64 {
	if f.rc.Type == packformat.TypeFile {
		return f.rc.Size
	}
	return 0
}

// WriteTo writes the rest of the file to w, in chunks copied out of the
// pack so that no lock is held while w runs.
func (f *file) WriteTo(w io.Writer) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.r.zstd && f.rc.Type == packformat.TypeFile && int64(f.size())-f.pos > 2*packformat.ZstdFrameSize && !f.closed {
		return f.writeToParallel(w)
	}
	var buf []byte
	var total int64
	for {
		if buf == nil {
			buf = make([]byte, min(256<<10, max(int64(f.size())-f.pos, 1)))
		}
		n, err := f.readAt("read", buf, f.pos)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			f.pos += int64(m)
			total += int64(m)
			if werr != nil {
				return total, werr
			}
			if m < n {
				return total, io.ErrShortWrite
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// writeToParallel is WriteTo for a compressed content: frames are
// decompressed on as many goroutines as GOMAXPROCS, a frame at a time
// (a chunk of at most a frame's size, which ends where a frame does, so
// that no two goroutines decompress one frame), ahead of what is written
// to w, in order. The caller holds f.mu;
// each read takes the Reader's lock itself, and none is held while w
// runs. Every read has ended when it returns.
//
// What a zstd frame decompresses to is given to w where it lies, in the
// cache, without a copy (a reference keeps its buffer from reuse until w
// returns; io.Writer's contract keeps w from changing it, as for
// bytes.Reader's WriteTo); other bytes, raw frames (the mapping may go
// away with the lock) and holes, are copied into a buffer of the chunk's.
func (f *file) writeToParallel(w io.Writer) (int64, error) {
	const chunk = packformat.ZstdFrameSize
	type result struct {
		buf   []byte
		parts []viewPart
		err   error
		done  chan struct{}
	}
	size := int64(f.size())
	next := f.pos
	var queue []*result
	submit := func(buf []byte) {
		r := &result{buf: buf, done: make(chan struct{})}
		off := next
		next = min(f.frameEnd(off), off+chunk)
		b := r.buf[:next-off]
		go func() {
			r.parts, r.err = f.view(r.parts[:0], off, b)
			close(r.done)
		}()
		queue = append(queue, r)
	}
	release := func(r *result) {
		for k, p := range r.parts {
			if p.e != nil {
				p.e.release()
			}
			r.parts[k] = viewPart{}
		}
	}
	drain := func() {
		for _, r := range queue {
			<-r.done
			release(r)
		}
	}
	for next < size && len(queue) <= runtime.GOMAXPROCS(0) {
		submit(make([]byte, chunk))
	}
	var total int64
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		<-r.done
		for _, p := range r.parts {
			m, werr := w.Write(p.b)
			f.pos += int64(m)
			total += int64(m)
			if werr == nil && m < len(p.b) {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				release(r)
				drain()
				return total, werr
			}
		}
		release(r)
		if r.err != nil && r.err != io.EOF {
			drain()
			return total, r.err
		}
		if next < size {
			submit(r.buf)
		}
	}
	return total, nil
}

// viewPart is a stretch of a content that view found: bytes of the cache
// entry e (referenced once for the caller), or of view's buffer (e nil).
type viewPart struct {
	b []byte
	e *cacheEntry
}

// view appends to parts the bytes of the content from off, len(buf) of
// them or up to its end: those of zstd frames in place in the cache,
// others copied into buf, at their offset in it. An error ends the parts
// at the byte it happened at. The caller holds f.mu.
func (f *file) view(parts []viewPart, off int64, buf []byte) ([]viewPart, error) {
	size := int64(f.size())
	end := min(off+int64(len(buf)), size)
	for k := off; k < end; {
		b, e := f.cached(k, end-k)
		if e == nil {
			// Up to the next frame: a frame the cache may hold, or
			// the end.
			n := min(f.frameEnd(k), end) - k
			b = buf[k-off : k-off+n]
			m, err := f.readAtHint("read", b, k, nil)
			if m > 0 {
				parts = append(parts, viewPart{b: b[:m]})
			}
			if err != nil {
				return parts, err
			}
			if m == 0 {
				return parts, io.ErrNoProgress
			}
			b = b[:m]
		} else {
			parts = append(parts, viewPart{b: b, e: e})
		}
		k += int64(len(b))
	}
	return parts, nil
}

// cached returns the bytes of the content from off, at most n of them
// and in one frame, if they are in a zstd frame: from the cache (which
// decompresses the frame if it must), with the entry the caller must
// release. It returns a nil entry otherwise, and where any check fails,
// for readAtHint to redo and report. The caller holds f.mu.
func (f *file) cached(off, n int64) (_ []byte, _ *cacheEntry) {
	r := f.r
	g, err := r.rlock("read", f.name)
	if err != nil {
		return nil, nil
	}
	defer r.runlock("read", f.name, g, &err)
	pos := f.rc.Off + uint64(off)
	i, err := r.findFrame(f.rc, pos)
	if err != nil {
		return nil, nil
	}
	fr, raw, err := r.frame(i)
	if err != nil || fr.Stored == 0 || uint64(fr.Stored) == raw || pos < fr.Pos || pos-fr.Pos >= raw {
		return nil, nil
	}
	b, e, err := r.frameBytes(i, fr, raw)
	if err != nil || e == nil {
		return nil, nil
	}
	in := pos - fr.Pos
	return b[in : in+min(raw-in, uint64(n))], e
}

// frameEnd returns the offset in the content where the frame holding
// off ends, or the content's size if that cannot be told. The caller
// holds f.mu.
func (f *file) frameEnd(off int64) int64 {
	r := f.r
	size := int64(f.size())
	g, err := r.rlock("read", f.name)
	if err != nil {
		return size
	}
	defer r.runlock("read", f.name, g, &err)
	pos := f.rc.Off + uint64(off)
	i, err := r.findFrame(f.rc, pos)
	if err != nil {
		return size
	}
	fr, raw, err := r.frame(i)
	if err != nil || pos < fr.Pos || pos-fr.Pos >= raw {
		return size
	}
	return min(int64(fr.Pos+raw-f.rc.Off), size)
}

func (f *file) ReadDir(n int) (_ []fs.DirEntry, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, pathErr("readdirent", f.name, os.ErrClosed)
	}
	if f.rc.Type != packformat.TypeDir {
		return nil, pathErr("readdirent", f.name, syscall.ENOTDIR)
	}
	g, err := f.r.rlock("readdirent", f.name)
	if err != nil {
		return nil, err
	}
	defer f.r.runlock("readdirent", f.name, g, &err)
	if f.dirPos >= f.rc.Size {
		if n > 0 {
			return nil, io.EOF
		}
		return []fs.DirEntry{}, nil
	}
	ents, err := f.r.list(f.i, f.rc, f.dirPos, n)
	if err != nil {
		return nil, pathErr("readdirent", f.name, err)
	}
	f.dirPos += uint64(len(ents))
	return ents, nil
}

func (f *file) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, os.ErrClosed)
	}
	f.closed = true
	f.stopReadAhead()
	return nil
}
