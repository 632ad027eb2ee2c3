package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/packfs/packfs"
	"golang.org/x/sys/unix"
)

// serveChild is a packfs serve child process.
type serveChild struct {
	t      *testing.T
	url    string
	wait   func() (int, string) // exit status, all of stderr
	signal func(os.Signal)
}

var servingRE = regexp.MustCompile(`at (http://[^ ]+/)\n`)

// startServe starts packfs serve on a free loopback port and waits until
// it listens.
func startServe(t *testing.T, target string) *serveChild {
	t.Helper()
	cmd := childCommand(t, "serve", "--addr", "127.0.0.1:0", target)
	pipe, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	br := bufio.NewReader(pipe)
	line, err := br.ReadString('\n')
	m := servingRE.FindStringSubmatch(line)
	if m == nil {
		rest, _ := io.ReadAll(br)
		cmd.Wait()
		t.Fatalf("serve %s: %q %v", target, line+string(rest), err)
	}
	var mu sync.Mutex
	var rest bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		b, _ := io.ReadAll(br)
		mu.Lock()
		rest.Write(b)
		mu.Unlock()
	}()
	s := &serveChild{t: t, url: m[1]}
	waited := false
	s.wait = func() (int, string) {
		waited = true
		<-done
		err := cmd.Wait()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return code, line + rest.String()
	}
	s.signal = func(sig os.Signal) { must(t, cmd.Process.Signal(sig)) }
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return s
}

// stop sends sig and checks that the server shuts down and exits 0.
func (s *serveChild) stop(sig os.Signal) {
	s.t.Helper()
	s.signal(sig)
	code, stderr := s.wait()
	if code != 0 || !strings.Contains(stderr, "shutting down") {
		s.t.Fatalf("serve after %v: exit %d, stderr %q; want 0 after shutting down", sig, code, stderr)
	}
}

// noRedirects is a client that shows redirects rather than follows them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get fetches name with the given request headers (name: value pairs).
func (s *serveChild) get(name string, headers ...string) (*http.Response, []byte) {
	s.t.Helper()
	req, err := http.NewRequest("GET", s.url+name, nil)
	must(s.t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := noRedirects.Do(req)
	must(s.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(s.t, err)
	return resp, body
}

// checkServed checks a full GET, a range, and the ETag's preconditions
// for the file name whose content is want, and returns its ETag.
func checkServed(t *testing.T, s *serveChild, name string, want []byte) string {
	t.Helper()
	resp, body := s.get(name)
	etag := resp.Header.Get("Etag")
	if resp.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("GET %s: %s, %d bytes, want 200 and %d bytes", name, resp.Status, len(body), len(want))
	}
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("GET %s: ETag %q, want a strong one", name, etag)
	}
	lo, hi := len(want)/3, len(want)/3+len(want)/4
	resp, body = s.get(name, "Range", fmt.Sprintf("bytes=%d-%d", lo, hi))
	if resp.StatusCode != 206 || !bytes.Equal(body, want[lo:hi+1]) ||
		resp.Header.Get("Content-Range") != fmt.Sprintf("bytes %d-%d/%d", lo, hi, len(want)) {
		t.Fatalf("GET %s bytes=%d-%d: %s, Content-Range %q, %d bytes", name, lo, hi, resp.Status, resp.Header.Get("Content-Range"), len(body))
	}
	if resp, body = s.get(name, "If-None-Match", etag); resp.StatusCode != 304 || len(body) != 0 {
		t.Fatalf("GET %s If-None-Match its ETag: %s, %d bytes; want 304", name, resp.Status, len(body))
	}
	if resp, _ = s.get(name, "If-None-Match", `"other"`); resp.StatusCode != 200 {
		t.Fatalf("GET %s If-None-Match another ETag: %s; want 200", name, resp.Status)
	}
	if resp, body = s.get(name, "Range", "bytes=0-0", "If-Range", etag); resp.StatusCode != 206 || len(body) != 1 {
		t.Fatalf("GET %s If-Range its ETag: %s; want 206", name, resp.Status)
	}
	if resp, body = s.get(name, "Range", "bytes=0-0", "If-Range", `"other"`); resp.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("GET %s If-Range another ETag: %s; want 200 and the whole file", name, resp.Status)
	}
	return etag
}

// serveTree writes a tree under dir and returns its big file's content.
func serveTree(t *testing.T, dir string) []byte {
	t.Helper()
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte(i*7 + i>>9)
	}
	must(t, os.MkdirAll(filepath.Join(dir, "site"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello, world\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "site", "index.html"), []byte("<p>index</p>\n"), 0o644))
	must(t, os.Symlink("a.txt", filepath.Join(dir, "ln")))
	setTreeTimes(t, dir)
	return big
}

