package packwriter

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
	"strings"
	"unicode/utf8"

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
	skip     func(path string, err error) error
	keep     func(path string, info fs.FileInfo) bool
	newHash  func() hash.Hash // nil: SHA-256; tests inject others
	format   int              // 0: packformat.Version
	level    int              // zstd level; 0: stored raw
	badOpt   error

	// writeback, if set, is told of each writebackRun bytes that reached
	// the destination (WriteFile's start of writeback).
	writeback func(off, n int64)
}

// WithCompression makes Write compress the pack's contents with zstd at
// level (1 to 22, as the zstd command counts; 3 is zstd's default): contents are
// cut into frames of 1 MiB, small files grouped into shared frames, and
// each frame is compressed on its own, on as many goroutines as
// GOMAXPROCS, and stored raw when that does not make it smaller. Level 0
// stores everything raw, as without the option. The level is mapped to
// the nearest of the four speeds github.com/klauspost/compress/zstd has
// (1; 2 to 5; 6 to 9; 10 and over). Frames of x86-64 executables go
// through a branch filter first. The tables are compressed too, in
// groups of 64 KiB, and records keep no SHA-256 prefix.
func WithCompression(level int) Option {
	return func(c *config) {
		if level < 0 || level > 22 {
			c.badOpt = fmt.Errorf("packwriter: zstd level %d out of range 0 to 22", level)
		}
		c.level = level
	}
}

// WithFormat makes Write write a pack of the given format version: 3 (the
// default) or 2, which readers before version 3 open. Version 2 has no
// compression, holes, owners or hard links.
func WithFormat(version int) Option {
	return func(c *config) {
		if version != packformat.Version2 && version != packformat.Version3 {
			c.badOpt = fmt.Errorf("packwriter: no pack format version %d (2 and 3 are)", version)
		}
		c.format = version
	}
}

// WithProgress calls fn after each entry is written, from the goroutine
// running Write.
func WithProgress(fn func(Progress)) Option {
	return func(c *config) { c.progress = fn }
}

// WithSkip makes Write go on past an entry of the source it cannot
// read or store (a file that vanished or cannot be read, a directory that
// cannot be listed, a name io/fs cannot hold, a socket, pipe or device):
// fn is called with the entry's path and an *fs.PathError saying why,
// and when it returns nil the entry is left out of the pack (a directory
// that cannot be listed is kept, empty). When fn returns an error, Write
// stops with it. Errors writing the destination always stop Write.
// Without WithSkip, the first such entry stops Write.
func WithSkip(fn func(path string, err error) error) Option {
	return func(c *config) { c.skip = fn }
}

// WithFilter leaves out of the pack every entry for which keep returns
// false (a directory with its whole subtree); keep sees the entry's path
// and its Lstat information. The root is always kept.
func WithFilter(keep func(path string, info fs.FileInfo) bool) Option {
	return func(c *config) { c.keep = keep }
}

// smallFile is the size up to which a file's content is read into memory
// once; larger files are read twice (hash, then copy) so that the output
// never holds a duplicate.
const smallFile = 1 << 20

// ErrChanged reports that a source file changed while Write read it.
var ErrChanged = errors.New("packwriter: source changed during write")

// node is one entry of the tree being written. A directory's children
// are one slice, allocated once when the directory is read.
//
// What few entries have is kept beside the tree, so that a node stays
// small (the garbage collector scans every node at every cycle of a
// Write): a symlink's target in writer.targets, at the index its record's
// Off holds until finish; a regular file's inode in the source, when the
// source says it has more than one link, in writer.srcs (linked set).
type node struct {
	name string
	rec  packformat.Record
	kids []node
	attr packformat.Attr // Uid and Gid from the source; Ino and Nlink set by finish
	// gone marks an entry left out (filtered or skipped). Queued small
	// files point into their directory's kids, so it stays in place.
	gone bool
	// linked: writer.srcs holds the entry's inode in the source, which
	// other files share (they become one inode).
	linked bool
}

