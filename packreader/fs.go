package packreader

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/packfs/packfs/internal/packformat"
)

var (
	_ fs.FS         = (*Reader)(nil)
	_ fs.ReadDirFS  = (*Reader)(nil)
	_ fs.ReadFileFS = (*Reader)(nil)
	_ fs.StatFS     = (*Reader)(nil)
	_ fs.ReadLinkFS = (*Reader)(nil)
	_ fs.SubFS      = (*Reader)(nil)
	_ fs.GlobFS     = (*Reader)(nil)
)

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open opens the named file, following symlinks. Directories open as
// fs.ReadDirFile; files implement io.ReaderAt, io.Seeker and io.WriterTo.
func (r *Reader) Open(name string) (_ fs.File, err error) {
	g, err := r.rlock("open", name)
	if err != nil {
		return nil, err
	}
	defer r.runlock("open", name, g, &err)
	i, rc, err := r.walk(name, true)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return &file{r: r, name: name, i: i, rc: rc}, nil
}

// Stat returns a FileInfo for the named file, following symlinks.
func (r *Reader) Stat(name string) (fs.FileInfo, error) { return r.stat("stat", name, true) }

// Lstat returns a FileInfo for the named file without following a final
// symlink.
func (r *Reader) Lstat(name string) (fs.FileInfo, error) { return r.stat("lstat", name, false) }

func (r *Reader) stat(op, name string, follow bool) (_ fs.FileInfo, err error) {
	g, err := r.rlock(op, name)
	if err != nil {
		return nil, err
	}
	defer r.runlock(op, name, g, &err)
	i, rc, err := r.walk(name, follow)
	if err != nil {
		return nil, pathErr(op, name, err)
	}
	return r.info(baseName(name), i, rc), nil
}

// ReadDir returns the entries of the named directory, sorted by name.
func (r *Reader) ReadDir(name string) (_ []fs.DirEntry, err error) {
	g, err := r.rlock("open", name)
	if err != nil {
		return nil, err
	}
	defer r.runlock("open", name, g, &err)
	i, rc, err := r.walk(name, true)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	if rc.Type != packformat.TypeDir {
		return nil, pathErr("open", name, syscall.ENOTDIR)
	}
	ents, err := r.list(i, rc, 0, -1)
	if err != nil {
		return nil, pathErr("readdirent", name, err)
	}
	return ents, nil
}

// ReadFile returns a copy of the named file's content, after checking
// its CRC-32C (once per content and Reader).
func (r *Reader) ReadFile(name string) (_ []byte, err error) {
	g, err := r.rlock("open", name)
	if err != nil {
		return nil, err
	}
	defer r.runlock("open", name, g, &err)
	i, rc, empty, err := r.fileRecord(name)
	if err != nil {
		return nil, err
	}
	if empty {
		return []byte{}, nil
	}
	return r.readRecord(name, i, rc)
}

// readRecord returns a copy of the content of the regular file rc, record
// i, known as name. The caller holds r.mu.
func (r *Reader) readRecord(name string, i uint64, rc packformat.Record) ([]byte, error) {
	if r.version == packformat.Version3 {
		if start, ok := r.placedAt(i, rc); ok {
			// Checked whole before: one word of placed, no frame entry.
			return append(make([]byte, 0, rc.Size), r.mapped[start:start+rc.Size]...), nil
		}
		return r.readFile3(name, i, rc)
	}
	// Check the content before allocating its copy, so that a bad one
	// costs none: a crafted pack can give many entries bad contents, each
	// as large as the data region. Through an io.ReaderAt this reads a
	// content twice the first time, as a file's first Read does.
	if err := r.checkContent(i, rc); err != nil {
		return nil, pathErr("read", name, err)
	}
	b := make([]byte, rc.Size)
	if err := r.readData(b, rc.Off); err != nil {
		return nil, pathErr("read", name, err)
	}
	return b, nil
}

// maxCopy is the size up to which ReadFile and Bytes copy a content out
// of any format-3 pack (see readFile3).
const maxCopy = 1 << 30

