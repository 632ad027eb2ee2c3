package remote

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/minio/minio-go/v7"
)

var (
	errNotExist   = fs.ErrNotExist
	errPermission = fs.ErrPermission
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// metaIndexKey is the user metadata an upload records the pack's index
// offset in, so that opening fetches everything from the index to the
// end in its second request.
const metaIndexKey = "Packfs-Index-Offset"

// Object is one object of a bucket, pinned to the ETag it had at open:
// an io.ReaderAt over a bounded cache of blocks. Every request carries
// If-Match with that ETag, and the ETag of every response is compared
// with it, so that a replaced object gives ErrChanged, never a mix of
// old and new bytes. Each block's CRC-32C is remembered when first
// fetched, and a block fetched again must match it.
//
// Readers of a block that is being fetched wait for that one request
// (coalescing); a run of missing blocks is one request; a reader that
// goes on where the last read ended gets a window fetched ahead of it,
// doubling up to Options.ReadAhead.
//
// ReadAt runs under the context given to OpenObject; ReadAtContext
// under its own as well. Close cancels the first.
type Object struct {
	b    *Bucket
	key  string
	size int64
	etag string
	meta map[string]string
	bs   int64
	ctx  context.Context
	stop context.CancelFunc
	cap  int64  // cache bound in bytes
	id   string // the object's name in the disk cache

	mu        sync.Mutex
	cache     map[int64]*list.Element // block → element of lru (value *block)
	lru       list.List               // front: most recent
	cached    int64                   // bytes in cache
	inflight  map[int64]*fetch
	sums      map[int64]uint32 // block → CRC-32C at first fetch
	window    int64            // read-ahead window, bytes
	nextFetch int64            // the block after the last fetch's
	mark      int64            // a read reaching this block fetches the next window
	// head is the open's first response, kept; spans the ranges
	// Prefetch fetched, each served until a read from its start takes
	// it, and those Seed gave, kept. None is cut into blocks: they
	// serve reads that lie inside them.
	head   *span
	spans  []*span
	closed atomic.Bool
}

type block struct {
	n    int64
	data []byte
}

// fetch is one ranged request for blocks lo, lo+1, ...; done closes when
// data (the blocks' bytes, back to back) or err is set.
type fetch struct {
	lo, n int64 // first block, count
	done  chan struct{}
	data  []byte
	err   error
}

// span is a fetched byte range.
type span struct {
	off, n int64
	once   bool // dropped once a read from off takes it
	done   chan struct{}
	data   []byte
	err    error
}

// headSize is what the open's request fetches: the pack's header, and
// for a small object all of it, at the cost of a small share of a
// cold walk's bytes.
const headSize = 4 << 10

// OpenObject opens key, fetching its first block (which tells its size
// and ETag). ctx bounds every later read through ReadAt, until Close.
func (b *Bucket) OpenObject(ctx context.Context, key string) (*Object, error) {
	o := &Object{b: b, key: key, bs: int64(b.opts.BlockSize), cap: b.opts.CacheBytes,
		cache: map[int64]*list.Element{}, inflight: map[int64]*fetch{}, sums: map[int64]uint32{}}
	var first []byte
	err := b.retry(ctx, func(ctx context.Context) error {
		var opts minio.GetObjectOptions
		if err := opts.SetRange(0, headSize-1); err != nil {
			return err
		}
		b.requests.Add(1)
		b.gets.Add(1)
		body, info, hdr, err := b.core.GetObject(ctx, b.name, key, opts)
		if isStatus(err, http.StatusRequestedRangeNotSatisfiable) {
			// An empty object has no byte 0: ask for all of it.
			b.requests.Add(1)
			b.gets.Add(1)
			body, info, hdr, err = b.core.GetObject(ctx, b.name, key, minio.GetObjectOptions{})
			if err == nil && info.Size > headSize {
				body.Close()
				return fmt.Errorf("%w: %d bytes, and a range of it not satisfiable", ErrChanged, info.Size)
			}
		}
		if err != nil {
			return err
		}
		defer body.Close()
		size, err := totalSize(hdr, info.Size)
		if err != nil {
			return err
		}
		want := min(size, headSize)
		if info.Size != want {
			return fmt.Errorf("%w: %d bytes for a range of %d", errShort, info.Size, want)
		}
		buf := make([]byte, want)
		n, err := io.ReadFull(progress(ctx, body), buf)
		b.bytes.Add(int64(n))
		if err != nil {
			return err
		}
		o.size, o.etag, first = size, trimETag(info.ETag), buf
		o.meta = map[string]string{}
		for k, v := range info.UserMetadata {
			o.meta[http.CanonicalHeaderKey(k)] = v
		}
		return nil
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: b.path(key), Err: err}
	}
	if o.etag == "" {
		return nil, &fs.PathError{Op: "open", Path: b.path(key), Err: errors.New("remote: the server gave no ETag")}
	}
	o.ctx, o.stop = context.WithCancel(context.WithoutCancel(ctx))
	if ctx.Done() != nil {
		context.AfterFunc(ctx, o.stop)
	}
	done := make(chan struct{})
	close(done)
	o.head = &span{off: 0, n: int64(len(first)), done: done, data: first}
	if b.disk != nil {
		o.id = objectID(b.core.EndpointURL().String(), b.name, key, o.etag, o.bs)
	}
	o.nextFetch, o.mark = math.MinInt64/2, math.MaxInt64
	return o, nil
}

// totalSize reads the object's size from a ranged response's
// Content-Range (bytes a-b/size); a 200 response has none and its length
// is the size.
func totalSize(h http.Header, length int64) (int64, error) {
	cr := h.Get("Content-Range")
	if cr == "" {
		return length, nil
	}
	_, total, ok := strings.Cut(cr, "/")
	n, err := strconv.ParseInt(total, 10, 64)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("%w: bad Content-Range %q", errShort, cr)
	}
	return n, nil
}

