package packwriter

import (
	"hash/crc32"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/x86filter"
)

// A version-3 pack stores its contents as one raw stream cut into frames
// (see packformat.Frame). The stream is built here, on the goroutine
// running Write: add appends a content, hole appends zeros that take no
// storage. Compressed packs group small contents into shared frames of up
// to packformat.ZstdFrameSize raw bytes, as squashfs fragments do, and hand
// each frame to a pool of compressing goroutines, one per core; frames
// are written in the order they were cut, so the output does not depend
// on timing. Uncompressed packs give each small content its own frame, so
// that reading one checks the CRC-32C of its bytes and no others, and
// copy frames straight to the output.
//
// A compressed frame that holds bytes of an x86-64 executable (told by
// its first 20 bytes, x86filter.Executable) goes through x86filter.Encode
// before zstd, and its frame entry names FilterX86: Go's executables
// compress 7.6% smaller so (FORMAT.md, "Frame filters"). A frame the
// executable shares with other files is compressed both ways, and keeps
// the smaller.

// frameJob is one frame handed to the compressors.
type frameJob struct {
	i      int    // index in stream.frames
	raw    []byte // raw bytes; back to the free list once written
	x86    bool   // raw holds bytes of an x86-64 executable: filter them
	mixed  bool   // and bytes of other files: keep the filter only if it helps
	out    []byte // what to store: compressed, or raw when that is no smaller
	filter uint8  // the filter out went through
	crc    uint32
	done   chan struct{}
}

type stream struct {
	w      *writer
	level  zstd.EncoderLevel
	zstd   bool
	frames frameList
	pos    uint64 // raw stream length so far
	cur    []byte // the open frame (compressed packs): raw bytes not cut yet
	inHole bool   // the last frame is a hole, and nothing came after it

	// Compressed packs: curX86 says that the open frame holds bytes of an
	// x86-64 executable, curOther that it holds other bytes. x86 says
	// that the content begun with begin is one, once its first bytes
	// (head) have told; sniffing, that they have not yet.
	curX86   bool
	curOther bool
	x86      bool
	sniffing bool
	head     []byte

	jobs    chan *frameJob
	pending []*frameJob // submitted, not written, oldest first
	free    [][]byte
	workers int
	frame   int // raw size of a frame: FrameSize, ZstdFrameSize when compressed
	wg      sync.WaitGroup
}

func newStream(w *writer, level int) *stream {
	s := &stream{w: w, frame: packformat.FrameSize}
	if level > 0 {
		s.frame = packformat.ZstdFrameSize
		s.zstd = true
		s.level = zstd.EncoderLevelFromZstd(level)
		s.workers = runtime.GOMAXPROCS(0)
	}
	return s
}

// add appends data as one content and returns its stream position and
// the index of the frame holding its first byte (for an empty content,
// 0 and 0). crc is data's CRC-32C, which an uncompressed pack's frame of
// a small content takes as its own.
func (s *stream) add(data []byte, crc uint32) (pos uint64, frame uint32, err error) {
	if len(data) == 0 {
		return 0, 0, nil
	}
	if len(data) >= s.frame {
		// Large enough to hold a run of zeros worth a hole.
		if pos, frame, err = s.begin(uint64(len(data))); err != nil {
			return 0, 0, err
		}
		return pos, frame, s.data(data)
	}
	if !s.zstd {
		pos, frame = s.pos, uint32(s.frames.len())
		if len(data) <= packformat.FrameSize {
			// One frame, whose bytes are the content's: its CRC-32C is
			// the content's, which the hasher computed already.
			return pos, frame, s.writeRawSum(data, crc)
		}
		for len(data) > 0 {
			n := min(len(data), packformat.FrameSize)
			if err := s.writeRaw(data[:n]); err != nil {
				return 0, 0, err
			}
			data = data[n:]
		}
		return pos, frame, nil
	}
	// A content that does not fit in the open frame starts a new one:
	// small contents never straddle two frames.
	if len(s.cur) > 0 && len(s.cur)+len(data) > s.frame {
		if err := s.cut(); err != nil {
			return 0, 0, err
		}
	}
	pos, frame = s.pos, uint32(s.frames.len())
	if err := s.appendData(data, x86filter.Executable(data)); err != nil {
		return 0, 0, err
	}
	return pos, frame, nil
}

