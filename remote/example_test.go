package remote_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/remote"
	"github.com/packfs/packfs/remote/remotetest"
)

// A pack uploaded to a bucket and read back lazily. The open costs two
// requests, or one for a pack as small as this, which comes whole with
// the first.
func ExampleBucket_OpenPack() {
	srv, _ := remotetest.NewServer("site") // an S3 server on loopback
	defer srv.Close()
	b, key, err := remote.OpenURL("s3://site/v1.pack?endpoint="+srv.URL+"&access_key_id=k&secret_access_key=s", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	m := mem.New()
	layer.WriteFile(m, "index.html", []byte("<h1>hello</h1>\n"), 0o644)
	packwriter.WriteFile(filepath.Join(dir, "v1.pack"), m.Snapshot())
	if _, err := b.UploadPack(context.Background(), key, filepath.Join(dir, "v1.pack"), nil); err != nil {
		fmt.Println(err)
		return
	}

	before := b.Stats().Gets
	p, err := b.OpenPack(context.Background(), key)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	data, _ := p.ReadFile("index.html")
	fmt.Printf("%s%d requests\n", data, b.Stats().Gets-before)
	// Output:
	// <h1>hello</h1>
	// 1 requests
}

// A store publishes its checkpoints to a bucket; a replica, opened from
// the bucket alone, follows them.
func ExampleBucket_OpenReplica() {
	srv, _ := remotetest.NewServer("stores")
	defer srv.Close()
	b, _, _ := remote.OpenURL("s3://stores/?endpoint="+srv.URL+"&access_key_id=k&secret_access_key=s", nil)
	pub, _ := b.NewPublisher(context.Background(), "app")
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	s, _ := packfs.Open(dir, &packfs.Options{Publisher: pub})
	defer s.Close()
	layer.WriteFile(s, "config", []byte("v1"), 0o644)
	s.Checkpoint()

	r, err := b.OpenReplica(context.Background(), "app", &remote.ReplicaOptions{Poll: 10 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	data, _ := r.ReadFile("config")
	fmt.Printf("generation %d: config = %s\n", r.Generation(), data)

	layer.WriteFile(s, "config", []byte("v2"), 0o644)
	s.Checkpoint()
	r.WaitGeneration(context.Background(), 2)
	data, _ = r.ReadFile("config")
	fmt.Printf("generation %d: config = %s\n", r.Generation(), data)
	// Output:
	// generation 1: config = v1
	// generation 2: config = v2
}