// blob is one stored content.
type blob struct {
	sum       [32]byte
	off, size uint64
	path      string // source path of the first file with this content
	next      int    // next blob whose hash starts with the same 8 bytes, or -1
	frame     uint32 // version 3: the frame holding the content's first byte
}

type writer struct {
	c       config
	fsys    fs.FS
	out     *bufio.Writer
	dst     *countingWriter // beneath out: what reached the destination
	ra      io.ReaderAt     // the destination, when it can be read back
	off     uint64          // bytes written so far
	blobs   [][]blob        // chunks of blobChunk: growing never copies
	nblobs  int             // blobs stored
	byHash  map[uint64]int  // first 8 bytes of a hash -> its latest blob, plus one
	buf     []byte
	prog    Progress
	logical uint64

	// Small files waiting to be hashed and stored (see hash.go).
	batch           []job
	batchBytes      int
	free            []job
	hashIn, hashOut chan []job
	inflight        int

	// cmp holds the two buffers contents are compared through, made once:
	// a tree of identical files compares once a file.
	cmp *[2][32 << 10]byte

	targets []string           // symlinks' targets (see node)
	srcs    map[*node]srcInode // source inodes of linked files (see node)

	v3    bool    // writing format 3
	st    *stream // format 3: the raw stream of contents
	names names   // format 3: owner names seen
}

// Write writes a pack of fsys's whole tree to w in one pass: contents are
// streamed to w as they are read, then the index, the string table and the
// footer. The same tree always gives the same bytes.
//
// Identical contents are stored once. Two files share content only after a
// SHA-256 match and a byte comparison: for a format-2 pack, when w is also
// an io.ReaderAt and io.Seeker positioned at offset 0 (a new *os.File
// opened for reading and writing), the earlier copy is read back from w;
// otherwise the earlier file is read again from fsys, so fsys must not
// change during Write (a snapshot never does). Files over 1 MiB are read twice from fsys (hash,
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
	if c.badOpt != nil {
		return c.badOpt
	}
	if c.format == 0 {
		c.format = packformat.Version
	}
	if c.format == packformat.Version2 && c.level > 0 {
		return errors.New("packwriter: format 2 has no compression")
	}
	dst := &countingWriter{w: w, writeback: c.writeback}
	wr := &writer{c: c, fsys: fsys, dst: dst, out: bufio.NewWriterSize(dst, 64<<10), byHash: map[uint64]int{}}
	if ra, ok := w.(io.ReaderAt); ok {
		if s, ok := w.(io.Seeker); ok {
			if pos, err := s.Seek(0, io.SeekCurrent); err == nil && pos == 0 {
				wr.ra = ra
			}
		}
	}
	if c.format == packformat.Version3 {
		wr.v3 = true
		wr.st = newStream(wr, c.level)
		defer wr.st.stop()
	}
	return wr.write()
}

// header returns the pack's header.
func (w *writer) header() packformat.Header {
	h := packformat.Header{Version: uint32(w.c.format)}
	if w.v3 && w.st.zstd {
		h.Flags = packformat.FlagZstd | packformat.FlagPackedTables | packformat.FlagFilters
	}
	return h
}

