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
	pos      int64  // read offset
	dirPos   uint64 // next ReadDir position
	verified bool
	at       frameAt // format 3: the frame read last
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
		if err := f.r.readContentAt(p[:n], f.rc, uint64(off), at); err != nil {
			return 0, pathErr(op, f.name, err)
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
// decompressed on as many goroutines as GOMAXPROCS, a frame's worth at a
// time, ahead of what is written to w, in order. The caller holds f.mu;
// each read takes the Reader's lock itself, and none is held while w
// runs. Every read has ended when it returns.
func (f *file) writeToParallel(w io.Writer) (int64, error) {
	const chunk = packformat.ZstdFrameSize
	type result struct {
		buf  []byte
		n    int
		err  error
		done chan struct{}
	}
	size := int64(f.size())
	next := f.pos
	var queue []*result
	submit := func(buf []byte) {
		r := &result{buf: buf, done: make(chan struct{})}
		off := next
		next += chunk
		go func() {
			r.n, r.err = f.readAtHint("read", r.buf, off, nil)
			close(r.done)
		}()
		queue = append(queue, r)
	}
	drain := func() {
		for _, r := range queue {
			<-r.done
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
		if r.n > 0 {
			m, werr := w.Write(r.buf[:r.n])
			f.pos += int64(m)
			total += int64(m)
			if werr == nil && m < r.n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				drain()
				return total, werr
			}
		}
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
	return nil
}
