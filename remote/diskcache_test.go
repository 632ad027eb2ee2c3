package remote_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/packfs/packfs/remote"
)

// readAll reads o in chunks of chunk bytes and compares them with want.
func readAll(t *testing.T, o *remote.Object, want []byte, chunk int) {
	t.Helper()
	p := make([]byte, chunk)
	for off := 0; off < len(want); off += chunk {
		n, err := o.ReadAt(p, int64(off))
		if err != nil && err != io.EOF {
			t.Fatalf("ReadAt %d: %v", off, err)
		}
		if !bytes.Equal(p[:n], want[off:min(len(want), off+chunk)]) {
			t.Fatalf("ReadAt %d: wrong bytes", off)
		}
	}
}

// warmCache reads all of key through buckets with opts's cache directory
// until a read of it asks for nothing: the cache writes blocks in the
// background and drops a run when its writers are all busy (a loaded
// machine), so that one read may leave blocks out.
func warmCache(t *testing.T, url string, opts *remote.Options, key string, want []byte) {
	t.Helper()
	if passes := readUntilCached(t, url, opts, key, want); passes < 0 {
		t.Fatalf("%s: 20 reads through the cache directory, and each still made requests", key)
	}
}

// readUntilCached reads all of key through a new bucket at a time, up to
// 20 times, and returns how many reads made requests before one made
// none, or -1.
func readUntilCached(t *testing.T, url string, opts *remote.Options, key string, want []byte) int {
	t.Helper()
	for pass := range 20 {
		b := bucketAt(t, url, opts)
		o, err := b.OpenObject(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		s0 := b.Stats()
		readAll(t, o, want, 64<<10)
		b.SyncCache()
		o.Close()
		if b.Stats().Gets == s0.Gets {
			return pass
		}
	}
	return -1
}

// cacheFiles lists the block files under dir.
func cacheFiles(t *testing.T, dir string) (names []string, total int64) {
	t.Helper()
	filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, _ := d.Info()
			names = append(names, name)
			total += fi.Size()
		}
		return nil
	})
	return names, total
}

