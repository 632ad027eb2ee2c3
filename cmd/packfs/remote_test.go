package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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
