package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Errors the package's errors wrap, beside fs.ErrNotExist (a missing
// bucket or object) and fs.ErrPermission (403).
var (
	// ErrChanged: the object is no longer the one opened (its ETag
	// moved, or a block read again differs from its first read).
	ErrChanged = errors.New("remote: object changed")
	// ErrTransient: a request kept failing in a way that may pass
	// (a 5xx, a dropped or cut connection, an attempt's timeout) after
	// every retry.
	ErrTransient = errors.New("remote: transient failure")
	// ErrConflict: a conditional write lost against another writer.
	ErrConflict = errors.New("remote: conditional write failed")
	// ErrBadURL: a bucket URL this package cannot use.
	ErrBadURL = errors.New("remote: bad bucket URL")
)

// Options tune a Bucket. The zero value (or nil) gives the defaults.
type Options struct {
	// Transport carries the requests; nil means a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// BlockSize is the unit of the block cache and of ranged reads.
	// 0 means 64 KiB.
	BlockSize int
	// CacheBytes bounds each open object's block cache. 0 means
	// 32 MiB; it is at least four blocks.
	CacheBytes int64
	// ReadAhead is the largest window a sequential reader gets fetched
	// ahead of it, doubling from one block, and at most an eighth of
	// CacheBytes. 0 means 8 MiB; negative turns read-ahead off.
	ReadAhead int64
	// RequestTimeout cuts off an attempt that makes no progress for
	// that long: no response, or no body bytes for that long. 0 means
	// 30 s.
	RequestTimeout time.Duration
	// Retries is how many times a transient failure is retried. 0
	// means 4; negative means none.
	Retries int
	// Backoff is the first wait before a retry, doubled at each one
	// (with jitter). 0 means 50 ms.
	Backoff time.Duration
	// CacheDir, if set, keeps fetched blocks in that local directory as
	// well, for later opens of the same object by this process or
	// another one (created with mode 0700 if missing; see the package
	// doc). It is bounded by CacheDirBytes: 0 means 1 GiB.
	CacheDir      string
	CacheDirBytes int64
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.BlockSize <= 0 {
		r.BlockSize = 64 << 10
	}
	if r.CacheBytes <= 0 {
		r.CacheBytes = 32 << 20
	}
	r.CacheBytes = max(r.CacheBytes, 4*int64(r.BlockSize))
	if r.ReadAhead == 0 {
		r.ReadAhead = 8 << 20
	}
	if r.RequestTimeout <= 0 {
		r.RequestTimeout = 30 * time.Second
	}
	if r.Retries == 0 {
		r.Retries = 4
	} else if r.Retries < 0 {
		r.Retries = 0
	}
	if r.Backoff <= 0 {
		r.Backoff = 50 * time.Millisecond
	}
	if r.CacheDirBytes <= 0 {
		r.CacheDirBytes = 1 << 30
	}
	return r
}

// Stats counts what a Bucket sent and received: every attempt of every
// request, and the bytes of the bodies read from GET responses.
type Stats struct {
	Requests int64 // attempts of every kind
	Gets     int64 // GET attempts
	Bytes    int64 // body bytes received from GETs
	Puts     int64 // PUT attempts (a multipart upload counts once)
}

// Bucket is an S3-compatible bucket. It is safe for concurrent use.
type Bucket struct {
	core *minio.Core
	name string
	opts Options
	disk *diskCache // nil without Options.CacheDir

	requests, gets, bytes, puts atomic.Int64
}

// NewBucket returns the bucket name reached through client.
func NewBucket(client *minio.Client, name string, opts *Options) *Bucket {
	b := &Bucket{core: &minio.Core{Client: client}, name: name, opts: opts.withDefaults()}
	if b.opts.CacheDir != "" {
		b.disk = newDiskCache(b.opts.CacheDir, b.opts.CacheDirBytes)
	}
	return b
}

// SyncCache waits until the blocks fetched so far are written to
// Options.CacheDir (which happens in the background, and not at all for
// a fetch that finds four runs being written already).
func (b *Bucket) SyncCache() {
	if b.disk != nil {
		b.disk.pending.Wait()
	}
}

// Name returns the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Stats returns the counts so far.
func (b *Bucket) Stats() Stats {
	return Stats{Requests: b.requests.Load(), Gets: b.gets.Load(), Bytes: b.bytes.Load(), Puts: b.puts.Load()}
}