// appendData appends data to the open frame, cutting it when full; x86
// says that data is part of an x86-64 executable.
func (s *stream) appendData(data []byte, x86 bool) error {
	for len(data) > 0 {
		if s.cur == nil {
			s.cur = s.buffer()
		}
		n := min(len(data), s.frame-len(s.cur))
		s.cur = append(s.cur, data[:n]...)
		s.curX86 = s.curX86 || x86
		s.curOther = s.curOther || !x86
		s.pos += uint64(n)
		data = data[n:]
		if len(s.cur) == s.frame {
			if err := s.cut(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *stream) buffer() []byte {
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free = s.free[:n-1]
		return b[:0]
	}
	return make([]byte, 0, s.frame)
}

// begin starts a content of size bytes that comes in pieces (data and
// hole), at a frame boundary unless it fits in the open frame whole.
func (s *stream) begin(size uint64) (pos uint64, frame uint32, err error) {
	if len(s.cur) > 0 && uint64(len(s.cur))+size > uint64(s.frame) {
		if err := s.cut(); err != nil {
			return 0, 0, err
		}
	}
	// A hole at the content's start is a frame of its own, not the end
	// of the content before it: the frame returned must hold its first
	// byte.
	s.inHole = false
	s.x86, s.sniffing, s.head = false, s.zstd, s.head[:0]
	return s.pos, uint32(s.frames.len()), nil
}

// sniff takes p, the next piece of the content begun with begin, until
// its first 20 bytes tell whether it is an x86-64 executable; it then
// marks the open frame, which holds them.
func (s *stream) sniff(p []byte) {
	s.head = append(s.head, p[:min(len(p), 20-len(s.head))]...)
	if len(s.head) == 20 {
		s.sniffing = false
		s.x86 = x86filter.Executable(s.head)
		s.curX86 = s.curX86 || s.x86
	}
}

// data appends the next piece of a content begun with begin. Pieces of
// FrameSize zero bytes at a frame boundary become holes.
func (s *stream) data(p []byte) error {
	if !s.zstd {
		for len(p) > 0 {
			n := min(len(p), packformat.FrameSize)
			if n == packformat.FrameSize && allZero(p[:n]) {
				s.hole(uint64(n))
			} else if err := s.writeRaw(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
		return nil
	}
	for len(p) > 0 {
		if len(s.cur) == 0 && len(p) >= s.frame && allZero(p[:s.frame]) {
			s.hole(uint64(s.frame))
			p = p[s.frame:]
			continue
		}
		n := min(len(p), s.frame-len(s.cur))
		if s.sniffing {
			// Before appendData, which may cut the frame these bytes
			// land in.
			s.sniff(p[:n])
		}
		if err := s.appendData(p[:n], s.x86); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// hole appends n zero bytes that take no storage; a hole right after
// another one extends it.
func (s *stream) hole(n uint64) error {
	if n == 0 {
		return nil
	}
	s.sniffing = false // an executable starts with its header, not zeros
	if len(s.cur) > 0 {
		if err := s.cut(); err != nil {
			return err
		}
	}
	if !s.inHole {
		s.frames.add(packformat.Frame{Pos: s.pos})
		s.inHole = true
	}
	s.pos += n
	return nil
}

// writeRaw writes p as one raw frame (uncompressed packs).
func (s *stream) writeRaw(p []byte) error {
	return s.writeRawSum(p, crc32.Checksum(p, packformat.Castagnoli))
}

// writeRawSum is writeRaw given crc, p's CRC-32C.
func (s *stream) writeRawSum(p []byte, crc uint32) error {
	off, err := s.w.pad()
	if err != nil {
		return err
	}
	if _, err := s.w.out.Write(p); err != nil {
		return err
	}
	s.w.off += uint64(len(p))
	s.w.prog.Stored += int64(len(p))
	s.frames.add(packformat.Frame{Pos: s.pos, Off: off, Stored: uint32(len(p)), CRC: crc})
	s.pos += uint64(len(p))
	s.inHole = false
	return nil
}

// cut closes the open frame and hands it to the compressors.
func (s *stream) cut() error {
	if len(s.cur) == 0 {
		return nil
	}
	if s.jobs == nil {
		s.jobs = make(chan *frameJob, 2*s.workers)
		for range s.workers {
			s.wg.Add(1)
			go s.compressLoop()
		}
	}
	raw := s.cur
	s.cur = nil
	j := &frameJob{i: s.frames.len(), raw: raw, x86: s.curX86, mixed: s.curX86 && s.curOther, done: make(chan struct{})}
	s.curX86, s.curOther = false, false
	s.frames.add(packformat.Frame{Pos: s.pos - uint64(len(raw))})
	s.inHole = false
	s.jobs <- j
	s.pending = append(s.pending, j)
	for len(s.pending) > 2*s.workers {
		if err := s.writeOldest(); err != nil {
			return err
		}
	}
	return nil
}

func (s *stream) compressLoop() {
	defer s.wg.Done()
	enc, err := getEncoder(s.level)
	var filtered []byte
	for j := range s.jobs {
		j.out = j.raw
		if err == nil {
			var c []byte
			if !j.x86 || j.mixed {
				c = enc.EncodeAll(j.raw, make([]byte, 0, len(j.raw)))
			}
			if j.x86 {
				// A frame of an executable alone is filtered; one it
				// shares with other files (a small executable's, or a
				// large one's last) keeps the filter if it helps.
				filtered = append(filtered[:0], j.raw...)
				x86filter.Encode(filtered)
				if f := enc.EncodeAll(filtered, make([]byte, 0, len(j.raw))); c == nil || len(f) < len(c) {
					c, j.filter = f, packformat.FilterX86
				}
			}
			if len(c) < len(j.raw) {
				j.out = c
			} else {
				j.filter = packformat.FilterNone
			}
		}
		j.crc = crc32.Checksum(j.out, packformat.Castagnoli)
		close(j.done)
	}
	if err == nil {
		putEncoder(s.level, enc)
	}
}

// Encoders are kept between Writes, one pool per level: making one costs
// a few MB of tables, which a store that checkpoints small packs would
// pay per pack and per core.
var encoders sync.Map // zstd.EncoderLevel → *sync.Pool

func getEncoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	if p, ok := encoders.Load(level); ok {
		if e, ok := p.(*sync.Pool).Get().(*zstd.Encoder); ok {
			return e, nil
		}
	}
	// Frames are checked by the frame table's CRC-32C: zstd's own
	// checksum would add 4 bytes a frame for nothing.
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
}

func putEncoder(level zstd.EncoderLevel, e *zstd.Encoder) {
	p, _ := encoders.LoadOrStore(level, &sync.Pool{})
	p.(*sync.Pool).Put(e)
}

// writeOldest waits for the oldest frame submitted and writes it.
func (s *stream) writeOldest() error {
	j := s.pending[0]
	s.pending[0] = nil
	s.pending = s.pending[1:]
	<-j.done
	off, err := s.w.pad()
	if err != nil {
		return err
	}
	if _, err := s.w.out.Write(j.out); err != nil {
		return err
	}
	s.w.off += uint64(len(j.out))
	s.w.prog.Stored += int64(len(j.out))
	f := s.frames.at(j.i)
	f.Off, f.Stored, f.Filter, f.CRC = off, uint32(len(j.out)), j.filter, j.crc
	s.frames.set(j.i, f)
	s.free = append(s.free, j.raw)
	return nil
}

// flush cuts the open frame and writes every frame submitted.
func (s *stream) flush() error {
	if err := s.cut(); err != nil {
		return err
	}
	for len(s.pending) > 0 {
		if err := s.writeOldest(); err != nil {
			return err
		}
	}
	return nil
}

// mark is a point the stream can be taken back to.
type mark struct {
	frames int
	pos    uint64
	inHole bool
}

// mark flushes the stream and returns where it stands.
func (s *stream) mark() (mark, error) {
	if err := s.flush(); err != nil {
		return mark{}, err
	}
	return mark{s.frames.len(), s.pos, s.inHole}, nil
}

// rewind drops what the stream got after m; the caller takes the output
// back to where it was at m.
func (s *stream) rewind(m mark) {
	for len(s.pending) > 0 {
		j := s.pending[0]
		s.pending = s.pending[1:]
		<-j.done
		s.free = append(s.free, j.raw)
	}
	if s.cur != nil {
		s.free = append(s.free, s.cur)
		s.cur = nil
	}
	s.curX86, s.curOther, s.x86, s.sniffing = false, false, false, false
	s.frames.truncate(m.frames)
	s.pos, s.inHole = m.pos, m.inHole
}

// stop ends the compressors.
func (s *stream) stop() {
	if s.jobs != nil {
		close(s.jobs)
		s.wg.Wait()
		s.jobs = nil
	}
}

// frameList is the stream's frame table, encoded as it grows, in
// chunks of frameChunk entries: a pack of many small files has as many
// frames, and a slice of them grown by append copied them over and over
// (four times their size in all, allocated in a Write of 20,000 files).
// A chunk is three whole blocks of the check table, so that each is
// stored as it is.
type frameList struct {
	chunks []*[frameChunk * packformat.FrameEntrySize]byte
	n      int
}

const frameChunk = 512

const _ = uint(-(frameChunk * packformat.FrameEntrySize % packformat.BlockSize))

func (l *frameList) len() int { return l.n }

// entry returns the bytes of entry i, whose chunk add allocated.
func (l *frameList) entry(i int) []byte {
	k := uint(i) % frameChunk * packformat.FrameEntrySize
	return l.chunks[uint(i)/frameChunk][k : k+packformat.FrameEntrySize]
}

func (l *frameList) add(f packformat.Frame) {
	if uint(l.n)/frameChunk == uint(len(l.chunks)) {
		l.chunks = append(l.chunks, new([frameChunk * packformat.FrameEntrySize]byte))
	}
	f.Put(l.entry(l.n))
	l.n++
}

func (l *frameList) at(i int) packformat.Frame { return packformat.DecodeFrame(l.entry(i)) }

func (l *frameList) set(i int, f packformat.Frame) { f.Put(l.entry(i)) }

// truncate drops the frames from n on; their chunks stay for the next.
func (l *frameList) truncate(n int) { l.n = n }

// encode calls put with the frame table's bytes, a chunk at a time.
func (l *frameList) encode(put func([]byte) error) error {
	for c, left := 0, l.n; left > 0; c, left = c+1, left-frameChunk {
		if err := put(l.chunks[c][:min(left, frameChunk)*packformat.FrameEntrySize]); err != nil {
			return err
		}
	}
	return nil
}
