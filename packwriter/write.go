package packwriter

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/layer"
)

// Progress is reported after each entry is written.
type Progress struct {
	Path    string // the entry just written
	Entries int    // entries written so far, the root included
	Bytes   int64  // regular-file bytes read so far (before dedup)
	Stored  int64  // data bytes written so far (after dedup)
}

// Option configures [Write] and [WriteFile].
type Option func(*config)

type config struct {
	progress func(Progress)
	newHash  func() hash.Hash // nil: SHA-256; tests inject others
}

// WithProgress calls fn after each entry is written, from the goroutine
// running Write.
func WithProgress(fn func(Progress)) Option {
	return func(c *config) { c.progress = fn }
}

// smallFile is the size up to which a file's content is read into memory
// once; larger files are read twice (hash, then copy) so that the output
// never holds a duplicate.
const smallFile = 1 << 20

// ErrChanged reports that a source file changed while Write read it.
var ErrChanged = errors.New("packwriter: source changed during write")

// node is one entry of the tree being written.
type node struct {
	name   string
	rec    packformat.Record
	target string
	kids   []*node
}

type blob struct {
	off, size uint64
	path      string // source path of the first file with this content
}

type writer struct {
	c       config
	fsys    fs.FS
	out     *bufio.Writer
	ra      io.ReaderAt         // the destination, when it can be read back
	off     uint64              // bytes written so far
	blobs   map[[32]byte]blob   // the first content stored per hash
	more    map[[32]byte][]blob // further contents with the same hash
	buf     []byte
	prog    Progress
	logical uint64
}

// Write writes a pack of fsys's whole tree to w in one pass: contents are
// streamed to w as they are read, then the index, the string table and the
// footer. The same tree always gives the same bytes.
//
// Identical contents are stored once. Two files share content only after a
// SHA-256 match and a byte comparison: when w is also an io.ReaderAt and
// io.Seeker positioned at offset 0 (a new *os.File opened for reading and
// writing), the earlier copy is read back from w; otherwise the earlier
// file is read again from fsys, so fsys must not change during Write (a
// snapshot never does). Files over 1 MiB are read twice from fsys (hash,
// then copy); a file that changes between the reads fails with ErrChanged.
//
// Regular files, directories, symlinks and whiteouts (layer.ModeWhiteout)
// are written; a whiteout named layer.OpaqueName also sets its directory's
// opaque flag. Other types (devices, pipes, sockets) are an error.
func Write(w io.Writer, fsys fs.FS, opts ...Option) error {
	var c config
	for _, o := range opts {
		o(&c)
	}
	wr := &writer{c: c, fsys: fsys, out: bufio.NewWriterSize(w, 256<<10), blobs: map[[32]byte]blob{}, more: map[[32]byte][]blob{}}
	if ra, ok := w.(io.ReaderAt); ok {
		if s, ok := w.(io.Seeker); ok {
			if pos, err := s.Seek(0, io.SeekCurrent); err == nil && pos == 0 {
				wr.ra = ra
			}
		}
	}
	return wr.write()
}

func (w *writer) write() error {
	if _, err := w.out.Write(packformat.Header{Version: packformat.Version}.Encode()); err != nil {
		return err
	}
	w.off = packformat.HeaderSize
	fi, err := fs.Stat(w.fsys, ".")
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "packwriter", Path: ".", Err: errors.New("root is not a directory")}
	}
	root := &node{rec: packformat.Record{Type: packformat.TypeDir, Mode: uint32(fi.Mode() & packformat.ModeMask), Mtime: mtime(fi)}}
	w.progress(".")
	if err := w.dir(root, "."); err != nil {
		return err
	}
	return w.finish(root)
}

func mtime(fi fs.FileInfo) int64 {
	t := fi.ModTime()
	if t.IsZero() {
		return packformat.NoTime
	}
	return t.UnixNano()
}

func (w *writer) progress(p string) {
	w.prog.Entries++
	if w.c.progress != nil {
		w.prog.Path = p
		w.c.progress(w.prog)
	}
}