// TestDiskCacheSecondOpen: an object read once through a cache
// directory is read again, by a new Bucket (as by another process),
// with no request beyond the open's.
func TestDiskCacheSecondOpen(t *testing.T) {
	srv := newServer(t)
	opts := &remote.Options{CacheDir: filepath.Join(t.TempDir(), "cache"), ReadAhead: -1}
	data := blob(1<<20 + 123)
	putRaw(t, bucketAt(t, srv.URL, nil), "blob", data)
	warmCache(t, srv.URL, opts, "blob", data)
	b := bucketAt(t, srv.URL, opts)
	o, err := b.OpenObject(context.Background(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	s0 := b.Stats()
	readAll(t, o, data, 10000)
	if n := b.Stats().Gets - s0.Gets; n != 0 {
		t.Errorf("reading an object the cache directory holds: %d requests, want 0", n)
	}
}

// TestDiskCacheDamage: block files that are flipped, cut, grown,
// replaced by a directory or a symlink give a request each and the
// right bytes, and are rewritten.
func TestDiskCacheDamage(t *testing.T) {
	srv := newServer(t)
	dir := filepath.Join(t.TempDir(), "cache")
	opts := &remote.Options{CacheDir: dir, ReadAhead: -1}
	data := blob(16 << 16)
	putRaw(t, bucketAt(t, srv.URL, nil), "blob", data)
	warmCache(t, srv.URL, opts, "blob", data)
	files, _ := cacheFiles(t, dir)
	if len(files) != 16 {
		t.Fatalf("%d block files, want 16", len(files))
	}
	obj := filepath.Dir(files[0])
	block := func(n string) string { return filepath.Join(obj, n) }
	flip, _ := os.ReadFile(block("1"))
	flip[100] ^= 1
	must(t, os.WriteFile(block("1"), flip, 0o600))
	must(t, os.Truncate(block("3"), 1000))
	grown, _ := os.ReadFile(block("5"))
	must(t, os.WriteFile(block("5"), append(grown, 0), 0o600))
	must(t, os.Remove(block("7")))
	must(t, os.Mkdir(block("7"), 0o700))
	must(t, os.Remove(block("9")))
	foreign := filepath.Join(t.TempDir(), "foreign")
	must(t, os.WriteFile(foreign, bytes.Repeat([]byte{1}, 64<<10+4), 0o600))
	must(t, os.Symlink(foreign, block("9")))
	sum, _ := os.ReadFile(block("11")) // right length, wrong CRC
	sum[len(sum)-1] ^= 0xff
	must(t, os.WriteFile(block("11"), sum, 0o600))
	other, _ := os.ReadFile(block("13")) // a sound block under another's name
	must(t, os.WriteFile(block("14"), other, 0o600))

	b := bucketAt(t, srv.URL, opts)
	o, err := b.OpenObject(context.Background(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	s0 := b.Stats()
	readAll(t, o, data, 64<<10)
	if n := b.Stats().Gets - s0.Gets; n != 7 {
		t.Errorf("seven damaged blocks: %d requests, want 7", n)
	}
	b.SyncCache()
	o.Close()
	if fi, err := os.Lstat(block("9")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the symlink in the cache was not replaced: %v", err)
	}
	if got, _ := os.ReadFile(foreign); !bytes.Equal(got, bytes.Repeat([]byte{1}, 64<<10+4)) {
		t.Error("the file a cache symlink named was changed")
	}
	// The repairs, but for runs dropped while the writers were busy,
	// are on disk: reading again ends with a read that asks for nothing.
	if passes := readUntilCached(t, srv.URL, opts, "blob", data); passes < 0 {
		t.Error("after the repair: every read still made requests")
	}
}

// TestDiskCacheSymlinkedObject: an object's directory that is a symlink
// out of the cache directory is neither read nor written through.
func TestDiskCacheSymlinkedObject(t *testing.T) {
	srv := newServer(t)
	dir := filepath.Join(t.TempDir(), "cache")
	opts := &remote.Options{CacheDir: dir, ReadAhead: -1}
	data := blob(4 << 16)
	putRaw(t, bucketAt(t, srv.URL, nil), "blob", data)
	warmCache(t, srv.URL, opts, "blob", data)
	files, _ := cacheFiles(t, dir)
	obj := filepath.Dir(files[0])
	outside := t.TempDir()
	must(t, os.Rename(obj, filepath.Join(outside, "moved")))
	must(t, os.Symlink(filepath.Join(outside, "moved"), obj))
	b := bucketAt(t, srv.URL, opts)
	o, err := b.OpenObject(context.Background(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	s0 := b.Stats()
	readAll(t, o, data, 64<<10)
	b.SyncCache()
	if n := b.Stats().Gets - s0.Gets; n != 4 {
		t.Errorf("blocks behind a symlinked directory: %d requests, want 4 (not read through it)", n)
	}
	if ents, _ := os.ReadDir(filepath.Join(outside, "moved")); len(ents) != 4 {
		t.Errorf("the directory outside holds %d files, want its 4: written through the symlink", len(ents))
	}
}

// TestDiskCacheReplacedObject: blocks of an object's old ETag are not
// read for the new object under the same key.
func TestDiskCacheReplacedObject(t *testing.T) {
	srv := newServer(t)
	opts := &remote.Options{CacheDir: filepath.Join(t.TempDir(), "cache"), ReadAhead: -1}
	old := blob(300 << 10)
	direct := bucketAt(t, srv.URL, nil)
	putRaw(t, direct, "blob", old)
	warmCache(t, srv.URL, opts, "blob", old)
	fresh := bytes.Repeat([]byte("new bytes "), 30<<10)
	putRaw(t, direct, "blob", fresh)
	b := bucketAt(t, srv.URL, opts)
	o, err := b.OpenObject(context.Background(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	defer b.SyncCache()
	readAll(t, o, fresh, 64<<10)
}

// TestDiskCacheBound: the directory holds at most 1.125 times its bound
// and a block.
func TestDiskCacheBound(t *testing.T) {
	srv := newServer(t)
	dir := filepath.Join(t.TempDir(), "cache")
	const bound = 256 << 10
	opts := &remote.Options{CacheDir: dir, CacheDirBytes: bound, BlockSize: 16 << 10, ReadAhead: -1}
	data := blob(4 << 20)
	putRaw(t, bucketAt(t, srv.URL, nil), "blob", data)
	b := bucketAt(t, srv.URL, opts)
	o, err := b.OpenObject(context.Background(), "blob")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	p := make([]byte, 16<<10)
	for off := 0; off < len(data); off += len(p) {
		if _, err := o.ReadAt(p, int64(off)); err != nil {
			t.Fatal(err)
		}
		b.SyncCache()
		if _, total := cacheFiles(t, dir); total > bound+bound/8+16<<10+4 {
			t.Fatalf("after %d bytes read the directory holds %d bytes, bound %d", off+len(p), total, bound)
		}
	}
	if files, _ := cacheFiles(t, dir); len(files) == 0 {
		t.Error("nothing was cached")
	}
}

// TestDiskCacheUnwritable: a cache directory that cannot be made costs
// nothing but the cache.
func TestDiskCacheUnwritable(t *testing.T) {
	srv := newServer(t)
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, []byte("x"), 0o600))
	data := blob(200 << 10)
	putRaw(t, bucketAt(t, srv.URL, nil), "blob", data)
	for _, dir := range []string{file, filepath.Join(file, "sub")} {
		if passes := readUntilCached(t, srv.URL, &remote.Options{CacheDir: dir}, "blob", data); passes >= 0 {
			t.Errorf("%s: a read asked for nothing: something was cached", dir)
		}
	}
	if got, _ := os.ReadFile(file); string(got) != "x" {
		t.Errorf("the file named as the cache directory now holds %q", got)
	}
}

// TestDiskCacheConcurrent: readers of two buckets sharing a directory,
// at random offsets, with a small memory cache and the directory's
// bound forcing removals, all get the right bytes.
func TestDiskCacheConcurrent(t *testing.T) {
	srv := newServer(t)
	opts := &remote.Options{CacheDir: filepath.Join(t.TempDir(), "cache"), CacheDirBytes: 512 << 10,
		BlockSize: 8 << 10, CacheBytes: 64 << 10}
	data := blob(2 << 20)
	putRaw(t, bucketAt(t, srv.URL, nil), "blob", data)
	var wg sync.WaitGroup
	for i := range 2 {
		b := bucketAt(t, srv.URL, opts)
		o, err := b.OpenObject(context.Background(), "blob")
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		for g := range 4 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(i), uint64(g)))
				for range 60 {
					off := r.IntN(len(data))
					p := make([]byte, 1+r.IntN(40<<10))
					n, err := o.ReadAt(p, int64(off))
					if err != nil && err != io.EOF {
						t.Error(err)
						return
					}
					if !bytes.Equal(p[:n], data[off:off+n]) {
						t.Errorf("wrong bytes at %d", off)
						return
					}
				}
			})
		}
		defer b.SyncCache()
	}
	wg.Wait()
}

// TestDiskCacheURL: cache_dir in a bucket URL sets the cache directory.
func TestDiskCacheURL(t *testing.T) {
	u, err := remote.ParseURL("s3://b/k?endpoint=http://127.0.0.1:1&cache_dir=/var/cache/x")
	if err != nil || u.CacheDir != "/var/cache/x" {
		t.Fatalf("ParseURL: %+v, %v", u, err)
	}
	t.Setenv("PACKFS_CACHE_DIR", "/from/env")
	if u, err := remote.ParseURL("s3://b/k?endpoint=http://127.0.0.1:1"); err != nil || u.CacheDir != "/from/env" {
		t.Fatalf("ParseURL with PACKFS_CACHE_DIR: %+v, %v", u, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
