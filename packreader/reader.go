package packreader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/packfs/packfs/internal/packformat"
)

// ErrCorrupt is wrapped by every error that reports a damaged pack: bad
// magic, version, checksum, offsets, records or content.
var ErrCorrupt = errors.New("packreader: corrupt pack")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// Reader is an open pack. It implements fs.FS, fs.ReadDirFS, fs.ReadFileFS,
// fs.StatFS, fs.ReadLinkFS, fs.SubFS and fs.GlobFS. It is safe for
// concurrent use, and Close is safe while other goroutines read.
type Reader struct {
	// mu guards the mapping: every access to mapped, index or strs holds
	// it for reading; Close holds it for writing while it unmaps.
	mu     sync.RWMutex
	closed bool

	mapped []byte      // the whole file, when opened by Open
	ra     io.ReaderAt // the file, when opened by OpenReaderAt
	unmap  func([]byte) error

	size    uint64
	footer  packformat.Footer
	count   uint64
	index   []byte // count records
	strs    []byte // the string table
	dataEnd uint64 // end of the data region (= index offset)
}

// Open maps the pack file name into memory and validates its header,
// footer and the CRC-32C of header, index and string table. It does no
// work per entry: opening a pack of a million entries costs one checksum
// pass over its index. Contents are checked when first read.
func Open(name string) (*Reader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size < packformat.HeaderSize+packformat.FooterSize {
		return nil, &os.PathError{Op: "open", Path: name, Err: corrupt("file of %d bytes is too short", size)}
	}
	if int64(int(size)) != size {
		return nil, &os.PathError{Op: "open", Path: name, Err: errors.New("packreader: pack too large to map")}
	}
	data, err := mmap(f, int(size))
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: name, Err: err}
	}
	r := &Reader{mapped: data, unmap: munmap, size: uint64(size)}
	hdr := data[:packformat.HeaderSize]
	foot := data[size-packformat.FooterSize:]
	if err := r.init(hdr, foot); err != nil {
		_ = munmap(data)
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	meta := data[r.footer.IndexOff : size-packformat.FooterSize]
	if err := r.setMeta(hdr, meta, foot); err != nil {
		_ = munmap(data)
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return r, nil
}

// OpenReaderAt serves the pack of size bytes read through ra, without
// mmap. It reads the index and string table into memory (at most size
// bytes) and validates them as Open does; contents are read through ra on
// demand. The caller keeps ra open until Close and closes it after.
func OpenReaderAt(ra io.ReaderAt, size int64) (*Reader, error) {
	if size < packformat.HeaderSize+packformat.FooterSize {
		return nil, corrupt("pack of %d bytes is too short", size)
	}
	hdr := make([]byte, packformat.HeaderSize)
	foot := make([]byte, packformat.FooterSize)
	if err := readFull(ra, hdr, 0); err != nil {
		return nil, err
	}
	if err := readFull(ra, foot, size-packformat.FooterSize); err != nil {
		return nil, err
	}
	r := &Reader{ra: ra, size: uint64(size)}
	if err := r.init(hdr, foot); err != nil {
		return nil, err
	}
	meta := make([]byte, uint64(size)-packformat.FooterSize-r.footer.IndexOff)
	if err := readFull(ra, meta, int64(r.footer.IndexOff)); err != nil {
		return nil, err
	}
	if err := r.setMeta(hdr, meta, foot); err != nil {
		return nil, err
	}
	return r, nil
}

// readFull reads len(p) bytes at off; a short read means the pack is
// truncated.
func readFull(ra io.ReaderAt, p []byte, off int64) error {
	n, err := ra.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF || err == io.ErrUnexpectedEOF {
		return corrupt("truncated: read %d of %d bytes at offset %d", n, len(p), off)
	}
	return err
}

// init validates header and footer and the layout they describe.
func (r *Reader) init(hdr, foot []byte) error {
	le := binary.LittleEndian
	if string(hdr[:8]) != packformat.Magic {
		return corrupt("bad magic (not a pack file)")
	}
	if v := le.Uint32(hdr[8:]); v != packformat.Version {
		return corrupt("unsupported version %d", v)
	}
	if le.Uint32(hdr[12:]) != packformat.HeaderSize || le.Uint32(hdr[16:]) != 0 || !allZero(hdr[20:]) {
		return corrupt("bad header")
	}
	if string(foot[56:]) != packformat.EndMagic || le.Uint32(foot[52:]) != 0 {
		return corrupt("bad footer (truncated pack?)")
	}
	f := packformat.DecodeFooter(foot)
	size := r.size
	switch {
	case f.DataSize > size || f.IndexOff != packformat.HeaderSize+f.DataSize || f.IndexOff%packformat.DataAlign != 0:
		return corrupt("bad data size %d or index offset %d", f.DataSize, f.IndexOff)
	case f.Count == 0 || f.Count > size/packformat.RecordSize || f.Count > 1<<32-1:
		return corrupt("bad entry count %d", f.Count)
	case f.StringsOff != f.IndexOff+f.Count*packformat.RecordSize:
		return corrupt("bad string table offset %d", f.StringsOff)
	case f.StringsSize > size || f.StringsOff+f.StringsSize+packformat.FooterSize != size:
		return corrupt("bad string table size %d for a file of %d bytes", f.StringsSize, size)
	}
	r.footer = f
	r.count = f.Count
	r.dataEnd = f.IndexOff
	return nil
}

// setMeta checks the CRC and sets the index and string table.
func (r *Reader) setMeta(hdr, meta, foot []byte) error {
	crc := crc32.Update(0, packformat.Castagnoli, hdr)
	crc = crc32.Update(crc, packformat.Castagnoli, meta)
	crc = crc32.Update(crc, packformat.Castagnoli, foot[:packformat.FooterCRCLen])
	if crc != r.footer.CRC {
		return corrupt("checksum mismatch in header, index or string table")
	}
	n := r.count * packformat.RecordSize
	r.index = meta[:n:n]
	r.strs = meta[n:]
	root, err := r.rec(0)
	if err != nil {
		return err
	}
	if root.Type != packformat.TypeDir || root.NameLen != 0 || root.Parent != 0 {
		return corrupt("root is not a directory")
	}
	return nil
}

func allZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }

// Close releases the pack. Files and byte slices obtained from r must not
// be used after Close: files report fs.ErrClosed, and slices from Bytes
// become invalid. Close waits for reads in progress to finish.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return &os.PathError{Op: "close", Path: "pack", Err: os.ErrClosed}
	}
	r.closed = true
	r.index, r.strs = nil, nil
	if r.mapped != nil {
		m := r.mapped
		r.mapped = nil
		return r.unmap(m)
	}
	return nil
}

// rlock locks r for reading and reports fs.ErrClosed once closed. On
// success the caller must call r.mu.RUnlock.
func (r *Reader) rlock(op, name string) error {
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return &os.PathError{Op: op, Path: name, Err: os.ErrClosed}
	}
	return nil
}
