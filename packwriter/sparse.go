package packwriter

import (
	"errors"
	"io"
	"io/fs"
	"syscall"

	"github.com/packfs/packfs/layer"
)

// readPieces reads f, a regular file, to its end into buf, calling fn with
// each piece of data and each hole. When sparse and f can say where its
// data is (a host file, through SEEK_DATA and SEEK_HOLE, or a
// layer.HoleSeeker: a file of layer/mem, of a pack, of a union or of the
// durable store), holes are found that way and never read; otherwise
// every byte is read and fn sees no hole (the stream finds runs of zeros
// itself). It returns the bytes seen, holes included.
func readPieces(f fs.File, sparse bool, buf []byte, fn func(data []byte, hole uint64) error) (uint64, error) {
	if hs, ok := f.(layer.HoleSeeker); ok && sparse && hs.SeeksHoles() {
		if ra, ok := f.(io.ReaderAt); ok {
			if fi, err := f.Stat(); err == nil {
				return readSparse(ra, hs.Seek, fi.Size(), buf, fn)
			}
		}
	}
	if sparse {
		if sk, ok := dataSeeker(f); ok {
			// A file system without SEEK_DATA fails the probe
			// (EINVAL): such files are read whole.
			_, perr := sk(0, seekData)
			if ra, ok := f.(io.ReaderAt); ok && (perr == nil || errors.Is(perr, syscall.ENXIO)) {
				if fi, err := f.Stat(); err == nil {
					return readSparse(ra, sk, fi.Size(), buf, fn)
				}
			}
		}
	}
	var total uint64
	r := onlyReader{f}
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			total += uint64(n)
			if ferr := fn(buf[:n], 0); ferr != nil {
				return total, ferr
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// readSparse reads a file of size bytes (at the time of its Stat) extent
// by extent. A file that grows after the Stat is read to its end.
func readSparse(ra io.ReaderAt, seek func(off int64, whence int) (int64, error), size int64, buf []byte, fn func(data []byte, hole uint64) error) (uint64, error) {
	var off int64
	for {
		d, err := seek(off, seekData)
		if errors.Is(err, syscall.ENXIO) {
			// No data from off on: the rest, if any, is a hole.
			if size > off {
				if err := fn(nil, uint64(size-off)); err != nil {
					return uint64(off), err
				}
				off = size
			}
			return uint64(off), nil
		}
		if err != nil {
			return uint64(off), err
		}
		if d > off {
			if err := fn(nil, uint64(d-off)); err != nil {
				return uint64(off), err
			}
			off = d
		}
		h, err := seek(off, seekHole)
		if err != nil {
			return uint64(off), err
		}
		for off < h {
			n, err := ra.ReadAt(buf[:min(int64(len(buf)), h-off)], off)
			if n > 0 {
				if ferr := fn(buf[:n], 0); ferr != nil {
					return uint64(off), ferr
				}
				off += int64(n)
			}
			if err == io.EOF {
				return uint64(off), nil
			}
			if err != nil {
				return uint64(off), err
			}
		}
	}
}