// TestIssue15ServePack: a pack is served with ranges and strong ETags
// that stand for the content: the same on a restart, different for a
// pack whose file differs only in its bytes; SIGTERM shuts it down and
// it exits 0.
func TestIssue15ServePack(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	big := serveTree(t, src)
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", src, pack)

	s := startServe(t, pack)
	bigTag := checkServed(t, s, "big.bin", big)
	aTag := checkServed(t, s, "a.txt", []byte("hello, world\n"))
	lnTag := checkServed(t, s, "ln", []byte("hello, world\n"))
	if aTag == bigTag || aTag == lnTag {
		t.Errorf("ETags a.txt %s, big.bin %s, ln %s: want each its own", aTag, bigTag, lnTag)
	}
	// Decorated paths name the same file, with the same ETag.
	for _, name := range []string{"./a.txt", "/a.txt", "../a.txt", "site/../a.txt", "site//..//a.txt"} {
		resp, body := s.get(name, "If-None-Match", aTag)
		if resp.StatusCode != 304 || resp.Header.Get("Etag") != aTag || len(body) != 0 {
			t.Errorf("GET %s If-None-Match a.txt's ETag: %s, ETag %q; want 304 with it", name, resp.Status, resp.Header.Get("Etag"))
		}
	}
	if resp, body := s.get("site/"); resp.StatusCode != 200 || string(body) != "<p>index</p>\n" {
		t.Errorf("GET site/: %s %q", resp.Status, body)
	}
	if resp, _ := s.get("missing"); resp.StatusCode != 404 || resp.Header.Get("Etag") != "" {
		t.Errorf("GET missing: %s, ETag %q; want 404 without one", resp.Status, resp.Header.Get("Etag"))
	}
	for _, name := range []string{"a.txt/", "site/index.html", "site"} {
		if resp, _ := s.get(name); resp.StatusCode != 301 || resp.Header.Get("Etag") != "" {
			t.Errorf("GET %s: %s, ETag %q; want a redirect without one", name, resp.Status, resp.Header.Get("Etag"))
		}
	}
	s.stop(syscall.SIGTERM)

	s = startServe(t, pack)
	if resp, _ := s.get("big.bin"); resp.Header.Get("Etag") != bigTag {
		t.Errorf("ETag after a restart %q, want %q", resp.Header.Get("Etag"), bigTag)
	}
	s.stop(syscall.SIGINT)

	// Same name, size, mode and time, other bytes: another ETag.
	must(t, os.WriteFile(filepath.Join(src, "a.txt"), []byte("HELLO, WORLD\n"), 0o644))
	setTreeTimes(t, src)
	pack2 := filepath.Join(tmp, "p2.pack")
	runOK(t, "pack", src, pack2)
	s = startServe(t, pack2)
	if tag := checkServed(t, s, "a.txt", []byte("HELLO, WORLD\n")); tag == aTag {
		t.Errorf("a.txt of other bytes has the same ETag %s", tag)
	}
	s.stop(syscall.SIGTERM)
}

// TestIssue15ServeStore: a store directory is served read-only beside
// the process that has it open for writing: files from its packs and
// from its log alike.
func TestIssue15ServeStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := packfs.Open(dir, nil)
	must(t, err)
	defer st.Close()
	big := make([]byte, 100<<10)
	for i := range big {
		big[i] = byte(i % 251)
	}
	must(t, st.WriteFile("packed.bin", big, 0o644))
	must(t, st.Checkpoint())
	must(t, st.WriteFile("logged.txt", []byte("only in the log\n"), 0o644))
	must(t, st.Sync())

	s := startServe(t, dir)
	checkServed(t, s, "packed.bin", big)
	checkServed(t, s, "logged.txt", []byte("only in the log\n"))
	s.stop(syscall.SIGTERM)

	// The writer goes on meanwhile, and still can.
	must(t, st.WriteFile("later.txt", nil, 0o644))
}

