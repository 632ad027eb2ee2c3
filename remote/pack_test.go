package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/remote"
)

func TestConformanceReadOnly(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096, CacheBytes: 64 << 10})
	n := 0
	conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
		n++
		key := fmt.Sprintf("tree-%d.pack", n)
		upload(t, b, key, treePack(t, tree))
		p, err := b.OpenPack(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	})
}

// bigTree builds a tree of dirs directories of files files each, each
// file's content distinct and size bytes long.
func bigTree(t testing.TB, dirs, files, size int) *mem.FS {
	t.Helper()
	m := mem.New()
	for d := range dirs {
		dn := fmt.Sprintf("d%04d", d)
		if err := m.Mkdir(dn, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			body := bytes.Repeat([]byte(fmt.Sprintf("%s/f%05d;", dn, f)), size/13+1)[:size]
			if err := layer.WriteFile(m, fmt.Sprintf("%s/f%05d", dn, f), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m
}

// TestCounts counts requests and bytes: open of a pack of many entries
// (two requests and 8 KiB: the tables are fetched on first touch), a cold
// walk against the index's bytes, one small file, a warm read.
// settled returns b's counts once they have not changed for 50 ms (for
// at most 2 s): the requests of read-aheads in flight made.
func settled(b *remote.Bucket) remote.Stats {
	s := b.Stats()
	for range 40 {
		time.Sleep(50 * time.Millisecond)
		n := b.Stats()
		if n == s {
			break
		}
		s = n
	}
	return s
}

func TestCounts(t *testing.T) {
	dirs, files := 80, 500 // 40,000 entries: tables over 4 MiB, read on first touch
	if !testsize.Short() {
		dirs, files = 200, 5000 // 1,000,000 entries
		if raceEnabled {
			dirs = 40
		}
	}
	srv := newServer(t)
	b := bucketAt(t, srv.URL, nil)
	m := bigTree(t, dirs, files, 40)
	path := writePack(t, m.Snapshot())
	upload(t, b, "big.pack", path)
	local, err := packreader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	fi, _ := os.Stat(path)
	metaBytes := fi.Size() - indexOff(t, path)

	s0 := b.Stats()
	p, err := b.OpenPack(context.Background(), "big.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s1 := b.Stats()
	t.Logf("open of %d entries: %d requests, %d bytes (index to end: %d bytes)", dirs*files+dirs+1, s1.Gets-s0.Gets, s1.Bytes-s0.Bytes, metaBytes)
	if got := s1.Gets - s0.Gets; got > 2 {
		t.Errorf("open: %d requests, want ≤ 2", got)
	}
	if got := s1.Bytes - s0.Bytes; got > 16<<10 {
		t.Errorf("open: %d bytes, want ≤ 16 KiB", got)
	}

	// A cold walk: names, types and infos of every entry.
	entries := 0
	err = fs.WalkDir(p, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if _, err := d.Info(); err != nil {
			return err
		}
		entries++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A read-ahead the walk started may make its request after the walk
	// returns: let it, so that it is counted here and not below.
	s2 := settled(b)
	walked := s2.Bytes - s0.Bytes
	t.Logf("cold walk of %d entries: %d requests, %d bytes from open on, %.3fx the index's", entries, s2.Gets-s0.Gets, walked, float64(walked)/float64(metaBytes))
	if float64(walked) > 1.1*float64(metaBytes) {
		t.Errorf("cold walk moved %d bytes, want ≤ 1.1 × %d", walked, metaBytes)
	}

	// One small file: one request.
	want, _ := local.ReadFile("d0007/f00123")
	got, err := p.ReadFile("d0007/f00123")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFile: %q, %v; want %q", got, err, want)
	}
	s3 := b.Stats()
	if n := s3.Gets - s2.Gets; n != 1 {
		t.Errorf("small file read: %d requests, want 1", n)
	}
	// Warm: none.
	for range 3 {
		if got, err := p.ReadFile("d0007/f00123"); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("warm ReadFile: %q, %v", got, err)
		}
		if _, err := p.Stat("d0007/f00123"); err != nil {
			t.Fatal(err)
		}
	}
	if n := b.Stats().Gets - s3.Gets; n != 0 {
		t.Errorf("warm reads: %d requests, want 0", n)
	}
}

func indexOff(t testing.TB, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	// IndexOff leads the footer: 64 bytes in version 2, 128 in version 3.
	hdr := make([]byte, 12)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	footSize := int64(64)
	if hdr[8] == 3 {
		footSize = 128
	}
	foot := make([]byte, 8)
	if _, err := f.ReadAt(foot, fi.Size()-footSize); err != nil {
		t.Fatal(err)
	}
	var off int64
	for i := 7; i >= 0; i-- {
		off = off<<8 | int64(foot[i])
	}
	return off
}

// TestOpenForeign opens a pack stored without the upload's metadata (as
// any other tool would put it): three requests at most, same bytes.
func TestOpenForeign(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096})
	path := writePack(t, bigTree(t, 4, 100, 100).Snapshot())
	data, _ := os.ReadFile(path)
	putRaw(t, b, "plain.pack", data)
	s0 := b.Stats()
	p, err := b.OpenPack(context.Background(), "plain.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n := b.Stats().Gets - s0.Gets; n > 3 {
		t.Errorf("open: %d requests, want ≤ 3", n)
	}
	got, err := p.ReadFile("d0002/f00050")
	if err != nil || !strings.HasPrefix(string(got), "d0002/f00050;") {
		t.Fatalf("ReadFile: %q, %v", got, err)
	}
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
}

// TestPermanentErrors: a missing object or bucket is fs.ErrNotExist,
// quickly (no retries); a replaced object is ErrChanged.
func TestPermanentErrors(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, &remote.Options{BlockSize: 4096, CacheBytes: 16 << 10})
	s0 := b.Stats()
	_, err := b.OpenPack(context.Background(), "missing.pack")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing object: %v, want fs.ErrNotExist", err)
	}
	if n := b.Stats().Gets - s0.Gets; n != 1 {
		t.Errorf("missing object: %d requests, want 1 (not retried)", n)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "s3://packs/missing.pack" {
		t.Errorf("error %#v is not a PathError naming the object", err)
	}
	path := writePack(t, bigTree(t, 4, 50, 3000).Snapshot())
	upload(t, b, "a.pack", path)
	p, err := b.OpenPack(context.Background(), "a.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.ReadFile("d0000/f00000"); err != nil {
		t.Fatal(err)
	}
	// Replace the object: every read that needs a request fails.
	other := writePack(t, bigTree(t, 4, 50, 3001).Snapshot())
	upload(t, b, "a.pack", other)
	_, err = p.ReadFile("d0003/f00049")
	if !errors.Is(err, remote.ErrChanged) {
		t.Fatalf("read after replace: %v, want ErrChanged", err)
	}
	// Removed: also an error, never bytes.
	if _, err := srv.Backend.DeleteObject(bucketName, "a.pack"); err != nil {
		t.Fatal(err)
	}
	if _, err = p.ReadFile("d0002/f00049"); err == nil {
		t.Fatal("read after delete succeeded")
	}
}

// TestReadAtContext: a cancelled context ends a read at once.
func TestReadAtContext(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, nil)
	putRaw(t, b, "blob", bytes.Repeat([]byte("x"), 1<<20))
	o, err := b.OpenObject(context.Background(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	buf := make([]byte, 100)
	if _, err := o.ReadAtContext(ctx, buf, 500000); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	if n, err := o.ReadAt(buf, 500000); n != 100 || err != nil {
		t.Fatalf("read: %d, %v", n, err)
	}
	if n, err := o.ReadAt(buf, 1<<20-50); n != 50 || err != io.EOF {
		t.Fatalf("read at end: %d, %v", n, err)
	}
	o.Close()
	if _, err := o.ReadAt(buf, 0); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}