// dir reads directory n at path p and writes its subtree's contents.
func (w *writer) dir(n *node, p string) error {
	ents, err := fs.ReadDir(w.fsys, p)
	if err != nil {
		return err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for i, e := range ents {
		name := e.Name()
		if i > 0 && ents[i-1].Name() == name {
			return &fs.PathError{Op: "readdir", Path: p, Err: fmt.Errorf("duplicate name %q", name)}
		}
		if len(name) > packformat.MaxNameLen || name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
			return &fs.PathError{Op: "readdir", Path: p, Err: fmt.Errorf("invalid name %q", name)}
		}
		cp := path.Join(p, name)
		fi, err := e.Info()
		if err != nil {
			return err
		}
		k := &node{name: name, rec: packformat.Record{Mode: uint32(fi.Mode() & packformat.ModeMask), Mtime: mtime(fi)}}
		switch t := fi.Mode().Type(); {
		case t == 0:
			k.rec.Type = packformat.TypeFile
			if err := w.file(k, cp, fi.Size()); err != nil {
				return err
			}
		case t == fs.ModeDir:
			k.rec.Type = packformat.TypeDir
		case t == fs.ModeSymlink:
			k.rec.Type = packformat.TypeSymlink
			target, err := fs.ReadLink(w.fsys, cp)
			if err != nil {
				return err
			}
			k.target = target
		case layer.IsWhiteout(fi.Mode()):
			k.rec.Type = packformat.TypeWhiteout
			if name == layer.OpaqueName {
				n.rec.Flags |= packformat.FlagOpaque
			}
		default:
			return &fs.PathError{Op: "packwriter", Path: cp, Err: fmt.Errorf("unsupported file type %v", t)}
		}
		n.kids = append(n.kids, k)
		w.progress(cp)
		if k.rec.Type == packformat.TypeDir {
			if err := w.dir(k, cp); err != nil {
				return err
			}
		}
	}
	return nil
}

// file stores the content of the regular file p.
func (w *writer) file(k *node, p string, sizeHint int64) error {
	if sizeHint <= smallFile {
		data, err := w.readSmall(p)
		if err != nil {
			return err
		}
		if int64(len(data)) <= smallFile {
			return w.storeSmall(k, p, data)
		}
	}
	return w.storeLarge(k, p)
}