// readFile3 returns a copy of rc's content (version 3), record i's. The caller holds
// r.mu.
func (r *Reader) readFile3(name string, i uint64, rc packformat.Record) ([]byte, error) {
	if rc.Size == 0 {
		return []byte{}, nil
	}
	// A content's size is bounded by the stream's, which holes make
	// independent of the pack's size: a pack of a few hundred bytes may
	// claim a file of a terabyte, whose copy would kill the process.
	// Copies are refused past a bound that grows with the pack (a 1 GiB
	// sparse file reads whole from any pack); Open and Read stream any
	// size.
	if limit := max(maxCopy, 64*r.size); rc.Size > limit || uint64(int(rc.Size)) != rc.Size {
		return nil, pathErr("read", name, fmt.Errorf("%w: a content of %d bytes is over the %d a copy may take from this pack; read it through Open", syscall.EFBIG, rc.Size, limit))
	}
	if r.mapped != nil {
		// An uncompressed content in the mapping: checked, then copied.
		b, ok, err := r.contiguous(i, rc)
		if err != nil {
			return nil, pathErr("read", name, err)
		}
		if ok {
			return append(make([]byte, 0, len(b)), b...), nil
		}
	}
	// Every frame the content spans is checked before the copy is
	// allocated, so that a bad content costs nothing; a frame's
	// decompression, which only the copy can hold, as the copy goes.
	if err := r.checkSpan(rc); err != nil {
		return nil, pathErr("read", name, err)
	}
	b := make([]byte, rc.Size)
	if r.zstd && rc.Size > 2*packformat.ZstdFrameSize && runtime.GOMAXPROCS(0) > 1 {
		if err := r.readParallel(name, b, rc); err != nil {
			return nil, err
		}
		return b, nil
	}
	if err := r.readContent(b, rc, 0); err != nil {
		return nil, pathErr("read", name, err)
	}
	return b, nil
}