// URL is a parsed bucket URL: s3://BUCKET/KEY?endpoint=…&region=….
type URL struct {
	Bucket string
	Key    string // without a leading slash; may be empty or a prefix
	// Endpoint is host[:port]; Secure says https.
	Endpoint string
	Secure   bool
	Region   string
	// Credentials, from the query or the AWS_* environment.
	AccessKey, SecretKey, SessionToken string
	// PathStyle asks for path-style requests (bucket in the path), as
	// most S3-compatible servers other than AWS want; it is the default
	// for an endpoint other than AWS's.
	PathStyle bool
	// CacheDir is Options.CacheDir, from the query's cache_dir or
	// PACKFS_CACHE_DIR; Open uses it unless its options set one.
	CacheDir string
}

// IsURL reports whether s names a bucket object (an s3:// URL).
func IsURL(s string) bool { return strings.HasPrefix(s, "s3://") }

// ParseURL parses an s3:// URL. The query may set endpoint (a URL such
// as http://127.0.0.1:9000, or host:port, then https), region,
// access_key_id, secret_access_key, session_token, path_style
// (true or false) and cache_dir (Options.CacheDir, a local directory
// that keeps fetched blocks). What the query leaves out comes from the
// environment: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION or
// AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN, and PACKFS_CACHE_DIR. Without an endpoint it is
// AWS's.
func ParseURL(raw string) (*URL, error) {
	bad := func(why string) (*URL, error) {
		return nil, fmt.Errorf("%w: %q: %s", ErrBadURL, raw, why)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad(err.Error())
	}
	if u.Scheme != "s3" {
		return bad("scheme is not s3")
	}
	if u.Host == "" {
		return bad("no bucket")
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "access_key_id", "secret_access_key", "session_token", "path_style", "cache_dir":
		default:
			return bad("unknown query parameter " + k)
		}
	}
	get := func(key string, env ...string) string {
		if v := q.Get(key); v != "" {
			return v
		}
		for _, e := range env {
			if v := os.Getenv(e); v != "" {
				return v
			}
		}
		return ""
	}
	r := &URL{
		Bucket:       u.Host,
		Key:          strings.TrimPrefix(u.Path, "/"),
		Region:       get("region", "AWS_REGION", "AWS_DEFAULT_REGION"),
		AccessKey:    get("access_key_id", "AWS_ACCESS_KEY_ID"),
		SecretKey:    get("secret_access_key", "AWS_SECRET_ACCESS_KEY"),
		SessionToken: get("session_token", "AWS_SESSION_TOKEN"),
		CacheDir:     get("cache_dir", "PACKFS_CACHE_DIR"),
	}
	ep := get("endpoint", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	switch {
	case ep == "":
		r.Endpoint, r.Secure = "s3.amazonaws.com", true
	case strings.Contains(ep, "://"):
		e, err := url.Parse(ep)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || (e.Path != "" && e.Path != "/") {
			return bad("endpoint must be http[s]://host[:port]")
		}
		r.Endpoint, r.Secure = e.Host, e.Scheme == "https"
	default:
		r.Endpoint, r.Secure = ep, true
	}
	r.PathStyle = !strings.HasSuffix(r.Endpoint, "amazonaws.com")
	if r.Region == "" && r.PathStyle {
		// Spares the bucket-location request the client makes without
		// one; S3-compatible servers take any region, mostly this.
		r.Region = "us-east-1"
	}
	switch q.Get("path_style") {
	case "":
	case "true":
		r.PathStyle = true
	case "false":
		r.PathStyle = false
	default:
		return bad("path_style must be true or false")
	}
	return r, nil
}

