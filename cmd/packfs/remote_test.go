package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/remote/remotetest"
)

// TestIssue18CLI: pack uploads to a bucket URL, and ls, cat, verify,
// info, unpack, diff and serve read the pack from there; the endpoint
// comes from the URL, the credentials from the environment.
func TestIssue18CLI(t *testing.T) {
	srv, err := remotetest.NewServer("bk1")
	must(t, err)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("TMPDIR", t.TempDir())
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("alpha\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "sub", "b.txt"), bytes.Repeat([]byte("beta "), 50000), 0o600))
	must(t, os.Symlink("../a.txt", filepath.Join(src, "sub", "link")))
	url := "s3://bk1/dir/t.pack?endpoint=" + srv.URL

	runOK(t, "pack", src, url)
	if got := runOK(t, "ls", "-R", url); got != "a.txt\nsub\nsub/b.txt\nsub/link\n" {
		t.Errorf("ls -R: %q", got)
	}
	if got := runOK(t, "cat", url, "sub/link"); got != "alpha\n" {
		t.Errorf("cat: %q", got)
	}
	if got := runOK(t, "verify", url); !strings.Contains(got, ": ok, 5 entries") {
		t.Errorf("verify: %q", got)
	}
	runOK(t, "info", url)
	out := filepath.Join(t.TempDir(), "out")
	runOK(t, "unpack", url, out)
	in, err := dirfs.New(src)
	must(t, err)
	res, err := dirfs.New(out)
	must(t, err)
	if d := cmp.Diff(dump(t, in), dump(t, res)); d != "" {
		t.Errorf("unpacked tree differs (-src +unpacked):\n%s", d)
	}
	local := filepath.Join(t.TempDir(), "t.pack")
	runOK(t, "pack", src, local)
	if got := runOK(t, "diff", local, url); got != "" {
		t.Errorf("diff local remote: %q", got)
	}

	s := startServe(t, url)
	checkServed(t, s, "sub/b.txt", bytes.Repeat([]byte("beta "), 50000))
	s.stop(os.Interrupt)

	// Errors: a missing key, a missing bucket, no key, a bad query.
	for _, args := range [][]string{
		{"ls", "s3://bk1/nothing.pack?endpoint=" + srv.URL},
		{"ls", "s3://nobucket/t.pack?endpoint=" + srv.URL},
		{"ls", "s3://bk1/?endpoint=" + srv.URL},
		{"ls", "s3://bk1/t.pack?endpoint=" + srv.URL + "&bogus=1"},
	} {
		var o, e bytes.Buffer
		if code := run(args, &o, &e); code == 0 || e.Len() == 0 {
			t.Errorf("packfs %s: exit %d, stderr %q", strings.Join(args, " "), code, e.String())
		}
	}
}

// TestIssue18Mount: a pack in a bucket mounts through FUSE, read lazily
// by the mount process.
func TestIssue18Mount(t *testing.T) {
	srv, err := remotetest.NewServer("bk2")
	must(t, err)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "sub", "b.txt"), bytes.Repeat([]byte("beta "), 50000), 0o644))
	url := "s3://bk2/m.pack?endpoint=" + srv.URL
	runOK(t, "pack", src, url)

	mnt := filepath.Join(t.TempDir(), "mnt")
	cmd, log := startMount(t, mnt, url, mnt)
	got, err := os.ReadFile(filepath.Join(mnt, "sub", "b.txt"))
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte("beta "), 50000)) {
		t.Errorf("read through the mount of %s: %d bytes, %v", url, len(got), err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "new"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write to a mounted bucket pack: %v, want EROFS", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
}
