package remote

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"github.com/minio/minio-go/v7"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packreader"
)

// Pack is a pack in a bucket, served as an fs.FS by packreader over an
// Object. Its methods are the Reader's; Close closes both.
type Pack struct {
	*packreader.Reader
	obj *Object
}

// wholeTables is the size of the tables (index to end) up to which an
// open fetches them whole, in its second request: below it, latency
// costs more than bytes. With 20 ms a request, fetching the Go source
// tree's 1.6 MB of tables on first touch made a walk 16 requests and
// 308 ms, and reading one file 8 requests and 171 ms; fetched whole at
// open, 2 requests and 3.
const wholeTables = 4 << 20

// OpenPack opens the pack at key. It costs two requests when the pack
// was uploaded by this package (UploadPack, or packfs pack DIR s3://…):
// the first 4 KiB, which carry the header, the size, the ETag, and in
// the object's metadata the index's offset, the footer and the root
// block's check-table entry; and the root block, 4 KiB at the index's
// offset (all the tables if they are at most 4 MiB). One if the pack
// fits in 4 KiB; three or four for a pack
// uploaded otherwise. The pack's tables are then fetched on first
// touch, 64 KiB of a table at a time (see packreader.OpenReaderAt).
// ctx bounds every read of the pack until Close.
func (b *Bucket) OpenPack(ctx context.Context, key string) (*Pack, error) {
	o, err := b.OpenObject(ctx, key)
	if err != nil {
		return nil, err
	}
	if v, ok := o.meta[metaOpenKey]; ok {
		o.seedOpen(v)
	}
	if v, ok := o.meta[metaIndexKey]; ok {
		if off, err := strconv.ParseInt(v, 10, 64); err == nil {
			if o.size-off <= wholeTables {
				o.Prefetch(off, o.size-off, true)
			} else {
				o.Prefetch(off, packformat.BlockSize, false)
			}
		}
	}
	r, err := packreader.OpenReaderAt(o, o.size)
	if err != nil {
		o.Close()
		if pe, ok := err.(*fs.PathError); ok {
			return nil, pe
		}
		return nil, &fs.PathError{Op: "open", Path: b.path(key), Err: err}
	}
	return &Pack{Reader: r, obj: o}, nil
}

// Object returns the object the pack is read from.
func (p *Pack) Object() *Object { return p.obj }

// Close closes the reader, then the object.
func (p *Pack) Close() error {
	err := p.Reader.Close()
	p.obj.Close()
	return err
}

// PutOptions are for UploadPack and Put.
type PutOptions struct {
	// IfNoneMatch makes the write fail with ErrConflict if the key
	// exists; IfMatch, unless it holds exactly that ETag. Servers that
	// do not support conditional writes ignore them.
	IfNoneMatch bool
	IfMatch     string
	// Metadata is stored with the object (x-amz-meta-*).
	Metadata map[string]string
}

// multipartMin is the size from which minio-go uploads in parts.
const multipartMin = 16 << 20

// Put uploads size bytes from r to key, in one request or as a multipart
// upload (which the service makes visible only once complete, so no
// reader ever sees part of it). It returns the new ETag.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64, po *PutOptions) (string, error) {
	var opts minio.PutObjectOptions
	if po != nil {
		if po.IfNoneMatch {
			opts.SetMatchETagExcept("*")
		}
		if po.IfMatch != "" {
			opts.SetMatchETag(po.IfMatch)
		}
		opts.UserMetadata = po.Metadata
	}
	opts.DisableContentSha256 = true
	// A reader that can seek back is retried here; others are sent once.
	rs, canRetry := r.(io.ReadSeeker)
	var etag string
	attempt := func(ctx context.Context) error {
		b.requests.Add(1)
		b.puts.Add(1)
		if canRetry {
			if _, err := rs.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
		info, err := b.core.Client.PutObject(ctx, b.name, key, progress(ctx, r), size, opts)
		if err != nil {
			return err
		}
		etag = trimETag(info.ETag)
		if size >= multipartMin {
			// A multipart upload's ETag is the service's own reckoning,
			// which not every service reports alike on completion and on
			// reads: take the one reads will see.
			b.requests.Add(1)
			st, err := b.core.Client.StatObject(ctx, b.name, key, minio.StatObjectOptions{})
			if err != nil {
				return err
			}
			etag = trimETag(st.ETag)
		}
		return nil
	}
	var err error
	if canRetry {
		err = b.retry(ctx, attempt)
	} else {
		err = attempt(ctx)
		if err != nil {
			err, _ = classify(err)
		}
	}
	if err != nil {
		if isPrecondition(err) {
			err = fmt.Errorf("%w: %v", ErrConflict, err)
		}
		return "", &fs.PathError{Op: "put", Path: b.path(key), Err: err}
	}
	return etag, nil
}