// Open connects to the bucket the URL names. It makes no request.
func (u *URL) Open(opts *Options) (*Bucket, error) {
	o := opts.withDefaults()
	if o.CacheDir == "" {
		o.CacheDir = u.CacheDir
	}
	tr := o.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	var creds *credentials.Credentials
	if u.AccessKey != "" || u.SecretKey != "" {
		creds = credentials.NewStaticV4(u.AccessKey, u.SecretKey, u.SessionToken)
	} else {
		creds = credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	lookup := minio.BucketLookupDNS
	if u.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(u.Endpoint, &minio.Options{
		Creds:        creds,
		Secure:       u.Secure,
		Region:       u.Region,
		Transport:    tr,
		BucketLookup: lookup,
		MaxRetries:   1, // retries are ours: see Options
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	return NewBucket(c, u.Bucket, &o), nil
}

// OpenURL parses raw and opens its bucket; it returns the key too.
func OpenURL(raw string, opts *Options) (*Bucket, string, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return nil, "", err
	}
	b, err := u.Open(opts)
	if err != nil {
		return nil, "", err
	}
	return b, u.Key, nil
}

// classify turns a client error into one of the package's: permanent
// ones wrap fs sentinels or ErrChanged, others are transient (retry).
func classify(err error) (error, bool) {
	if err == nil {
		return nil, false
	}
	if errors.Is(err, context.Canceled) {
		return err, false
	}
	if errors.Is(err, errPartial) {
		return err, false
	}
	if errors.Is(err, errDamaged) {
		return err, true
	}
	if errors.Is(err, ErrChanged) || errors.Is(err, ErrConflict) {
		return err, false
	}
	var er minio.ErrorResponse
	if errors.As(err, &er) {
		switch {
		case er.StatusCode == 0:
			return err, false // refused by the client itself (a bad name)
		case er.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%w (%s)", errNotExist, er.Code), false
		case er.StatusCode == http.StatusForbidden || er.StatusCode == http.StatusUnauthorized:
			return fmt.Errorf("%w (%s: %s)", errPermission, er.Code, er.Message), false
		case er.StatusCode == http.StatusPreconditionFailed:
			return fmt.Errorf("%w (%s)", ErrChanged, er.Code), false
		case er.StatusCode == http.StatusRequestedRangeNotSatisfiable:
			return fmt.Errorf("%w (range not satisfiable: %s)", ErrChanged, er.Code), false
		case er.StatusCode == http.StatusTooManyRequests || er.StatusCode >= 500 || er.StatusCode == http.StatusRequestTimeout:
			return err, true
		default:
			return err, false
		}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errShort) {
		return err, true
	}
	// Anything else from the transport (a reset connection, a malformed
	// response): worth another attempt.
	return err, true
}

// retry runs attempt until it succeeds, fails for good, or ctx ends.
// An attempt is cut off when it makes no progress for RequestTimeout:
// until its response starts, or between reads of its body (see
// progress), so that a large transfer is not bounded by a small
// timeout, and a stalled one does not hang.
func (b *Bucket) retry(ctx context.Context, attempt func(ctx context.Context) error) error {
	wait := b.opts.Backoff
	var last error
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			if last != nil {
				return fmt.Errorf("%w (last failure: %v)", err, last)
			}
			return err
		}
		actx, cancel := context.WithCancel(ctx)
		w := &watchdog{d: b.opts.RequestTimeout}
		w.t = time.AfterFunc(w.d, func() { w.fired.Store(true); cancel() })
		err := attempt(context.WithValue(actx, watchdogKey{}, w))
		w.t.Stop()
		timedOut := w.fired.Load() && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		perm, transient := classify(err)
		if timedOut {
			transient = true
			err = fmt.Errorf("no progress for %v: %w", b.opts.RequestTimeout, err)
		}
		if !transient {
			return perm
		}
		last = err
		if i >= b.opts.Retries {
			return fmt.Errorf("%w after %d attempts: %v", ErrTransient, i+1, last)
		}
		d := wait/2 + time.Duration(jitter.Add(0x9e3779b97f4a7c15)%uint64(wait))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last failure: %v)", ctx.Err(), last)
		case <-t.C:
		}
		wait *= 2
	}
}

// watchdog cuts an attempt off after d without progress.
type watchdog struct {
	d     time.Duration
	t     *time.Timer
	fired atomic.Bool
}

type watchdogKey struct{}

// progress wraps r so that each read that returns bytes restarts the
// attempt's watchdog.
func progress(ctx context.Context, r io.Reader) io.Reader {
	w, _ := ctx.Value(watchdogKey{}).(*watchdog)
	if w == nil {
		return r
	}
	return &progressReader{r: r, w: w}
}

type progressReader struct {
	r io.Reader
	w *watchdog
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.w.t.Reset(p.w.d)
	}
	return n, err
}

var jitter atomic.Uint64

var errShort = errors.New("remote: short response body")
