package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/remote"
)

// TestIssue18HostileObjects: objects that are not packs, or are empty (a
// range of which S3 refuses with 416), or
// carry a lying index offset, give clear errors or right bytes.
func TestIssue18HostileObjects(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096})
	putRaw(t, b, "empty", nil)
	putRaw(t, b, "junk", []byte("not a pack at all, not even close to one, no......"))
	for _, key := range []string{"empty", "junk"} {
		_, err := b.OpenPack(context.Background(), key)
		var pe *fs.PathError
		if !errors.Is(err, packreader.ErrCorrupt) || !errors.As(err, &pe) {
			t.Errorf("OpenPack(%s): %v, want a PathError wrapping packreader.ErrCorrupt", key, err)
		}
	}
	if _, err := b.OpenPack(context.Background(), ""); err == nil {
		t.Error("OpenPack of the empty key succeeded")
	}
	// An object of size 0 reads as empty.
	o, err := b.OpenObject(context.Background(), "empty")
	if err != nil {
		t.Fatal(err)
	}
	if o.Size() != 0 {
		t.Errorf("size %d", o.Size())
	}
	o.Close()

	// A lying index offset in the metadata costs requests, not bytes.
	path := writePack(t, bigTree(t, 3, 30, 100).Snapshot())
	data, _ := os.ReadFile(path)
	for _, lie := range []string{"1", "-5", "999999999999", "x", "64"} {
		if _, err := b.Put(context.Background(), "lie", bytesReader(data), int64(len(data)),
			&remote.PutOptions{Metadata: map[string]string{"Packfs-Index-Offset": lie}}); err != nil {
			t.Fatal(err)
		}
		p, err := b.OpenPack(context.Background(), "lie")
		if err != nil {
			t.Fatalf("offset %s: %v", lie, err)
		}
		if err := p.Verify(); err != nil {
			t.Errorf("offset %s: %v", lie, err)
		}
		p.Close()
	}
}

// TestProbeCloseWhileReading: Close beside readers gives errors, never
// a panic or a race.
func TestProbeCloseWhileReading(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096, CacheBytes: 16 << 10})
	path := writePack(t, bigTree(t, 4, 50, 3000).Snapshot())
	upload(t, b, "c.pack", path)
	for range 5 {
		p, err := b.OpenPack(context.Background(), "c.pack")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					p.ReadFile(fsName(g, i))
				}
			}()
		}
		time.Sleep(time.Millisecond)
		p.Close()
		wg.Wait()
		if _, err := p.ReadFile(fsName(0, 0)); !errors.Is(err, fs.ErrClosed) {
			t.Fatalf("read after Close: %v", err)
		}
	}
}

// TestProbeContextEndsOpen: a cancelled context ends an open at once,
// and a context cancelled after the open ends the pack's reads.
func TestProbeContextEndsOpen(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096})
	upload(t, b, "c.pack", writePack(t, bigTree(t, 2, 20, 3000).Snapshot()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.OpenPack(ctx, "c.pack"); !errors.Is(err, context.Canceled) {
		t.Fatalf("open under a cancelled context: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	p, err := b.OpenPack(ctx, "c.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cancel()
	// What the open fetched, and what its prefetch of the tables brought
	// before the cancel (it runs beside the open, so that varies), still
	// reads; a read that needs a request fails. The 40 files of 3,000
	// bytes lie far beyond what either fetched.
	failed := 0
	for d := range 2 {
		for f := range 20 {
			name := fmt.Sprintf("d%04d/f%05d", d, f)
			got, err := p.ReadFile(name)
			switch {
			case errors.Is(err, context.Canceled):
				failed++
			case err != nil:
				t.Fatalf("read of %s after the open's context ended: %v, want context.Canceled", name, err)
			case !bytes.HasPrefix(got, []byte(name+";")):
				t.Fatalf("read of %s after the open's context ended: wrong bytes", name)
			}
		}
	}
	if failed == 0 {
		t.Fatal("every read after the open's context ended succeeded")
	}
	t.Logf("%d of 40 reads failed", failed)
}