func isPrecondition(err error) bool {
	var er minio.ErrorResponse
	for e := err; e != nil; {
		if x, ok := e.(minio.ErrorResponse); ok {
			er = x
			break
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return er.StatusCode == 412 || er.Code == "PreconditionFailed" || errorsIsChanged(err)
}

// UploadPack uploads the pack file at path to key, recording where its
// index starts so that OpenPack costs two requests. It checks the
// pack's header and footer first, and nothing is left at key on
// failure.
func (b *Bucket) UploadPack(ctx context.Context, key, path string, po *PutOptions) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	return b.UploadPackFrom(ctx, key, f, fi.Size(), po)
}

// UploadPackFrom is UploadPack from a ReaderAt of size bytes.
func (b *Bucket) UploadPackFrom(ctx context.Context, key string, ra io.ReaderAt, size int64, po *PutOptions) (string, error) {
	off, open, err := openHint(ra, size)
	if err != nil {
		return "", &fs.PathError{Op: "put", Path: b.path(key), Err: err}
	}
	var o PutOptions
	if po != nil {
		o = *po
	}
	md := map[string]string{}
	for k, v := range o.Metadata {
		md[k] = v
	}
	md[metaIndexKey] = strconv.FormatInt(off, 10)
	md[metaOpenKey] = open
	o.Metadata = md
	return b.Put(ctx, key, io.NewSectionReader(ra, 0, size), size, &o)
}

// metaOpenKey is the user metadata an upload records the pack's footer
// and its check table's first entry in (base64, one after the other),
// so that opening reads neither from the object: with the header in
// the first request and the root block in the second, an open costs
// two requests whatever the pack's size.
const metaOpenKey = "Packfs-Open"

// openHint opens the pack to check it and returns its index's offset
// and the value of metaOpenKey.
func openHint(ra io.ReaderAt, size int64) (int64, string, error) {
	r, err := packreader.OpenReaderAt(ra, size)
	if err != nil {
		return 0, "", err
	}
	r.Close()
	t, ok, err := packformat.ReadTail(ra, size)
	if err != nil {
		return 0, "", err
	}
	if !ok {
		return 0, "", fmt.Errorf("%w: bad layout", packreader.ErrCorrupt)
	}
	buf := make([]byte, t.FooterSize+packformat.CRCSize)
	if _, err := ra.ReadAt(buf[:t.FooterSize], size-int64(t.FooterSize)); err != nil {
		return 0, "", err
	}
	if _, err := ra.ReadAt(buf[t.FooterSize:], int64(t.TableOff)); err != nil {
		return 0, "", err
	}
	return int64(t.Footer.IndexOff), base64.StdEncoding.EncodeToString(buf), nil
}

// seedOpen seeds the object with the footer and check-table entry an
// upload recorded in v (see metaOpenKey), if they fit its header.
func (o *Object) seedOpen(v string) {
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil || o.head == nil || len(o.head.data) < packformat.HeaderSize {
		return
	}
	hdr := o.head.data[:packformat.HeaderSize]
	fsz := packformat.FooterSizeOf(hdr)
	if fsz == 0 || uint64(len(raw)) != fsz+packformat.CRCSize {
		return
	}
	t, ok := packformat.DecodeTail(hdr, raw[:fsz], o.size)
	if !ok {
		return
	}
	o.Seed(o.size-int64(fsz), raw[:fsz])
	o.Seed(int64(t.TableOff), raw[fsz:])
}

// Download writes the whole object key to w in one GET. An attempt that
// fails before anything is written is retried; one that fails after is
// not, since w cannot take the bytes back.
func (b *Bucket) Download(ctx context.Context, key string, w io.Writer) (int64, error) {
	var n int64
	err := b.retry(ctx, func(ctx context.Context) error {
		b.requests.Add(1)
		b.gets.Add(1)
		body, info, _, err := b.core.GetObject(ctx, b.name, key, minio.GetObjectOptions{})
		if err != nil {
			return err
		}
		defer body.Close()
		m, err := io.Copy(w, progress(ctx, body))
		n += m
		b.bytes.Add(m)
		if err == nil && m != info.Size {
			err = fmt.Errorf("%w: %d bytes of %d", errShort, m, info.Size)
		}
		if err != nil && m > 0 {
			return fmt.Errorf("%w (after %d bytes: not retried)", errPartial, m)
		}
		return err
	})
	if err != nil {
		return n, &fs.PathError{Op: "get", Path: b.path(key), Err: err}
	}
	return n, nil
}

var errPartial = errors.New("remote: download cut short")