func (w *writer) readSmall(p string) ([]byte, error) {
	f, err := w.fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if cap(w.buf) < smallFile+1 {
		w.buf = make([]byte, smallFile+1)
	}
	buf := w.buf[:smallFile+1]
	n, err := io.ReadFull(f, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return buf[:n], err
}

func (w *writer) sum(data []byte) [32]byte {
	if w.c.newHash == nil {
		return sha256.Sum256(data)
	}
	h := w.c.newHash()
	h.Write(data)
	var s [32]byte
	h.Sum(s[:0])
	return s
}

func (w *writer) storeSmall(k *node, p string, data []byte) error {
	sum := w.sum(data)
	w.setFile(k, sum, crc32.Checksum(data, packformat.Castagnoli), uint64(len(data)))
	for _, b := range w.candidates(sum) {
		if b.size != uint64(len(data)) {
			continue
		}
		same, err := w.equal(b, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		if err != nil {
			return err
		}
		if same {
			k.rec.Off = b.off
			return nil
		}
	}
	off, err := w.pad()
	if err != nil {
		return err
	}
	if _, err := w.out.Write(data); err != nil {
		return err
	}
	w.off += uint64(len(data))
	w.prog.Stored += int64(len(data))
	k.rec.Off = off
	w.remember(sum, blob{off: off, size: uint64(len(data)), path: p})
	return nil
}

// candidates returns the stored contents whose hash is sum.
func (w *writer) candidates(sum [32]byte) []blob {
	b, ok := w.blobs[sum]
	if !ok {
		return nil
	}
	return append([]blob{b}, w.more[sum]...)
}

func (w *writer) remember(sum [32]byte, b blob) {
	if _, ok := w.blobs[sum]; !ok {
		w.blobs[sum] = b
		return
	}
	w.more[sum] = append(w.more[sum], b)
}

func (w *writer) setFile(k *node, sum [32]byte, crc uint32, size uint64) {
	copy(k.rec.Sum[:], sum[:])
	k.rec.CRC = crc
	k.rec.Size = size
	w.logical += size
	w.prog.Bytes += int64(size)
}

// storeLarge hashes p, then either shares an equal earlier content or
// copies p to the output, checking that the copy hashes the same.
func (w *writer) storeLarge(k *node, p string) error {
	open := func() (io.ReadCloser, error) { return w.fsys.Open(p) }
	sum, crc, size, err := w.hashStream(open, nil)
	if err != nil {
		return err
	}
	w.setFile(k, sum, crc, size)
	for _, b := range w.candidates(sum) {
		if b.size != size {
			continue
		}
		same, err := w.equal(b, open)
		if err != nil {
			return err
		}
		if same {
			k.rec.Off = b.off
			return nil
		}
	}
	off, err := w.pad()
	if err != nil {
		return err
	}
	sum2, _, size2, err := w.hashStream(open, w.out)
	if err != nil {
		return err
	}
	if sum2 != sum || size2 != size {
		return &fs.PathError{Op: "packwriter", Path: p, Err: ErrChanged}
	}
	w.off += size
	w.prog.Stored += int64(size)
	k.rec.Off = off
	w.remember(sum, blob{off: off, size: size, path: p})
	return nil
}

func (w *writer) hashStream(open func() (io.ReadCloser, error), dst io.Writer) (sum [32]byte, crc uint32, size uint64, err error) {
	f, err := open()
	if err != nil {
		return sum, 0, 0, err
	}
	defer f.Close()
	var h hash.Hash
	if w.c.newHash == nil {
		h = sha256.New()
	} else {
		h = w.c.newHash()
	}
	c := crc32.New(packformat.Castagnoli)
	ws := []io.Writer{h, c}
	if dst != nil {
		ws = append(ws, dst)
	}
	if cap(w.buf) < smallFile+1 {
		w.buf = make([]byte, smallFile+1)
	}
	n, err := io.CopyBuffer(io.MultiWriter(ws...), onlyReader{f}, w.buf[:smallFile])
	if err != nil {
		return sum, 0, 0, err
	}
	h.Sum(sum[:0])
	return sum, c.Sum32(), uint64(n), nil
}

type onlyReader struct{ io.Reader }

// equal compares the content stored as b with what open returns.
func (w *writer) equal(b blob, open func() (io.ReadCloser, error)) (bool, error) {
	var old io.Reader
	if w.ra != nil {
		if err := w.out.Flush(); err != nil {
			return false, err
		}
		var probe [1]byte
		if _, err := w.ra.ReadAt(probe[:], 0); err != nil {
			w.ra = nil // not readable after all (O_WRONLY): use the source
		}
	}
	if w.ra != nil {
		old = io.NewSectionReader(w.ra, int64(b.off), int64(b.size))
	} else {
		f, err := w.fsys.Open(b.path)
		if err != nil {
			return false, err
		}
		defer f.Close()
		old = f
	}
	cur, err := open()
	if err != nil {
		return false, err
	}
	defer cur.Close()
	return sameReaders(old, cur, b.size)
}

func sameReaders(a, b io.Reader, size uint64) (bool, error) {
	var ba, bb [32 << 10]byte
	for size > 0 {
		n := uint64(len(ba))
		if size < n {
			n = size
		}
		if _, err := io.ReadFull(a, ba[:n]); err != nil {
			return false, ignoreEOF(err)
		}
		if _, err := io.ReadFull(b, bb[:n]); err != nil {
			return false, ignoreEOF(err)
		}
		if !bytes.Equal(ba[:n], bb[:n]) {
			return false, nil
		}
		size -= n
	}
	// Both must end here.
	var one [1]byte
	if n, _ := b.Read(one[:]); n != 0 {
		return false, nil
	}
	return true, nil
}

func ignoreEOF(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil
	}
	return err
}

// pad aligns the output to packformat.DataAlign and returns the offset.
func (w *writer) pad() (uint64, error) {
	a := packformat.Align(w.off)
	if a > w.off {
		var zero [packformat.DataAlign]byte
		if _, err := w.out.Write(zero[:a-w.off]); err != nil {
			return 0, err
		}
		w.off = a
	}
	return a, nil
}

// finish numbers the entries breadth first, so that each directory's
// children are one contiguous run sorted by name, and writes the index,
// the string table and the footer.
func (w *writer) finish(root *node) error {
	indexOff, err := w.pad()
	if err != nil {
		return err
	}
	order := []*node{root}
	for i := 0; i < len(order); i++ {
		n := order[i]
		if n.rec.Type == packformat.TypeDir {
			n.rec.Size = uint64(len(n.kids))
			n.rec.Off = uint64(len(order))
			for _, k := range n.kids {
				k.rec.Parent = uint32(i)
			}
			order = append(order, n.kids...)
		}
	}
	if uint64(len(order)) > 1<<32-1 {
		return errors.New("packwriter: too many entries")
	}
	var strs []byte
	crc := crc32.Update(0, packformat.Castagnoli, packformat.Header{Version: packformat.Version}.Encode())
	rb := make([]byte, packformat.RecordSize)
	for _, n := range order {
		if uint64(len(strs))+uint64(len(n.name))+uint64(len(n.target)) > 1<<32-1 {
			return errors.New("packwriter: string table over 4 GiB")
		}
		n.rec.NameOff = uint32(len(strs))
		n.rec.NameLen = uint16(len(n.name))
		strs = append(strs, n.name...)
		if n.rec.Type == packformat.TypeSymlink {
			n.rec.Off = uint64(len(strs))
			n.rec.Size = uint64(len(n.target))
			strs = append(strs, n.target...)
		}
		n.rec.Put(rb)
		crc = crc32.Update(crc, packformat.Castagnoli, rb)
		if _, err := w.out.Write(rb); err != nil {
			return err
		}
	}
	crc = crc32.Update(crc, packformat.Castagnoli, strs)
	if _, err := w.out.Write(strs); err != nil {
		return err
	}
	f := packformat.Footer{
		IndexOff:    indexOff,
		Count:       uint64(len(order)),
		StringsOff:  indexOff + uint64(len(order))*packformat.RecordSize,
		StringsSize: uint64(len(strs)),
		DataSize:    indexOff - packformat.HeaderSize,
		Logical:     w.logical,
	}
	fb := f.Encode()
	f.CRC = crc32.Update(crc, packformat.Castagnoli, fb[:packformat.FooterCRCLen])
	f.Put(fb)
	if _, err := w.out.Write(fb); err != nil {
		return err
	}
	return w.out.Flush()
}
