package remote_test

import (
	"bytes"
	"context"
	"io/fs"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/remote"
)

// server is a gofakes3 server on loopback, with one bucket.
type server struct {
	url     string // http://127.0.0.1:port
	backend *s3mem.Backend
}

const bucketName = "packs"

func newServer(t testing.TB) *server {
	t.Helper()
	be := s3mem.New()
	faker := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog()))
	ts := httptest.NewServer(faker.Server())
	t.Cleanup(ts.Close)
	if err := be.CreateBucket(bucketName); err != nil {
		t.Fatal(err)
	}
	return &server{url: ts.URL, backend: be}
}

// bucket opens the server's bucket through endpoint (the server's URL or
// a proxy's), with opts.
func bucketAt(t testing.TB, endpoint string, opts *remote.Options) *remote.Bucket {
	t.Helper()
	b, _, err := remote.OpenURL("s3://"+bucketName+"/?endpoint="+endpoint+"&region=us-east-1&access_key_id=test&secret_access_key=test", opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writePack packs fsys into a file under a temporary directory.
func writePack(t testing.TB, fsys fs.FS) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "tree.pack")
	if err := packwriter.WriteFile(name, fsys); err != nil {
		t.Fatal(err)
	}
	return name
}

// treePack packs a conformance tree.
func treePack(t testing.TB, tree conformance.Tree) string {
	t.Helper()
	m := mem.New()
	if err := conformance.Populate(m, tree); err != nil {
		t.Fatal(err)
	}
	return writePack(t, m.Snapshot())
}

func upload(t testing.TB, b *remote.Bucket, key, path string) {
	t.Helper()
	if _, err := b.UploadPack(context.Background(), key, path, nil); err != nil {
		t.Fatal(err)
	}
}

// putRaw stores data at key as a plain object, without the pack
// metadata an upload records.
func putRaw(t testing.TB, b *remote.Bucket, key string, data []byte) {
	t.Helper()
	if _, err := b.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
}