// TestIssue15ServeRefuses: what serve cannot serve exits 1 with a
// message before listening; its default address is loopback.
func TestIssue15ServeRefuses(t *testing.T) {
	tmp := t.TempDir()
	must(t, os.WriteFile(filepath.Join(tmp, "junk"), []byte("not a pack"), 0o644))
	must(t, unix.Mkfifo(filepath.Join(tmp, "fifo"), 0o644))
	for _, tc := range []struct{ target, msg string }{
		{tmp, "not a store directory"},
		{filepath.Join(tmp, "junk"), "packreader"},
		{filepath.Join(tmp, "absent"), "no such file"},
		{filepath.Join(tmp, "fifo"), "is a FIFO"},
	} {
		r := runChildWant(t, 1, "serve", "--addr", "127.0.0.1:0", tc.target)
		if !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("serve %s: stderr %q, want %q", tc.target, r.stderr, tc.msg)
		}
	}
	if r := runChildWant(t, 0, "serve", "--help"); !strings.Contains(r.stdout, `"127.0.0.1:8080"`) {
		t.Errorf("serve --help: %q", r.stdout)
	}
}

// TestIssue15ServeGraceful: a download under way when SIGTERM comes runs
// to its end before the server exits 0.
func TestIssue15ServeGraceful(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	must(t, os.Mkdir(src, 0o755))
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB: more than socket buffers hold
	must(t, os.WriteFile(filepath.Join(src, "big"), big, 0o644))
	pack := filepath.Join(tmp, "p.pack")
	runOK(t, "pack", src, pack)
	s := startServe(t, pack)
	resp, err := http.Get(s.url + "big")
	must(t, err)
	defer resp.Body.Close()
	head := make([]byte, 1<<10)
	_, err = io.ReadFull(resp.Body, head) // the handler is writing now
	must(t, err)
	s.signal(syscall.SIGTERM)
	rest, err := io.ReadAll(resp.Body)
	must(t, err)
	if got := append(head, rest...); !bytes.Equal(got, big) {
		t.Fatalf("download cut by shutdown: %d of %d bytes", len(got), len(big))
	}
	if code, stderr := s.wait(); code != 0 || !strings.Contains(stderr, "shutting down") {
		t.Fatalf("serve after SIGTERM: exit %d, stderr %q", code, stderr)
	}
}

// TestIssue15ServeBesideFlatten: a store served read-only goes on serving
// the state it opened in while the writer flattens twice, removing the
// packs it opened.
func TestIssue15ServeBesideFlatten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := packfs.Open(dir, nil)
	must(t, err)
	defer st.Close()
	must(t, st.WriteFile("f", []byte("first\n"), 0o644))
	must(t, st.Checkpoint())
	old := st.Info().Packs
	s := startServe(t, dir)
	tag := checkServed(t, s, "f", []byte("first\n"))
	must(t, st.WriteFile("f", []byte("second\n"), 0o644))
	must(t, st.Flatten())
	must(t, st.WriteFile("g", nil, 0o644))
	must(t, st.Flatten())
	if _, err := os.Stat(filepath.Join(dir, old[0])); !os.IsNotExist(err) {
		t.Fatalf("the flattens left %s: %v", old[0], err)
	}
	if got := checkServed(t, s, "f", []byte("first\n")); got != tag {
		t.Errorf("ETag changed from %s to %s while the served state did not", tag, got)
	}
	s.stop(syscall.SIGTERM)
	s = startServe(t, dir)
	if got := checkServed(t, s, "f", []byte("second\n")); got == tag {
		t.Errorf("the new state's f has the old ETag %s", tag)
	}
	s.stop(syscall.SIGTERM)
}

// TestIssue15ServeDeltaPack: a pack with whiteouts (a store's checkpoint
// after a removal) is served as the tree it describes: the whiteout is
// neither listed nor served.
func TestIssue15ServeDeltaPack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st, err := packfs.Open(dir, nil)
	must(t, err)
	must(t, st.WriteFile("kept", []byte("kept\n"), 0o644))
	must(t, st.WriteFile("gone", []byte("gone\n"), 0o644))
	must(t, st.Checkpoint())
	must(t, st.Remove("gone"))
	must(t, st.WriteFile("new", []byte("new\n"), 0o644))
	must(t, st.Checkpoint())
	delta := filepath.Join(dir, st.Info().Packs[0])
	must(t, st.Close())
	s := startServe(t, delta)
	checkServed(t, s, "new", []byte("new\n"))
	if resp, _ := s.get("gone"); resp.StatusCode != 404 {
		t.Errorf("GET of a whiteout: %s, want 404", resp.Status)
	}
	if _, body := s.get(""); strings.Contains(string(body), "gone") || !strings.Contains(string(body), "new") {
		t.Errorf("listing of a delta pack: %s", body)
	}
	s.stop(syscall.SIGTERM)
}
