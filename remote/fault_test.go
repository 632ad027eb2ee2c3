package remote_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"testing"
	"time"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/remote"
	"github.com/packfs/packfs/remote/remotetest"
)

var faultSeeds = flag.Int("remote.faultseeds", 0, "seeds of TestFaults (0: 2, or 12 with PACKFS_LONG=1, 6 under -race)")

// TestFaults reads a pack through a proxy that delays, drops, cuts,
// corrupts and refuses responses: every open, stat, listing and read
// gives the right answer or an error, and none outlives its deadline by
// more than its last attempt.
func TestFaults(t *testing.T) {
	seeds := 2
	if !testsize.Short() {
		seeds = 12
		if raceEnabled {
			seeds = 6
		}
	}
	if *faultSeeds > 0 {
		seeds = *faultSeeds
	}
	srv := newServer(t)
	direct := bucketAt(t, srv.URL, nil)
	path := writePack(t, bigTree(t, 6, 40, 9000).Snapshot())
	upload(t, direct, "f.pack", path)
	local, err := packreader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() }) // after the parallel seeds
	var names []string
	fs.WalkDir(local, ".", func(name string, d fs.DirEntry, err error) error {
		names = append(names, name)
		return err
	})
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			// Most of a seed's time is spent waiting out injected delays
			// and timeouts, so the seeds wait side by side; not under the
			// race detector, whose slowdown would turn more of the short
			// request timeouts into errors.
			if !raceEnabled {
				t.Parallel()
			}
			px := remotetest.NewProxy(srv.URL)
			defer px.Close()
			px.SetFaults(uint64(seed), 0.25, 120*time.Millisecond,
				remotetest.Delay, remotetest.Drop, remotetest.Truncate, remotetest.Corrupt, remotetest.Status, remotetest.Stall)
			b := bucketAt(t, px.URL, &remote.Options{BlockSize: 4096, CacheBytes: 16 << 10,
				RequestTimeout: 60 * time.Millisecond, Retries: 3, Backoff: time.Millisecond})
			var good, bad int
			for round := range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				p, err := within(t, func() (*remote.Pack, error) { return b.OpenPack(ctx, "f.pack") })
				if err != nil {
					bad++
					cancel()
					continue
				}
				for i, name := range names {
					if (i+round)%8 != 0 {
						continue
					}
					ok, err := within(t, func() (bool, error) { return same(p, local, name) })
					if err == nil && !ok {
						t.Fatalf("seed %d: %s: wrong answer through faults", seed, name)
					}
					if err != nil {
						if bad++; bad <= 3 {
							t.Logf("seed %d: %s: %v", seed, name, err)
						}
						var pe *fs.PathError
						if !errors.As(err, &pe) {
							t.Errorf("seed %d: %s: %v is not a PathError", seed, name, err)
						}
					} else {
						good++
					}
				}
				p.Close()
				cancel()
			}
			t.Logf("seed %d: %d right, %d errors; faults injected: %d of %d requests", seed, good, bad,
				px.Requests.Load()-px.Injected[remotetest.Pass].Load(), px.Requests.Load())
			if good == 0 {
				t.Errorf("seed %d: nothing succeeded: retries are not working", seed)
			}
		})
	}
}

// within runs f and fails the test if it has not returned in a minute:
// every call must end by its context's deadline or its attempts' limit.
func within[T any](t *testing.T, f func() (T, error)) (T, error) {
	type res struct {
		v   T
		err error
	}
	c := make(chan res, 1)
	go func() {
		v, err := f()
		c <- res{v, err}
	}()
	select {
	case r := <-c:
		return r.v, r.err
	case <-time.After(time.Minute):
		t.Fatal("a call hung")
		panic("unreachable")
	}
}

// same compares name's Lstat, and its listing or content, in p and in
// the local pack; an error from p is returned, a difference is false.
func same(p *remote.Pack, local *packreader.Reader, name string) (bool, error) {
	fi, err := p.Lstat(name)
	if err != nil {
		return false, err
	}
	lfi, _ := local.Lstat(name)
	if fi.Mode() != lfi.Mode() || fi.Size() != lfi.Size() || !fi.ModTime().Equal(lfi.ModTime()) {
		return false, nil
	}
	switch {
	case fi.IsDir():
		got, err := p.ReadDir(name)
		if err != nil {
			return false, err
		}
		want, _ := local.ReadDir(name)
		if len(got) != len(want) {
			return false, nil
		}
		for i := range got {
			if got[i].Name() != want[i].Name() || got[i].Type() != want[i].Type() {
				return false, nil
			}
		}
	case fi.Mode().IsRegular():
		want, _ := local.ReadFile(name)
		f, err := p.Open(name)
		if err != nil {
			return false, err
		}
		defer f.Close()
		got, err := io.ReadAll(f)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(got, want) {
			return false, nil
		}
	}
	return true, nil
}

// TestTransientExhausted: a server that always fails gives ErrTransient
// after the retries, not a hang.
func TestTransientExhausted(t *testing.T) {
	srv := newServer(t)
	putRaw(t, bucketAt(t, srv.URL, nil), "x", []byte("hello"))
	px := remotetest.NewProxy(srv.URL)
	defer px.Close()
	px.SetFaults(1, 1, 0, remotetest.Status)
	b := bucketAt(t, px.URL, &remote.Options{Retries: 2, Backoff: time.Millisecond})
	_, err := b.OpenObject(context.Background(), "x")
	if !errors.Is(err, remote.ErrTransient) {
		t.Fatalf("open: %v, want ErrTransient", err)
	}
	if n := px.Requests.Load(); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

// TestStallEndsWithContext: a server that stalls mid-body, with an
// attempt timeout far away, holds a read only until its context ends.
func TestStallEndsWithContext(t *testing.T) {
	srv := newServer(t)
	putRaw(t, bucketAt(t, srv.URL, nil), "x", bytes.Repeat([]byte("z"), 1<<20))
	px := remotetest.NewProxy(srv.URL)
	defer px.Close()
	b := bucketAt(t, px.URL, &remote.Options{RequestTimeout: time.Hour})
	o, err := b.OpenObject(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	px.SetFaults(1, 1, 0, remotetest.Stall)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = within(t, func() (int, error) { return o.ReadAtContext(ctx, make([]byte, 10), 500000) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled read: %v, want DeadlineExceeded", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err = within(t, func() (*remote.Pack, error) { return b.OpenPack(ctx2, "x") })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled open: %v, want DeadlineExceeded", err)
	}
}
