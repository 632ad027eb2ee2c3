package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/remote"
)

// weedBinary finds SeaweedFS's weed: $PACKFS_WEED, or weed on $PATH.
func weedBinary() (string, error) {
	if p := os.Getenv("PACKFS_WEED"); p != "" {
		return p, nil
	}
	return exec.LookPath("weed")
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestSeaweedFS runs the pack round trip against a standalone S3 server,
// SeaweedFS (`weed server -s3`), started here on loopback: upload, open
// in two requests, read, verify, a replaced object refused. It skips,
// saying why, where no weed binary is installed (.ci/run builds one from
// the module proxy and sets PACKFS_WEED).
func TestSeaweedFS(t *testing.T) {
	weed, err := weedBinary()
	if err != nil {
		t.Skip("SeaweedFS's weed is not installed (set PACKFS_WEED or put weed on PATH; .ci/run builds it with PACKFS_WEED_BUILD=1): ", err)
	}
	dir := t.TempDir()
	s3port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, weed, "server", "-s3", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir="+dir,
		"-master.port="+strconv.Itoa(freePort(t)), "-volume.port="+strconv.Itoa(freePort(t)),
		"-filer.port="+strconv.Itoa(freePort(t)), "-s3.port="+strconv.Itoa(s3port), "-volume.max=4")
	logf, err := os.Create(filepath.Join(dir, "weed.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Skip("weed does not start: ", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "weed.log"))
			t.Logf("weed's log:\n%s", b)
		}
	})
	endpoint := fmt.Sprintf("127.0.0.1:%d", s3port)
	mc, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4("k", "s", ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	// The servers take a few seconds to elect a master and start.
	deadline := time.Now().Add(90 * time.Second)
	for {
		mctx, mcancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = mc.MakeBucket(mctx, "packs", minio.MakeBucketOptions{})
		mcancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("weed's S3 gateway did not come up: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// A small cache, so that reads after the replacement need requests.
	b := bucketAt(t, "http://"+endpoint, &remote.Options{BlockSize: 4096, CacheBytes: 16 << 10})
	path := writePack(t, bigTree(t, 10, 200, 700).Snapshot())
	// Volumes may take a moment to be writable after the bucket exists.
	for {
		_, err := b.UploadPack(context.Background(), "w.pack", path, nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	local, err := packreader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	s0 := b.Stats()
	p, err := b.OpenPack(context.Background(), "w.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n := b.Stats().Gets - s0.Gets; n > 2 {
		t.Errorf("open: %d requests, want ≤ 2", n)
	}
	for _, name := range []string{"d0000/f00000", "d0009/f00199", "d0005/f00100"} {
		want, _ := local.ReadFile(name)
		got, err := p.ReadFile(name)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
	// Replace the object: reads that need a request give ErrChanged.
	other := writePack(t, bigTree(t, 10, 200, 701).Snapshot())
	if _, err := b.UploadPack(context.Background(), "w.pack", other, nil); err != nil {
		t.Fatal(err)
	}
	p2, err := b.OpenPack(context.Background(), "w.pack")
	if err != nil {
		t.Fatal(err)
	}
	p2.Close()
	if _, err := p.ReadFile("d0007/f00150"); !errors.Is(err, remote.ErrChanged) {
		t.Fatalf("read after replace: %v, want ErrChanged", err)
	}

	// A conditional write: If-None-Match on an existing key.
	_, err = b.Put(context.Background(), "w.pack", bytes.NewReader([]byte("x")), 1, &remote.PutOptions{IfNoneMatch: true})
	if errors.Is(err, remote.ErrConflict) {
		t.Log("SeaweedFS refuses a conditional write over an existing object: two writers cannot both win")
	} else {
		t.Logf("SeaweedFS ignored If-None-Match (%v): two writers could both win there", err)
	}

	// A store publishing to it, and a replica following.
	s := publishedStore(t, b, "st")
	if err := layer.WriteFile(s, "f", bytes.Repeat([]byte("seaweed "), 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	r, err := b.OpenReplica(context.Background(), "st", &remote.ReplicaOptions{Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.ReadFile("f"); err != nil || !bytes.Equal(got, bytes.Repeat([]byte("seaweed "), 10000)) {
		t.Fatalf("replica: %v", err)
	}
	if err := layer.WriteFile(s, "g", []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := r.WaitGeneration(wctx, 2); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadFile("g"); err != nil || string(got) != "2" {
		t.Fatalf("replica after a checkpoint: %q, %v", got, err)
	}
}