func (b *Bucket) path(key string) string { return "s3://" + b.name + "/" + key }

// Size returns the object's size.
func (o *Object) Size() int64 { return o.size }

// ETag returns the ETag the object was opened with.
func (o *Object) ETag() string { return o.etag }

// Metadata returns the object's user metadata, keys in canonical form.
func (o *Object) Metadata() map[string]string { return o.meta }

// Close drops the cache and fails later reads with fs.ErrClosed.
func (o *Object) Close() error {
	if o.closed.Swap(true) {
		return nil
	}
	o.stop()
	o.mu.Lock()
	o.cache, o.cached, o.head, o.spans = map[int64]*list.Element{}, 0, nil, nil
	o.lru.Init()
	o.mu.Unlock()
	return nil
}

// ReadAt reads len(p) bytes at off, under the context given at open.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	return o.ReadAtContext(o.ctx, p, off)
}

// ReadAtContext is ReadAt under ctx as well as the open's context.
func (o *Object) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if o.closed.Load() {
		return 0, o.err("read", fs.ErrClosed)
	}
	if off < 0 {
		return 0, o.err("read", fs.ErrInvalid)
	}
	if off >= o.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), o.size-off))
	if err := o.read(ctx, p[:n], off); err != nil {
		return 0, o.err("read", err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (o *Object) err(op string, err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe
	}
	return &fs.PathError{Op: op, Path: o.b.path(o.key), Err: err}
}

// read fills p from off; off+len(p) ≤ size.
func (o *Object) read(ctx context.Context, p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	if ok, err := o.fromSpan(ctx, p, off); ok || err != nil {
		return err
	}
	end := off + int64(len(p))
	b0, b1 := off/o.bs, (end-1)/o.bs
	// A read larger than half the cache goes around it: its whole
	// blocks come straight into p, only its ends through the cache.
	if int64(len(p)) > o.cap/2 {
		lo, hi := (off+o.bs-1)/o.bs, end/o.bs // whole blocks [lo, hi)
		if hi > lo {
			if lo*o.bs > off {
				if err := o.read(ctx, p[:lo*o.bs-off], off); err != nil {
					return err
				}
			}
			if err := o.direct(ctx, p[lo*o.bs-off:hi*o.bs-off], lo, hi-lo); err != nil {
				return err
			}
			if hi*o.bs < end {
				return o.read(ctx, p[hi*o.bs-off:], hi*o.bs)
			}
			return nil
		}
	}
	waits, err := o.plan(b0, b1, off)
	if err != nil {
		return err
	}
	for _, w := range waits {
		select {
		case <-w.f.done:
		case <-ctx.Done():
			return ctx.Err()
		case <-o.ctx.Done():
			return o.ctx.Err()
		}
		if w.f.err != nil {
			return w.f.err
		}
	}
	for _, w := range waits {
		for b := max(b0, w.f.lo); b <= min(b1, w.f.lo+w.f.n-1); b++ {
			bstart := b * o.bs
			d := w.f.data[(b-w.f.lo)*o.bs:]
			d = d[:min(int64(len(d)), o.bs)]
			lo := max(off, bstart)
			hi := min(end, bstart+int64(len(d)))
			copy(p[lo-off:hi-off], d[lo-bstart:hi-bstart])
		}
	}
	return nil
}

type wait struct{ f *fetch }

// plan finds blocks b0..b1: each in the cache, or in a fetch in flight,
// or in a new fetch it starts for each run of missing blocks (the last
// run extended by the read-ahead window). Cached blocks are returned as
// finished fetches of one block.
func (o *Object) plan(b0, b1, off int64) ([]wait, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed.Load() {
		return nil, fs.ErrClosed
	}
	if o.b.opts.ReadAhead < 0 {
		o.window = 0
	}
	last := (o.size - 1) / o.bs
	var waits []wait
	var start []*fetch
	for b := b0; b <= b1; b++ {
		if e, ok := o.cache[b]; ok {
			o.lru.MoveToFront(e)
			bl := e.Value.(*block)
			done := make(chan struct{})
			close(done)
			waits = append(waits, wait{&fetch{lo: b, n: 1, done: done, data: bl.data}})
			continue
		}
		if f := o.inflight[b]; f != nil {
			if len(waits) == 0 || waits[len(waits)-1].f != f {
				waits = append(waits, wait{f})
			}
			continue
		}
		// A new run: b and the missing blocks after it.
		hi := b
		for hi+1 <= b1 && o.missing(hi+1) {
			hi++
		}
		// Read-ahead: a fetch that starts where the last one ended (or a
		// block after) belongs to a sequential reader, whose window
		// doubles; reads the cache serves do not count, so a reader that
		// reads a content twice (a check, then the copy) stays
		// sequential.
		if o.b.opts.ReadAhead > 0 && b >= o.nextFetch && b <= o.nextFetch+1 {
			o.window = min(max(2*o.window, o.bs), o.maxWindow())
			o.mark = b
		} else {
			o.window, o.mark = 0, math.MaxInt64
		}
		if hi == b1 && o.window > 0 {
			for ahead := o.window / o.bs; ahead > 0 && hi+1 <= last && o.missing(hi+1); ahead-- {
				hi++
			}
		}
		o.nextFetch = hi + 1
		f := &fetch{lo: b, n: hi - b + 1, done: make(chan struct{})}
		for x := b; x <= hi; x++ {
			o.inflight[x] = f
		}
		start = append(start, f)
		waits = append(waits, wait{f})
		b = min(hi, b1)
	}
	// A sequential reader that reached the mark gets the next window
	// fetched in the background; a read past the window is another
	// reader's (a pack's tables are read as several streams at once).
	if o.window > 0 && b1 >= o.mark && b1 < o.nextFetch && o.nextFetch <= last && o.missing(o.nextFetch) {
		o.window = min(2*o.window, o.maxWindow())
		lo := o.nextFetch
		hi := lo
		for hi+1 <= min(last, lo+o.window/o.bs-1) && o.missing(hi+1) {
			hi++
		}
		f := &fetch{lo: lo, n: hi - lo + 1, done: make(chan struct{})}
		for x := lo; x <= hi; x++ {
			o.inflight[x] = f
		}
		start = append(start, f)
		// The next one starts when the reader is halfway through the
		// window before this one, so that it rarely waits for either.
		o.mark, o.nextFetch = max(lo-o.window/o.bs/2, 0), hi+1
	}
	for _, f := range start {
		go o.run(f, true)
	}
	return waits, nil
}

// maxWindow is the largest read-ahead: Options.ReadAhead, and at most an
// eighth of the cache, which must hold a window, the one fetched after
// it, and what a reader reads twice (packreader checks a content, then
// copies it): with a quarter, a walk that read the Go tree's pack
// fetched 1.45x its bytes, with an eighth 1.04x.
func (o *Object) maxWindow() int64 { return max(o.bs, min(o.b.opts.ReadAhead, o.cap/8)) }

func (o *Object) missing(b int64) bool {
	if _, ok := o.cache[b]; ok {
		return false
	}
	if _, ok := o.inflight[b]; ok {
		return false
	}
	return true
}

// run performs f's request under the object's context, checks its
// blocks, caches them if asked, and wakes its waiters.
func (o *Object) run(f *fetch, cache bool) {
	f.data, f.err = o.fetch(o.ctx, f.lo, f.n)
	o.mu.Lock()
	for x := f.lo; x < f.lo+f.n; x++ {
		if o.inflight[x] == f {
			delete(o.inflight, x)
		}
	}
	if f.err == nil && cache && !o.closed.Load() {
		for x := f.lo; x < f.lo+f.n; x++ {
			s := (x - f.lo) * o.bs
			o.putLocked(x, f.data[s:min(int64(len(f.data)), s+o.bs)])
		}
	}
	o.mu.Unlock()
	close(f.done)
}

// direct reads whole blocks lo..lo+n-1 into p, bypassing the cache but
// not the checks.
func (o *Object) direct(ctx context.Context, p []byte, lo, n int64) error {
	done := make(chan error, 1)
	go func() { done <- o.fill(o.ctx, p, lo) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Prefetch starts one request for the n bytes from off (cut at the
// object's end), which serve the reads inside them until Close if keep,
// else until one from off takes them: what opening a pack does once it
// knows where its index starts.
func (o *Object) Prefetch(off, n int64, keep bool) {
	if off <= 0 || off >= o.size || n <= 0 {
		return
	}
	n = min(n, o.size-off)
	sp := &span{off: off, n: n, once: !keep, done: make(chan struct{})}
	o.mu.Lock()
	if h := o.head; h != nil && off+n <= h.off+h.n {
		// The open's response holds it already (a small object comes
		// whole with it).
		o.mu.Unlock()
		return
	}
	o.spans = append(o.spans, sp)
	o.mu.Unlock()
	go func() {
		buf := make([]byte, n)
		sp.err = o.b.retry(o.ctx, func(actx context.Context) error { return o.get(actx, buf, off) })
		if sp.err == nil {
			sp.data = buf
		} else {
			o.drop(sp)
		}
		close(sp.done)
	}()
}

// Seed serves the reads that lie inside data, the bytes at off, from
// data, which the caller vouches for as this object's (they came with
// its metadata, under its ETag); the pack's own checks still apply.
func (o *Object) Seed(off int64, data []byte) {
	if off < 0 || off+int64(len(data)) > o.size || len(data) == 0 {
		return
	}
	done := make(chan struct{})
	close(done)
	o.mu.Lock()
	o.spans = append(o.spans, &span{off: off, n: int64(len(data)), done: done, data: data})
	o.mu.Unlock()
}

func (o *Object) drop(sp *span) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, s := range o.spans {
		if s == sp {
			o.spans = append(o.spans[:i:i], o.spans[i+1:]...)
			return
		}
	}
}

// fromSpan serves [off, off+len(p)) from the head or a span that holds
// it, reporting whether it did.
func (o *Object) fromSpan(ctx context.Context, p []byte, off int64) (bool, error) {
	o.mu.Lock()
	var sp *span
	end := off + int64(len(p))
	if h := o.head; h != nil && end <= h.n {
		sp = h
	} else {
		for _, s := range o.spans {
			if off >= s.off && end <= s.off+s.n {
				sp = s
				break
			}
		}
	}
	o.mu.Unlock()
	if sp == nil {
		return false, nil
	}
	select {
	case <-sp.done:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	if sp.err != nil || sp.data == nil {
		return false, nil // failed: the blocks' way tries again
	}
	copy(p, sp.data[off-sp.off:])
	if sp.once && off == sp.off {
		o.drop(sp)
	}
	return true, nil
}

// fetch gets blocks lo..lo+n-1 in one request (retried) and checks them.
func (o *Object) fetch(ctx context.Context, lo, n int64) ([]byte, error) {
	start := lo * o.bs
	end := min(o.size, (lo+n)*o.bs)
	buf := make([]byte, end-start)
	if err := o.fill(ctx, buf, lo); err != nil {
		return nil, err
	}
	return buf, nil
}

// fill reads the blocks from lo on into p, which ends at a block's end
// or the object's: those the disk cache holds at either end of the run
// from there, the rest in one request (retried), all of them checked.
func (o *Object) fill(ctx context.Context, p []byte, lo int64) error {
	n := (int64(len(p)) + o.bs - 1) / o.bs
	blk := func(b int64) []byte { // block b's bytes in p
		s := (b - lo) * o.bs
		return p[s:min(int64(len(p)), s+o.bs)]
	}
	a, z := lo, lo+n // the blocks [a, z) come from the network
	if d := o.b.disk; d != nil {
		for a < z && d.get(o.id, a, blk(a)) {
			a++
		}
		for z > a && d.get(o.id, z-1, blk(z-1)) {
			z--
		}
		// Blocks from the disk must agree with what this object read
		// before; one that does not is fetched again with the rest.
		if a > lo && o.check(p[:min(int64(len(p)), (a-lo)*o.bs)], lo) != nil {
			a = lo
		}
		if z < lo+n && o.check(p[(z-lo)*o.bs:], z) != nil {
			z = lo + n
		}
	}
	if a == z {
		return nil
	}
	run := p[(a-lo)*o.bs : min(int64(len(p)), (z-lo)*o.bs)]
	err := o.b.retry(ctx, func(actx context.Context) error {
		if err := o.get(actx, run, a*o.bs); err != nil {
			return err
		}
		return o.check(run, a)
	})
	if err != nil {
		return err
	}
	if d := o.b.disk; d != nil {
		d.putRun(o.id, a, o.bs, run)
	}
	return nil
}

// check compares each block of p (blocks from lo on) with its CRC-32C at
// its first fetch, and records it for those fetched the first time. The
// ETag has not moved (get checked it), so a difference is damage in
// transit: errDamaged, which is retried.
func (o *Object) check(p []byte, lo int64) error {
	sums := make([]uint32, 0, (int64(len(p))+o.bs-1)/o.bs)
	for i := int64(0); i*o.bs < int64(len(p)); i++ {
		sums = append(sums, crc32.Checksum(p[i*o.bs:min(int64(len(p)), (i+1)*o.bs)], castagnoli))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, sum := range sums {
		b := lo + int64(i)
		if old, ok := o.sums[b]; ok && old != sum {
			return fmt.Errorf("%w: block %d (offset %d) differs from its first read", errDamaged, b, b*o.bs)
		}
	}
	for i, sum := range sums {
		o.sums[lo+int64(i)] = sum
	}
	return nil
}

// errDamaged: a block read again differs from its first read, under the
// same ETag.
var errDamaged = fmt.Errorf("%w: a block read again differs", ErrChanged)

// get is one attempt: a ranged GET of len(p) bytes at off, under If-Match.
func (o *Object) get(ctx context.Context, p []byte, off int64) error {
	var opts minio.GetObjectOptions
	if err := opts.SetMatchETag(o.etag); err != nil {
		return err
	}
	if err := opts.SetRange(off, off+int64(len(p))-1); err != nil {
		return err
	}
	o.b.requests.Add(1)
	o.b.gets.Add(1)
	body, info, hdr, err := o.b.core.GetObject(ctx, o.b.name, o.key, opts)
	if err != nil {
		return err
	}
	defer body.Close()
	if trimETag(info.ETag) != o.etag {
		return fmt.Errorf("%w: ETag %s, opened as %s", ErrChanged, info.ETag, o.etag)
	}
	if size, err := totalSize(hdr, info.Size); err != nil {
		return err
	} else if size != o.size {
		return fmt.Errorf("%w: size %d, opened as %d", ErrChanged, size, o.size)
	}
	if cr := hdr.Get("Content-Range"); cr != "" {
		want := fmt.Sprintf("bytes %d-%d/%d", off, off+int64(len(p))-1, o.size)
		if cr != want {
			return fmt.Errorf("%w: Content-Range %q, asked for %q", errShort, cr, want)
		}
	} else if off != 0 || int64(len(p)) != o.size {
		return fmt.Errorf("%w: the server ignored the range", errShort)
	}
	if info.Size != int64(len(p)) {
		return fmt.Errorf("%w: %d bytes for a range of %d", errShort, info.Size, len(p))
	}
	n, err := io.ReadFull(progress(ctx, body), p)
	o.b.bytes.Add(int64(n))
	return err
}

// putLocked caches block b; o.mu is held.
func (o *Object) putLocked(b int64, data []byte) {
	if e, ok := o.cache[b]; ok {
		o.lru.MoveToFront(e)
		return
	}
	o.cache[b] = o.lru.PushFront(&block{n: b, data: data})
	o.cached += int64(len(data))
	for o.cached > o.cap {
		e := o.lru.Back()
		bl := e.Value.(*block)
		o.lru.Remove(e)
		delete(o.cache, bl.n)
		o.cached -= int64(len(bl.data))
	}
}

func errorsIsChanged(err error) bool { return errors.Is(err, ErrChanged) }

func trimETag(s string) string { return strings.Trim(s, `"`) }

func isStatus(err error, code int) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && er.StatusCode == code
}