// readParallel fills b with rc's whole content, as readContent does, on
// GOMAXPROCS goroutines that take its frames in turn, so that a large
// compressed file is decompressed on every core. The caller holds r.mu
// (for reading) until it returns, which is after every goroutine ended.
func (r *Reader) readParallel(name string, b []byte, rc packformat.Record) error {
	// The frames from the first byte's to the last byte's, which must
	// hold it: the goroutines read those and no others.
	end := rc.Off + rc.Size
	first, err := r.findFrame(rc, rc.Off)
	if err != nil {
		return pathErr("read", name, err)
	}
	last, err := r.findFrame(rc, end-1)
	if err != nil {
		return pathErr("read", name, err)
	}
	if f, raw, err := r.frame(last); err != nil {
		return pathErr("read", name, err)
	} else if end-1 < f.Pos || end-1-f.Pos >= raw {
		return pathErr("read", name, corrupt("frame %d does not hold stream byte %d", last, end-1))
	}
	var next atomic.Uint64
	var stop atomic.Bool
	errs := make([]error, runtime.GOMAXPROCS(0))
	work := func(k int) {
		errs[k] = r.readFrames(name, b, rc, first, last, &next, &stop)
		if errs[k] != nil {
			stop.Store(true)
		}
	}
	var wg sync.WaitGroup
	for k := 1; k < len(errs); k++ {
		wg.Go(func() { work(k) })
	}
	work(0)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readFrames is a goroutine of readParallel: it reads frame first+k into
// b for each k it takes from next, up to frame last, until stop is set.
func (r *Reader) readFrames(name string, b []byte, rc packformat.Record, first, last uint64, next *atomic.Uint64, stop *atomic.Bool) (err error) {
	g := r.armFault()
	defer r.disarmFault("read", name, g, &err)
	end := rc.Off + rc.Size
	for !stop.Load() {
		i := first + next.Add(1) - 1
		if i > last {
			return nil
		}
		f, raw, err := r.frame(i)
		if err != nil {
			return pathErr("read", name, err)
		}
		if f.Pos+raw <= rc.Off || f.Pos >= end {
			return pathErr("read", name, corrupt("frame %d holds no byte of the content", i))
		}
		lo, hi := max(f.Pos, rc.Off), min(f.Pos+raw, end)
		at := frameAt{i: i, f: f, raw: raw, valid: true}
		if _, err := r.readContentAt(b[lo-rc.Off:hi-rc.Off], rc, lo-rc.Off, &at); err != nil {
			return pathErr("read", name, err)
		}
	}
	return nil
}

// fileRecord resolves name for reading its content: the record, or empty
// when it is not a regular file and reads as nothing. The caller holds
// r.mu.
func (r *Reader) fileRecord(name string) (i uint64, rc packformat.Record, empty bool, err error) {
	i, rc, err = r.walk(name, true)
	switch {
	case err != nil:
		return i, rc, false, pathErr("open", name, err)
	case rc.Type == packformat.TypeDir:
		return i, rc, false, pathErr("read", name, syscall.EISDIR)
	}
	return i, rc, rc.Type != packformat.TypeFile, nil
}

// Bytes returns the named file's content without copying, after checking
// its CRC-32C. For a pack opened with Open the slice points into the
// mapping: it is valid until Close, and reading it after Close faults. It
// must not be modified. For a pack opened with OpenReaderAt, Bytes returns
// a copy.
func (r *Reader) Bytes(name string) (_ []byte, err error) {
	if r.ra != nil {
		return r.ReadFile(name)
	}
	g, err := r.rlock("open", name)
	if err != nil {
		return nil, err
	}
	defer r.runlock("open", name, g, &err)
	i, rc, empty, err := r.fileRecord(name)
	if err != nil {
		return nil, err
	}
	if empty {
		return []byte{}, nil
	}
	if r.version == packformat.Version3 {
		b, ok, err := r.contiguous(i, rc)
		if err != nil {
			return nil, pathErr("read", name, err)
		}
		if ok {
			return b, nil
		}
		return r.readFile3(name, i, rc)
	}
	if err := r.checkContent(i, rc); err != nil {
		return nil, pathErr("read", name, err)
	}
	return r.mapped[rc.Off : rc.Off+rc.Size : rc.Off+rc.Size], nil
}

// ReadLink returns the target of the named symlink.
func (r *Reader) ReadLink(name string) (_ string, err error) {
	g, err := r.rlock("readlink", name)
	if err != nil {
		return "", err
	}
	defer r.runlock("readlink", name, g, &err)
	_, rc, err := r.walk(name, false)
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	if rc.Type != packformat.TypeSymlink {
		return "", pathErr("readlink", name, syscall.EINVAL)
	}
	target, err := r.target(rc)
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	return target, nil
}

// Opaque reports whether the directory dir is marked opaque (it holds a
// whiteout named layer.OpaqueName). A missing dir is not opaque.
func (r *Reader) Opaque(dir string) (opaque bool) {
	g, err := r.rlock("stat", dir)
	if err != nil {
		return false
	}
	defer r.runlock("stat", dir, g, &err) // a fault leaves opaque false
	_, rc, err := r.walk(dir, true)
	return err == nil && rc.Type == packformat.TypeDir && rc.Flags&packformat.FlagOpaque != 0
}

// Sub returns the subtree at dir, which must be a directory. Symlinks in
// it resolve within the whole pack, as with fs.Sub.
func (r *Reader) Sub(dir string) (fs.FS, error) {
	fi, err := r.Stat(dir)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "sub"
		}
		return nil, err
	}
	if !fi.IsDir() {
		return nil, pathErr("sub", dir, syscall.ENOTDIR)
	}
	if dir == "." {
		return r, nil
	}
	return fs.Sub(noSub{r}, dir)
}

// Glob returns the names matching pattern, as fs.Glob does.
func (r *Reader) Glob(pattern string) ([]string, error) {
	return fs.Glob(noGlob{r}, pattern)
}

// noSub hides Sub so that fs.Sub builds its generic view over r.
type noSub struct{ r *Reader }

func (s noSub) Open(name string) (fs.File, error)          { return s.r.Open(name) }
func (s noSub) ReadDir(name string) ([]fs.DirEntry, error) { return s.r.ReadDir(name) }
func (s noSub) ReadFile(name string) ([]byte, error)       { return s.r.ReadFile(name) }
func (s noSub) Stat(name string) (fs.FileInfo, error)      { return s.r.Stat(name) }
func (s noSub) Lstat(name string) (fs.FileInfo, error)     { return s.r.Lstat(name) }
func (s noSub) ReadLink(name string) (string, error)       { return s.r.ReadLink(name) }
func (s noSub) Glob(pattern string) ([]string, error)      { return s.r.Glob(pattern) }

// noGlob hides Glob so that fs.Glob does the matching.
type noGlob struct{ r *Reader }

func (g noGlob) Open(name string) (fs.File, error)          { return g.r.Open(name) }
func (g noGlob) ReadDir(name string) ([]fs.DirEntry, error) { return g.r.ReadDir(name) }
func (g noGlob) Stat(name string) (fs.FileInfo, error)      { return g.r.Stat(name) }
