package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/remote"
	"github.com/packfs/packfs/remote/remotetest"
)

const bucketName = "packs"

func newServer(t testing.TB) *remotetest.Server {
	t.Helper()
	s, err := remotetest.NewServer(bucketName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
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

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func fsName(d, f int) string { return fmt.Sprintf("d%04d/f%05d", d%4, f) }
