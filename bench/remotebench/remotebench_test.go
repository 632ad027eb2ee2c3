package remotebench

import (
	"context"
	"flag"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/remote"
	"github.com/packfs/packfs/remote/remotetest"
)

var latency = flag.Duration("remotebench.latency", 20*time.Millisecond, "latency the proxy adds to every request")

const (
	bucket = "bench"
	key    = "gosrc.pack"
	// small is a small file of the Go tree read by ReadOne.
	small = "fmt/doc.go"
)

type fixture struct {
	srv      *remotetest.Server
	px       *remotetest.Proxy
	dir      string
	packSize int64
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  error
)

func getFixture(b *testing.B) *fixture {
	fixOnce.Do(func() { fixErr = build() })
	if fixErr != nil {
		b.Fatal(fixErr)
	}
	fix.px.SetLatency(*latency)
	return &fix
}

func build() error {
	dir, err := os.MkdirTemp("", "remotebench-")
	if err != nil {
		return err
	}
	fix.dir = dir
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "gosrc.pack")
	if err := packwriter.WriteFile(path, os.DirFS(filepath.Join(strings.TrimSpace(string(goroot)), "src"))); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	fix.packSize = fi.Size()
	if fix.srv, err = remotetest.NewServer(bucket); err != nil {
		return err
	}
	direct, err := openBucket(fix.srv.URL)
	if err != nil {
		return err
	}
	if _, err := direct.UploadPack(context.Background(), key, path, nil); err != nil {
		return err
	}
	fix.px = remotetest.NewProxy(fix.srv.URL)
	return nil
}

func openBucket(endpoint string) (*remote.Bucket, error) {
	return openBucketOpts(endpoint, nil)
}

func openBucketOpts(endpoint string, opts *remote.Options) (*remote.Bucket, error) {
	b, _, err := remote.OpenURL("s3://"+bucket+"/?endpoint="+endpoint+"&region=us-east-1&access_key_id=k&secret_access_key=s", opts)
	return b, err
}

// work is what an iteration does with the open pack.
type work func(fsys fs.FS) error

func walk(read bool) work {
	return func(fsys fs.FS) error {
		return fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if read && fi.Mode().IsRegular() {
				f, err := fsys.Open(name)
				if err != nil {
					return err
				}
				_, err = io.Copy(io.Discard, f)
				f.Close()
				return err
			}
			return nil
		})
	}
}

func readOne(fsys fs.FS) error {
	_, err := fs.ReadFile(fsys, small)
	return err
}

func runRemote(b *testing.B, w work) { runRemoteOpts(b, w, nil) }

// runDiskCache is runRemote with a cache directory that an iteration
// before the timer filled: each iteration is a new Bucket, as a new
// process would be, finding the blocks on disk.
func runDiskCache(b *testing.B, w work) {
	f := getFixture(b)
	opts := &remote.Options{CacheDir: filepath.Join(f.dir, "cache")}
	bk, err := openBucketOpts(f.px.URL, opts)
	if err != nil {
		b.Fatal(err)
	}
	p, err := bk.OpenPack(context.Background(), key)
	if err != nil {
		b.Fatal(err)
	}
	if err := w(p); err != nil {
		b.Fatal(err)
	}
	p.Close()
	bk.SyncCache()
	runRemoteOpts(b, w, opts)
}

func runRemoteOpts(b *testing.B, w work, opts *remote.Options) {
	f := getFixture(b)
	var reqs, bytes int64
	b.ResetTimer()
	for range b.N {
		bk, err := openBucketOpts(f.px.URL, opts)
		if err != nil {
			b.Fatal(err)
		}
		p, err := bk.OpenPack(context.Background(), key)
		if err != nil {
			b.Fatal(err)
		}
		if err := w(p); err != nil {
			b.Fatal(err)
		}
		p.Close()
		bk.SyncCache()
		st := bk.Stats()
		reqs += st.Gets
		bytes += st.Bytes
	}
	b.ReportMetric(float64(reqs)/float64(b.N), "req/op")
	b.ReportMetric(float64(bytes)/float64(b.N)/1e6, "MB/op")
}

func runDownload(b *testing.B, w work) {
	f := getFixture(b)
	var reqs, bytes int64
	b.ResetTimer()
	for range b.N {
		bk, err := openBucket(f.px.URL)
		if err != nil {
			b.Fatal(err)
		}
		tmp := filepath.Join(f.dir, "download.pack")
		out, err := os.Create(tmp)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bk.Download(context.Background(), key, out); err != nil {
			b.Fatal(err)
		}
		if err := out.Close(); err != nil {
			b.Fatal(err)
		}
		r, err := packreader.Open(tmp)
		if err != nil {
			b.Fatal(err)
		}
		if err := w(r); err != nil {
			b.Fatal(err)
		}
		r.Close()
		st := bk.Stats()
		reqs += st.Gets
		bytes += st.Bytes
	}
	b.ReportMetric(float64(reqs)/float64(b.N), "req/op")
	b.ReportMetric(float64(bytes)/float64(b.N)/1e6, "MB/op")
}

func BenchmarkGoSrc(b *testing.B) {
	for _, c := range []struct {
		name string
		w    work
	}{{"Walk", walk(false)}, {"WalkRead", walk(true)}, {"ReadOne", readOne}} {
		b.Run(c.name+"/remote", func(b *testing.B) { runRemote(b, c.w) })
		b.Run(c.name+"/remote-diskcache", func(b *testing.B) { runDiskCache(b, c.w) })
		b.Run(c.name+"/download", func(b *testing.B) { runDownload(b, c.w) })
	}
}