func (w *writer) write() error {
	if _, err := w.out.Write(w.header().Encode()); err != nil {
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
	sys := fi.Sys()
	root.attr, _ = owner(fi, sys)
	w.noteNames(sys, root.attr)
	w.progress(".")
	defer w.stopHashing()
	if err := w.dir(root, "."); err != nil {
		return err
	}
	if err := w.drain(); err != nil {
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
		// A directory that cannot be listed is kept, empty.
		return w.skipped(p, "readdir", err)
	}
	// ReadDirFS promises sorted names, and a sorted listing is checked in
	// one comparison per entry; any other is sorted here.
	for i := 1; i < len(ents); i++ {
		if ents[i-1].Name() >= ents[i].Name() {
			slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
			break
		}
	}
	n.kids = make([]node, len(ents))
	prev := ""
	for i, e := range ents {
		name := e.Name()
		if i > 0 && prev == name {
			return &fs.PathError{Op: "readdir", Path: p, Err: fmt.Errorf("duplicate name %q", name)}
		}
		prev = name
		// name is a valid element once checked, so joining needs no cleaning.
		cp := name
		if p != "." {
			cp = p + "/" + name
		}
		k := &n.kids[i]
		k.gone = true // until stored
		if why := badName(name); why != "" {
			if err := w.skipped(cp, "readdir", errors.New(why)); err != nil {
				return err
			}
			continue
		}
		fi, err := e.Info()
		if err != nil {
			if err := w.skipped(cp, "lstat", err); err != nil {
				return err
			}
			continue
		}
		if w.c.keep != nil && !w.c.keep(cp, fi) {
			continue
		}
		mode := fi.Mode()
		k.name = name
		k.rec = packformat.Record{Mode: uint32(mode & packformat.ModeMask), Mtime: mtime(fi)}
		sys := fi.Sys()
		var src srcInode
		k.attr, src = owner(fi, sys)
		if src != (srcInode{}) {
			if w.srcs == nil {
				w.srcs = map[*node]srcInode{}
			}
			w.srcs[k], k.linked = src, true
		}
		w.noteNames(sys, k.attr)
		switch t := mode.Type(); {
		case t == 0:
			k.rec.Type = packformat.TypeFile
			queued, err := w.file(k, cp, fi.Size())
			if err != nil {
				var s stop
				if errors.As(err, &s) {
					return s.error
				}
				if w.dst.err != nil {
					return w.dst.err
				}
				if err := w.skipped(cp, "read", err); err != nil {
					return err
				}
				continue
			}
			if queued {
				k.gone = false
				continue // reported once stored
			}
		case t == fs.ModeDir:
			k.rec.Type = packformat.TypeDir
		case t == fs.ModeSymlink:
			k.rec.Type = packformat.TypeSymlink
			target, err := fs.ReadLink(w.fsys, cp)
			if err != nil {
				if err := w.skipped(cp, "readlink", err); err != nil {
					return err
				}
				continue
			}
			k.rec.Off = uint64(len(w.targets))
			w.targets = append(w.targets, target)
		case layer.IsWhiteoutInfo(fi):
			k.rec.Type = packformat.TypeWhiteout
			if name == layer.OpaqueName {
				n.rec.Flags |= packformat.FlagOpaque
			}
		default:
			err := fmt.Errorf("%s: packs hold regular files, directories, symlinks and whiteouts", kind(mode))
			if err := w.skipped(cp, "pack", err); err != nil {
				return err
			}
			continue
		}
		k.gone = false
		w.progress(cp)
		if k.rec.Type == packformat.TypeDir {
			if err := w.dir(k, cp); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipped reports the entry p that could not be read or stored to the
// skip handler, and returns the error that stops Write, if any.
func (w *writer) skipped(p, op string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// The source's own error names its path (os.DirFS: the host
		// path); the pack's path is the one to report.
		err = pe.Err
		if pe.Op != "" {
			op = pe.Op
		}
	}
	err = &fs.PathError{Op: op, Path: p, Err: err}
	if w.c.skip == nil {
		return err
	}
	return w.c.skip(p, err)
}

// badName says why name cannot be an element of a pack, or "".
func badName(name string) string {
	switch {
	case name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00"):
		return fmt.Sprintf("invalid name %q", name)
	case !utf8.ValidString(name):
		return fmt.Sprintf("name %q is not valid UTF-8, which io/fs paths must be", name)
	case len(name) > packformat.MaxNameLen:
		return fmt.Sprintf("name of %d bytes is longer than %d", len(name), packformat.MaxNameLen)
	}
	return ""
}

// kind names a file type as people do.
func kind(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "a file of type " + mode.Type().String()
}

// rewind takes the output back to offset off, which the destination
// reached before: it must be a file (it seeks and truncates).
func (w *writer) rewind(off uint64) error {
	if err := w.out.Flush(); err != nil {
		return err
	}
	f, ok := w.dst.w.(interface {
		io.Seeker
		Truncate(int64) error
	})
	if !ok {
		return errors.New("the destination is a stream")
	}
	if err := f.Truncate(int64(off)); err != nil {
		return err
	}
	if _, err := f.Seek(int64(off), io.SeekStart); err != nil {
		return err
	}
	w.dst.n, w.off = off, off
	return nil
}

// stop is an error no skip handler may pass over: storing queued files
// failed, and they are not the entry being read.
type stop struct{ error }

func stopping(err error) error {
	if err == nil {
		return nil
	}
	return stop{err}
}

// countingWriter counts what reached the destination, so that a copy that
// fails half way still leaves the offsets right, and keeps the first error
// of the destination, which no skip handler can pass over.
type countingWriter struct {
	w   io.Writer
	n   uint64
	err error

	writeback func(off, n int64)
	wbFrom    uint64 // where the bytes not yet handed to writeback start
}

// writebackRun is how many bytes WriteFile lets gather before it starts
// their writeback: large enough that each start is one request of the
// disk's size, small enough that the final fsync waits for little.
const writebackRun = 1 << 20

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += uint64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	if c.writeback != nil {
		if c.wbFrom > c.n { // rewound
			c.wbFrom = c.n
		}
		if c.n-c.wbFrom >= writebackRun {
			c.writeback(int64(c.wbFrom), int64(c.n-c.wbFrom))
			c.wbFrom = c.n
		}
	}
	return n, err
}

// file stores the content of the regular file p, or queues it to be
// hashed and stored (small files).
func (w *writer) file(k *node, p string, sizeHint int64) (queued bool, err error) {
	if sizeHint <= smallFile {
		data, err := w.readSmall(p, sizeHint)
		if err != nil {
			return false, err
		}
		if int64(len(data)) <= smallFile {
			return true, stopping(w.queue(k, p, data))
		}
	}
	// Contents are stored in the order of the tree: the queue first.
	if err := w.drain(); err != nil {
		return false, stopping(err)
	}
	return false, w.storeLarge(k, p)
}

// readSmall reads p, expected to hold about sizeHint bytes, into a new
// slice: through fs.ReadFile when the source has it (one lookup, no
// handle), otherwise by Open and Read. A result over smallFile bytes means
// the file grew.
func (w *writer) readSmall(p string, sizeHint int64) ([]byte, error) {
	if rf, ok := w.fsys.(fs.ReadFileFS); ok {
		return rf.ReadFile(p)
	}
	f, err := w.fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, max(sizeHint, 0)+1) // one more byte detects growth
	n, err := io.ReadFull(f, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil
	}
	if err == nil && n == len(buf) && n <= smallFile {
		// Longer than announced: read the rest, up to one byte over.
		rest, rerr := io.ReadAll(io.LimitReader(f, int64(smallFile+1-n)))
		return append(buf[:n:n], rest...), rerr
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

// storeSmall stores data, the content of the file at p, whose SHA-256 (or
// the injected hash) is sum and CRC-32C crc.
func (w *writer) storeSmall(k *node, p string, data []byte, sum [32]byte, crc uint32) error {
	w.setFile(k, sum, crc, uint64(len(data)))
	head := w.head(sum)
	for bi := w.first(head, sum); bi >= 0; bi = w.next(bi, sum) {
		b := w.blob(bi)
		if b.size != uint64(len(data)) {
			continue
		}
		same, err := w.equal(b, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		if err != nil {
			return err
		}
		if same {
			w.share(k, b)
			return nil
		}
	}
	if w.v3 {
		pos, frame, err := w.st.add(data, crc)
		if err != nil {
			return err
		}
		k.rec.Off, k.rec.CRC = pos, frame
		w.remember(sum, head, pos, uint64(len(data)), p, frame)
		return nil
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
	w.remember(sum, head, off, uint64(len(data)), p, 0)
	return nil
}

// share makes k's content the stored content b.
func (w *writer) share(k *node, b *blob) {
	k.rec.Off = b.off
	if w.v3 {
		k.rec.CRC = b.frame
	}
}

func hashKey(sum [32]byte) uint64 { return binary.LittleEndian.Uint64(sum[:]) }

const blobChunk = 256

func (w *writer) blob(i int) *blob { return &w.blobs[i/blobChunk][i%blobChunk] }

// head returns the latest stored content whose hash starts with the same
// 8 bytes as sum, or -1: the head of the chain first and next walk, and
// of the chain remember extends.
func (w *writer) head(sum [32]byte) int { return w.byHash[hashKey(sum)] - 1 }

// first returns the first content from blob i on, along the chain, whose
// hash is sum, or -1.
func (w *writer) first(i int, sum [32]byte) int {
	for i >= 0 && w.blob(i).sum != sum {
		i = w.blob(i).next
	}
	return i
}

// next returns the content after blob i, along the chain, whose hash is
// sum, or -1.
func (w *writer) next(i int, sum [32]byte) int { return w.first(w.blob(i).next, sum) }

// remember records a stored content; head is what w.head returned for its
// hash.
func (w *writer) remember(sum [32]byte, head int, off, size uint64, p string, frame uint32) {
	if w.nblobs%blobChunk == 0 {
		w.blobs = append(w.blobs, make([]blob, 0, blobChunk))
	}
	c := &w.blobs[len(w.blobs)-1]
	*c = append(*c, blob{sum: sum, off: off, size: size, path: p, next: head, frame: frame})
	w.nblobs++
	w.byHash[hashKey(sum)] = w.nblobs // the index plus one: 0 is absent
}

func (w *writer) setFile(k *node, sum [32]byte, crc uint32, size uint64) {
	if !w.packed() {
		// Packed tables keep no SHA-256 prefix: 16 bytes a file that no
		// compressor shrinks, where each frame's CRC-32C checks every
		// stored byte.
		copy(k.rec.Sum[:], sum[:])
	}
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
	head := w.head(sum)
	for bi := w.first(head, sum); bi >= 0; bi = w.next(bi, sum) {
		b := w.blob(bi)
		if b.size != size {
			continue
		}
		same, err := w.equal(b, open)
		if err != nil {
			return err
		}
		if same {
			w.setFile(k, sum, crc, size)
			w.share(k, b)
			return nil
		}
	}
	if w.v3 {
		return w.storeLarge3(k, p, open, sum, crc, size, head)
	}
	off, err := w.pad()
	if err != nil {
		return err
	}
	sum2, _, size2, err := w.hashStream(open, w.out)
	if err == nil && (sum2 != sum || size2 != size) {
		err = &fs.PathError{Op: "read", Path: p, Err: ErrChanged}
	}
	if err != nil {
		// Part of the copy may be out. The entry is not stored, so take
		// it back where the destination allows; a stream cannot, and the
		// pack cannot go on.
		if rerr := w.rewind(off); rerr != nil {
			return stop{fmt.Errorf("%w; the part already written cannot be taken back: %w", err, rerr)}
		}
		return err
	}
	w.setFile(k, sum, crc, size)
	w.off += size
	w.prog.Stored += int64(size)
	k.rec.Off = off
	w.remember(sum, head, off, size, p, 0)
	return nil
}

// storeLarge3 copies p, hashed as sum, crc and size, into the stream of a
// format-3 pack, with its holes, and checks that the copy hashes the same.
func (w *writer) storeLarge3(k *node, p string, open func() (io.ReadCloser, error), sum [32]byte, crc uint32, size uint64, head int) error {
	m, err := w.st.mark()
	if err != nil {
		return stop{err}
	}
	off := w.off
	pos, frame, err := w.st.begin(size)
	if err != nil {
		return stop{err}
	}
	sum2, _, size2, err := w.hashStream(open, w.st)
	if err == nil && (sum2 != sum || size2 != size) {
		err = &fs.PathError{Op: "read", Path: p, Err: ErrChanged}
	}
	if err != nil {
		if w.dst.err != nil {
			return stop{w.dst.err}
		}
		w.st.rewind(m)
		if rerr := w.rewind(off); rerr != nil {
			return stop{fmt.Errorf("%w; the part already written cannot be taken back: %w", err, rerr)}
		}
		return err
	}
	w.setFile(k, sum, crc, size)
	k.rec.Off, k.rec.CRC = pos, frame
	w.remember(sum, head, pos, size, p, frame)
	return nil
}

// pieceSink takes a content piece by piece: the stream of a format-3
// pack.
type pieceSink interface {
	data(p []byte) error
	hole(n uint64) error
}

// zeros is what holes are hashed as.
var zeros [64 << 10]byte

// hashStream reads the file open returns, hashing it and, when dst is
// not nil, copying it to dst: an io.Writer (format 2) or a pieceSink
// (format 3, which keeps holes).
func (w *writer) hashStream(open func() (io.ReadCloser, error), dst any) (sum [32]byte, crc uint32, size uint64, err error) {
	if w.v3 {
		return w.hashPieces(open, dst)
	}
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
		ws = append(ws, dst.(io.Writer))
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

// hashPieces is hashStream for format 3: a host file's holes are found
// with SEEK_DATA and SEEK_HOLE, hashed as zeros and never read.
func (w *writer) hashPieces(open func() (io.ReadCloser, error), dst any) (sum [32]byte, crc uint32, size uint64, err error) {
	rc, err := open()
	if err != nil {
		return sum, 0, 0, err
	}
	defer rc.Close()
	f, ok := rc.(fs.File)
	if !ok {
		return sum, 0, 0, errors.New("not an fs.File")
	}
	var h hash.Hash
	if w.c.newHash == nil {
		h = sha256.New()
	} else {
		h = w.c.newHash()
	}
	c := crc32.New(packformat.Castagnoli)
	sink, _ := dst.(pieceSink)
	if cap(w.buf) < smallFile+1 {
		w.buf = make([]byte, smallFile+1)
	}
	n, err := readPieces(f, true, w.buf[:smallFile], func(p []byte, hole uint64) error {
		if len(p) > 0 {
			h.Write(p)
			c.Write(p)
			if sink != nil {
				return sink.data(p)
			}
			return nil
		}
		for left := hole; left > 0; {
			z := zeros[:min(left, uint64(len(zeros)))]
			h.Write(z)
			c.Write(z)
			left -= uint64(len(z))
		}
		if sink != nil {
			return sink.hole(hole)
		}
		return nil
	})
	if err != nil {
		return sum, 0, 0, err
	}
	h.Sum(sum[:0])
	return sum, c.Sum32(), n, nil
}

type onlyReader struct{ io.Reader }

// equal compares the content stored as b with what open returns.
func (w *writer) equal(b *blob, open func() (io.ReadCloser, error)) (bool, error) {
	var old io.Reader
	if w.ra != nil && !w.v3 {
		if err := w.out.Flush(); err != nil {
			return false, err
		}
		var probe [1]byte
		if _, err := w.ra.ReadAt(probe[:], 0); err != nil {
			w.ra = nil // not readable after all (O_WRONLY): use the source
		}
	}
	if w.ra != nil && !w.v3 {
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
	if w.cmp == nil {
		w.cmp = new([2][32 << 10]byte)
	}
	return sameReaders(old, cur, b.size, w.cmp)
}

func sameReaders(a, b io.Reader, size uint64, bufs *[2][32 << 10]byte) (bool, error) {
	ba, bb := bufs[0][:], bufs[1][:]
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
// the key table, the string table, the check table and the footer.
func (w *writer) finish(root *node) error {
	var namesPos, namesSize uint64
	var namesFirst uint32
	if w.v3 && w.names.any() {
		// The owner-names table is the stream's last content.
		t := packformat.EncodeNames(w.names.users, w.names.groups)
		var err error
		if namesPos, namesFirst, err = w.st.add(t, crc32.Checksum(t, packformat.Castagnoli)); err != nil {
			return err
		}
		namesSize = uint64(len(t))
	}
	if w.v3 {
		if err := w.st.flush(); err != nil {
			return err
		}
		w.st.frames.add(packformat.Frame{Pos: w.st.pos})
	}
	indexOff, err := w.pad()
	if err != nil {
		return err
	}
	// Number the entries: a queue of the directories in index order, each
	// with its own index; a directory's children start where the
	// children of the directories before it end.
	type dirAt struct {
		n *node
		i uint32
	}
	dirs := []dirAt{{root, 0}}
	count := uint64(1)
	for q := 0; q < len(dirs); q++ {
		d := dirs[q]
		d.n.rec.Off = count
		live := uint64(0)
		for j := range d.n.kids {
			k := &d.n.kids[j]
			if k.gone {
				continue
			}
			k.rec.Parent = d.i
			if k.rec.Type == packformat.TypeDir {
				dirs = append(dirs, dirAt{k, uint32(count + live)})
			}
			live++
		}
		d.n.rec.Size = live
		d.n.attr.Nlink = 2 + uint32(min(subdirs(d.n), 1<<32-3))
		if count += live; count > 1<<32-1 {
			return errors.New("packwriter: too many entries")
		}
	}
	// Write the records in that order, one block at a time, appending
	// names and targets to the string table as they come.
	var (
		strs  []byte
		keys  = make([]byte, 0, count*packformat.KeySize)
		table []byte
		block = make([]byte, 0, packformat.BlockSize)
		attrs []byte
		links = newLinks()
		// packed: the tables, kept to be stored in groups
		packed = w.packed()
		tables []byte
	)
	if packed {
		tables = make([]byte, 0, count*packformat.RecordSize)
	}
	if w.v3 {
		attrs = make([]byte, count*packformat.AttrSize)
	}
	idx := uint32(0)
	put := func(n *node) error {
		if w.v3 {
			a := n.attr
			a.Ino = idx + 1
			if n.rec.Type != packformat.TypeDir {
				a.Nlink = 1
				if n.linked {
					links.add(n, w.srcs[n], idx)
				}
			}
			at := uint64(idx) * packformat.AttrSize
			a.Put(attrs[at : at+packformat.AttrSize])
		}
		idx++
		var target string
		if n.rec.Type == packformat.TypeSymlink {
			target = w.targets[n.rec.Off]
		}
		if uint64(len(strs))+uint64(len(n.name))+uint64(len(target)) > 1<<32-1 {
			return errors.New("packwriter: string table over 4 GiB")
		}
		n.rec.NameOff = uint32(len(strs))
		n.rec.NameLen = uint16(len(n.name))
		strs = append(strs, n.name...)
		keys = binary.BigEndian.AppendUint64(keys, packformat.Key(n.name))
		if n.rec.Type == packformat.TypeSymlink {
			n.rec.Off = uint64(len(strs))
			n.rec.Size = uint64(len(target))
			strs = append(strs, target...)
		}
		block = block[:len(block)+packformat.RecordSize]
		n.rec.Put(block[len(block)-packformat.RecordSize:])
		if len(block) == packformat.BlockSize {
			table = binary.LittleEndian.AppendUint32(table, crc32.Checksum(block, packformat.Castagnoli))
			if packed {
				tables = append(tables, block...)
			} else if _, err := w.out.Write(block); err != nil {
				return err
			}
			block = block[:0]
		}
		return nil
	}
	if err := put(root); err != nil {
		return err
	}
	for _, d := range dirs {
		for j := range d.n.kids {
			if d.n.kids[j].gone {
				continue
			}
			if err := put(&d.n.kids[j]); err != nil {
				return err
			}
		}
	}
	if len(block) > 0 {
		table = binary.LittleEndian.AppendUint32(table, crc32.Checksum(block, packformat.Castagnoli))
		if packed {
			tables = append(tables, block...)
		} else if _, err := w.out.Write(block); err != nil {
			return err
		}
	}
	// region stores the next bytes of the tables, which start a block,
	// and their blocks' CRC-32C.
	region := func(region []byte) error {
		for b := region; len(b) > 0; {
			n := min(len(b), packformat.BlockSize)
			table = binary.LittleEndian.AppendUint32(table, crc32.Checksum(b[:n], packformat.Castagnoli))
			b = b[n:]
		}
		if packed {
			tables = append(tables, region...)
			return nil
		}
		_, err := w.out.Write(region)
		return err
	}
	if err := region(keys); err != nil {
		return err
	}
	if err := region(strs); err != nil {
		return err
	}
	if w.v3 {
		links.apply(attrs)
		if err := w.st.frames.encode(region); err != nil {
			return err
		}
		if err := region(attrs); err != nil {
			return err
		}
	}
	var groupsOff uint64
	if packed {
		l := packformat.TablesLayout{Count: count, StringsSize: uint64(len(strs)), FrameCount: uint64(w.st.frames.len())}
		groups, err := w.packGroups(tables, l)
		if err != nil {
			return err
		}
		// A reader refuses raw tables over MaxTablesRatio times the
		// pack's size: pad the data region with zeros up to that.
		size := indexOff + uint64(len(table)) + packformat.FooterSize3
		for _, g := range groups {
			size += uint64(len(g)) + packformat.GroupEntrySize
		}
		if need := (l.Len() + packformat.MaxTablesRatio - 1) / packformat.MaxTablesRatio; need > size {
			pad := packformat.Align(need - size)
			if _, err := w.out.Write(make([]byte, pad)); err != nil {
				return err
			}
			indexOff += pad
		}
		if groupsOff, err = w.writeGroups(groups, indexOff); err != nil {
			return err
		}
	}
	if _, err := w.out.Write(table); err != nil {
		return err
	}
	f := packformat.Footer{
		IndexOff:    indexOff,
		Count:       count,
		StringsOff:  indexOff + count*(packformat.RecordSize+packformat.KeySize),
		StringsSize: uint64(len(strs)),
		DataSize:    indexOff - packformat.HeaderSize,
		Logical:     w.logical,
	}
	crc := crc32.Update(0, packformat.Castagnoli, w.header().Encode())
	var fb []byte
	if w.v3 {
		f.FramesOff = f.StringsOff + f.StringsSize
		f.FrameCount = uint64(w.st.frames.len())
		f.AttrsOff = f.FramesOff + uint64(w.st.frames.len())*packformat.FrameEntrySize
		f.Stream = w.st.pos
		f.GroupsOff = groupsOff
		f.NamesPos, f.NamesSize, f.NamesFirst = namesPos, namesSize, namesFirst
		fb = f.Encode3()
		f.CRC = crc32.Update(crc, packformat.Castagnoli, fb[:packformat.FooterCRCLen3])
		f.Put3(fb)
	} else {
		fb = f.Encode()
		f.CRC = crc32.Update(crc, packformat.Castagnoli, fb[:packformat.FooterCRCLen])
		f.Put(fb)
	}
	if _, err := w.out.Write(fb); err != nil {
		return err
	}
	return w.out.Flush()
}
