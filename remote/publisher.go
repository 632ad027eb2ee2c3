package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/packfs/packfs"
)

// A store in a bucket lives under a prefix P: its packs are objects
// P/packs/WRITER/NAME, where WRITER is random per Publisher (so that two
// writers never overwrite each other's packs), and P/MANIFEST names the
// packs of the latest checkpoint. The manifest is JSON:
//
//	{"version":1,"generation":7,"root":1764582000000000000,"mode":2147484141,
//	 "packs":[{"key":"packs/…/pack-…07.pack","size":4096,"etag":"…"}, …]}
//
// with packs top first. It is written only after every pack it names
// is uploaded whole, with If-Match on the ETag of the manifest this
// writer last saw (If-None-Match: * for the first), so of two writers
// only one wins each generation.
const manifestKey = "MANIFEST"

type remoteManifest struct {
	Version    int          `json:"version"`
	Generation uint64       `json:"generation"`
	Root       int64        `json:"root"`
	Mode       uint32       `json:"mode"`
	Packs      []remotePack `json:"packs"`
}

type remotePack struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
}

// Publisher publishes a store's checkpoints to a bucket: set it as
// packfs.Options.Publisher. It is safe for one store's use.
type Publisher struct {
	b      *Bucket
	ctx    context.Context
	prefix string
	writer string

	mu       sync.Mutex
	etag     string                // the manifest's ETag as this writer last saw it; "" none
	uploaded map[string]remotePack // store pack name → its object
}

// NewPublisher returns a Publisher for the store under prefix. It reads
// the manifest's current ETag, if there is one: the first publish
// replaces only that manifest. ctx bounds every request.
func (b *Bucket) NewPublisher(ctx context.Context, prefix string) (*Publisher, error) {
	var id [8]byte
	rand.Read(id[:])
	p := &Publisher{b: b, ctx: ctx, prefix: prefix, writer: hex.EncodeToString(id[:]), uploaded: map[string]remotePack{}}
	_, etag, err := b.getSmall(ctx, p.key(manifestKey))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		p.etag = etag
	}
	return p, nil
}

func (p *Publisher) key(name string) string { return path.Join(p.prefix, name) }

// PublishCheckpoint uploads the packs of c not yet uploaded, then writes
// the manifest conditionally. A write that lost to another writer fails
// with ErrConflict.
func (p *Publisher) PublishCheckpoint(c *packfs.Checkpoint) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := remoteManifest{Version: 1, Generation: c.Generation, Root: c.RootTime.UnixNano(), Mode: uint32(c.RootMode)}
	for _, cp := range c.Packs {
		rp, ok := p.uploaded[cp.Name]
		if !ok {
			var err error
			if rp, err = p.upload(cp); err != nil {
				return err
			}
			p.uploaded[cp.Name] = rp
		}
		m.Packs = append(m.Packs, rp)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	po := &PutOptions{IfMatch: p.etag, IfNoneMatch: p.etag == ""}
	etag, err := p.b.Put(p.ctx, p.key(manifestKey), bytes.NewReader(data), int64(len(data)), po)
	if errors.Is(err, ErrConflict) {
		// A retried write whose first attempt went through lost against
		// itself: the manifest is ours if it holds our bytes.
		if now, netag, gerr := p.b.getSmall(p.ctx, p.key(manifestKey)); gerr == nil && bytes.Equal(now, data) {
			etag, err = netag, nil
		}
	}
	if err != nil {
		return err
	}
	p.etag = etag
	// Forget packs no longer named: the bucket keeps them for replicas
	// that still read them.
	keep := map[string]remotePack{}
	for _, cp := range c.Packs {
		keep[cp.Name] = p.uploaded[cp.Name]
	}
	p.uploaded = keep
	return nil
}

func (p *Publisher) upload(cp packfs.CheckpointPack) (remotePack, error) {
	f, err := cp.Open()
	if err != nil {
		return remotePack{}, err
	}
	defer f.Close()
	key := p.key(path.Join("packs", p.writer, cp.Name))
	etag, err := p.b.UploadPackFrom(p.ctx, key, f, cp.Size, nil)
	if err != nil {
		return remotePack{}, err
	}
	return remotePack{Key: key, Size: cp.Size, ETag: etag}, nil
}

// maxManifest bounds the manifest read: a store of 100,000 packs.
const maxManifest = 16 << 20

// getSmall reads a whole small object and its ETag.
func (b *Bucket) getSmall(ctx context.Context, key string) ([]byte, string, error) {
	var data []byte
	var etag string
	err := b.retry(ctx, func(ctx context.Context) error {
		b.requests.Add(1)
		b.gets.Add(1)
		body, info, _, err := b.core.GetObject(ctx, b.name, key, minio.GetObjectOptions{})
		if err != nil {
			return err
		}
		defer body.Close()
		if info.Size > maxManifest {
			return fmt.Errorf("%w: manifest of %d bytes", fs.ErrInvalid, info.Size)
		}
		d, err := io.ReadAll(io.LimitReader(progress(ctx, body), maxManifest+1))
		b.bytes.Add(int64(len(d)))
		if err != nil {
			return err
		}
		if int64(len(d)) != info.Size {
			return fmt.Errorf("%w: %d bytes of %d", errShort, len(d), info.Size)
		}
		data, etag = d, trimETag(info.ETag)
		return nil
	})
	if err != nil {
		return nil, "", &fs.PathError{Op: "get", Path: b.path(key), Err: err}
	}
	return data, etag, nil
}

var _ packfs.Publisher = (*Publisher)(nil)
