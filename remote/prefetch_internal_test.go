package remote

import (
	"bytes"
	"context"
	"testing"

	"github.com/packfs/packfs/remote/remotetest"
)

// TestPrefetchInsideHead: a prefetch of bytes the open's response already
// holds (a small object comes whole with it) starts no request.
func TestPrefetchInsideHead(t *testing.T) {
	srv, err := remotetest.NewServer("site")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	b, key, err := OpenURL("s3://site/small?endpoint="+srv.URL+"&access_key_id=k&secret_access_key=s", nil)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 46)
	if _, err := b.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	o, err := b.OpenObject(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	o.Prefetch(80, int64(len(data))-80, true)
	o.Prefetch(0, 100, false)
	o.mu.Lock()
	n := len(o.spans)
	o.mu.Unlock()
	if n != 0 {
		t.Errorf("prefetches inside the open's response started %d requests, want 0", n)
	}
	p := make([]byte, len(data)-80)
	if _, err := o.ReadAt(p, 80); err != nil || !bytes.Equal(p, data[80:]) {
		t.Fatalf("ReadAt(80) = %v", err)
	}
}
