package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/packfs/packfs/conformance"
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
	// The servers take a few seconds to elect a master and start.
	standaloneChecks(t, "SeaweedFS", fmt.Sprintf("127.0.0.1:%d", s3port), "k", "s")
}

// versityBinary finds the Versity S3 Gateway: $PACKFS_VERSITYGW, or
// versitygw on $PATH.
func versityBinary() (string, error) {
	if p := os.Getenv("PACKFS_VERSITYGW"); p != "" {
		return p, nil
	}
	return exec.LookPath("versitygw")
}

// TestVersityGW runs the same checks as TestSeaweedFS against the Versity
// S3 Gateway over a directory (`versitygw posix DIR`), started here on
// loopback. .ci/run installs it from the module proxy (go install
// github.com/versity/versitygw/cmd/versitygw) and sets PACKFS_VERSITYGW;
// elsewhere the test skips, saying why, where it is not installed.
func TestVersityGW(t *testing.T) {
	gw, err := versityBinary()
	if err != nil {
		t.Skip("the Versity S3 Gateway is not installed (set PACKFS_VERSITYGW or put versitygw on PATH; .ci/run installs it): ", err)
	}
	dir := t.TempDir()
	root, meta := filepath.Join(dir, "root"), filepath.Join(dir, "meta")
	for _, d := range []string{root, meta} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	// The sidecar keeps object metadata in files, where the temporary
	// directory's file system may have no user xattrs.
	cmd := exec.CommandContext(ctx, gw, "--access", "packfs", "--secret", "packfs-secret",
		"--port", fmt.Sprintf("127.0.0.1:%d", port), "--quiet", "posix", "--sidecar", meta, root)
	logf, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Skip("versitygw does not start: ", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "versitygw.log"))
			t.Logf("versitygw's log:\n%s", b)
		}
	})
	standaloneChecks(t, "the Versity S3 Gateway", fmt.Sprintf("127.0.0.1:%d", port), "packfs", "packfs-secret")
}

// standaloneChecks makes the bucket on the S3 server at endpoint (which
// may take a while to come up) and runs the checks against it: upload,
// open in two requests, reads, verify, a replaced object refused, a
// conditional write, a replica following a store publishing there, and
// the conformance suite's read-only tests over packs there.
func standaloneChecks(t *testing.T, server, endpoint, access, secret string) {
	mc, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		mctx, mcancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = mc.MakeBucket(mctx, "packs", minio.MakeBucketOptions{})
		mcancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's S3 server did not come up: %v", server, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A small cache, so that reads after the replacement need requests.
	b, _, err := remote.OpenURL("s3://"+bucketName+"/?endpoint=http://"+endpoint+"&region=us-east-1&access_key_id="+access+"&secret_access_key="+secret,
		&remote.Options{BlockSize: 4096, CacheBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
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
		t.Logf("%s refuses a conditional write over an existing object: two writers cannot both win", server)
	} else {
		t.Logf("%s ignored If-None-Match (%v): two writers could both win there", server, err)
	}

	// A store publishing to it, and a replica following.
	s := publishedStore(t, b, "st")
	if err := layer.WriteFile(s, "f", bytes.Repeat([]byte("standalone "), 10000), 0o644); err != nil {
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
	if got, err := r.ReadFile("f"); err != nil || !bytes.Equal(got, bytes.Repeat([]byte("standalone "), 10000)) {
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
		t.Fatalf("the replica did not move to generation 2: %v (serving %d; last poll: %v)", err, r.Generation(), r.Err())
	}
	if got, err := r.ReadFile("g"); err != nil || string(got) != "2" {
		t.Fatalf("replica after a checkpoint: %q, %v", got, err)
	}

	// The read-only suite over packs there, read through a cache
	// directory as well.
	cached, _, err := remote.OpenURL("s3://"+bucketName+"/?endpoint=http://"+endpoint+"&region=us-east-1&access_key_id="+access+"&secret_access_key="+secret,
		&remote.Options{BlockSize: 4096, CacheBytes: 64 << 10, CacheDir: filepath.Join(t.TempDir(), "cache")})
	if err != nil {
		t.Fatal(err)
	}
	defer cached.SyncCache()
	var quick []conformance.Option
	if raceEnabled {
		// The full trees go over gofakes3 (TestConformanceReadOnly);
		// under the race detector they took minutes here.
		quick = append(quick, conformance.WithQuickTrees())
	}
	n := 0
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		n++
		key := fmt.Sprintf("tree-%d.pack", n)
		upload(t, cached, key, treePack(t, tree))
		p, err := cached.OpenPack(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}, quick...)
}
