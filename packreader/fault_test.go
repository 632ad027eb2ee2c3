package packreader_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// faultTree has a content of 1 MiB (256 pages), a directory whose index
// spans several blocks, symlinks and a subdirectory.
func faultTree() fstest.MapFS {
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i*7 + i>>12)
	}
	m := fstest.MapFS{
		"big.bin":   {Data: big, Mode: 0o644, ModTime: t0},
		"link":      {Data: []byte("big.bin"), Mode: fs.ModeSymlink | 0o777, ModTime: t0},
		"sub/deep":  {Data: []byte("deep\n"), Mode: 0o600, ModTime: t0},
		"sub/ldeep": {Data: []byte("../d/f0007"), Mode: fs.ModeSymlink | 0o777, ModTime: t0},
	}
	for i := range 300 {
		m[fmt.Sprintf("d/f%04d", i)] = &fstest.MapFile{Data: bytes.Repeat([]byte{byte(i)}, 100+i*37), Mode: 0o644, ModTime: t0}
	}
	return m
}

// writeFaultPack writes faultTree's pack into a temporary directory and
// returns its name and bytes.
func writeFaultPack(t *testing.T, opts ...packwriter.Option) (string, []byte) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "p.pack")
	must(t, packwriter.WriteFile(name, faultTree(), opts...))
	data, err := os.ReadFile(name)
	must(t, err)
	return name, data
}

// faultProbe checks the results of reads from a pack truncated while
// mapped, and counts them.
type faultProbe struct {
	t *testing.T
	// partial is set when the truncation left part of a page: the rest
	// of that page reads as zeros, which the checks report as plain
	// ErrCorrupt.
	partial bool
	errors  int
	changed int // errors wrapping ErrChanged
	ok      int
}

// check reports whether err is nil, after checking that an error is a
// *fs.PathError (when pathOp) that wraps ErrChanged and ErrCorrupt.

func (p *faultProbe) check(what string, err error, pathOp bool) bool {
	p.t.Helper()
	if err == nil {
		p.ok++
		return true
	}
	p.errors++
	switch {
	case errors.Is(err, packreader.ErrChanged):
		p.changed++
		if !errors.Is(err, packreader.ErrCorrupt) {
			p.t.Errorf("%s: %v wraps ErrChanged but not ErrCorrupt", what, err)
		}
	case p.partial && errors.Is(err, packreader.ErrCorrupt):
	default:
		p.t.Errorf("%s: %v, want an error wrapping ErrChanged and ErrCorrupt", what, err)
	}
	var pe *fs.PathError
	if pathOp && !errors.As(err, &pe) {
		p.t.Errorf("%s: %v (%T) is not an *fs.PathError", what, err, err)
	}
	return false
}

// probeAll runs every read of the Reader and of the handles opened before
// the truncation: each must fail with ErrChanged or return exactly what
// the tree holds.
func (p *faultProbe) probeAll(r *packreader.Reader, handles map[string]fs.File) {
	t := p.t
	tree := faultTree()
	for name, mf := range tree {
		want := string(mf.Data)
		if mf.Mode.Type() == fs.ModeSymlink {
			if got, err := r.ReadLink(name); p.check("ReadLink "+name, err, true) && got != want {
				t.Errorf("ReadLink %s = %q, want %q", name, got, want)
			}
			if fi, err := r.Lstat(name); p.check("Lstat "+name, err, true) && fi.Mode() != mf.Mode {
				t.Errorf("Lstat %s: mode %v, want %v", name, fi.Mode(), mf.Mode)
			}
			continue
		}
		if fi, err := r.Stat(name); p.check("Stat "+name, err, true) && fi.Size() != int64(len(want)) {
			t.Errorf("Stat %s: size %d, want %d", name, fi.Size(), len(want))
		}
		if got, err := r.ReadFile(name); p.check("ReadFile "+name, err, true) && string(got) != want {
			t.Errorf("ReadFile %s: wrong bytes", name)
		}
		if got, err := r.Bytes(name); p.check("Bytes "+name, err, true) && string(got) != want {
			t.Errorf("Bytes %s: wrong bytes", name)
		}
		if f, err := r.Open(name); p.check("Open "+name, err, true) {
			got, err := io.ReadAll(f)
			if p.check("Read "+name, err, true) && string(got) != want {
				t.Errorf("Read %s: wrong bytes", name)
			}
			f.Close()
		}
	}
	for _, dir := range []string{".", "d", "sub"} {
		ents, err := r.ReadDir(dir)
		if !p.check("ReadDir "+dir, err, true) {
			continue
		}
		for _, e := range ents {
			if _, err := e.Info(); !p.check("Info "+e.Name(), err, true) {
				break
			}
		}
	}
	_, err := r.Glob("d/f00*")
	p.check("Glob", err, true)
	if sub, err := r.Sub("sub"); p.check("Sub", err, true) {
		if got, err := fs.ReadFile(sub, "deep"); p.check("Sub ReadFile", err, true) && string(got) != "deep\n" {
			t.Errorf("Sub ReadFile deep = %q", got)
		}
	}
	_, err = r.Stats()
	p.check("Stats", err, false)
	if err := r.Verify(); err == nil {
		t.Error("Verify of a truncated pack succeeded")
	} else {
		p.check("Verify", err, false)
	}
	_ = r.Opaque("sub") // must not crash

	for name, f := range handles {
		if mf := tree[name]; mf == nil || mf.Mode.IsDir() {
			d := f.(fs.ReadDirFile)
			_, err := d.ReadDir(-1)
			p.check("handle ReadDir "+name, err, true)
			continue
		}
		want := tree[name].Data
		buf := make([]byte, 64<<10)
		for off := 0; off < len(want); off += len(buf) {
			n, err := f.(io.ReaderAt).ReadAt(buf, int64(off))
			if err == io.EOF {
				err = nil
			}
			if p.check("handle ReadAt "+name, err, true) && !bytes.Equal(buf[:n], want[off:min(off+len(buf), len(want))]) {
				t.Errorf("handle ReadAt %s at %d: wrong bytes", name, off)
			}
		}
		if _, err := f.(io.Seeker).Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		_, err := f.(io.WriterTo).WriteTo(&out)
		if p.check("handle WriteTo "+name, err, true) && !bytes.Equal(out.Bytes(), want) {
			t.Errorf("handle WriteTo %s: wrong bytes", name)
		}
		if !bytes.HasPrefix(want, out.Bytes()) {
			t.Errorf("handle WriteTo %s: wrote bytes that are not the file's", name)
		}
	}
}

// TestIssue14TruncatedWhileMapped truncates a pack file in place while two
// Readers map it, one fresh and one that has read everything, with
// handles open on every entry: every read fails with ErrChanged or
// returns the right bytes, and the process survives (it used to die of
// SIGBUS).
func TestIssue14TruncatedWhileMapped(t *testing.T) {
	for _, format := range []int{2, 3} {
		t.Run(fmt.Sprintf("format=%d", format), func(t *testing.T) { testTruncatedWhileMapped(t, packwriter.WithFormat(format)) })
	}
}

func testTruncatedWhileMapped(t *testing.T, opt packwriter.Option) {
	_, data := writeFaultPack(t, opt)
	f, _, _ := packLayout(data)
	page := int64(os.Getpagesize())
	sizes := []int64{0, page, 512 << 10, int64(f.IndexOff) &^ (page - 1), int64(f.IndexOff), int64(len(data)) - 8192}
	whole := int64(f.IndexOff) // from this size on, big.bin reads whole
	if f3, ok := packformat.DecodeFooter3(data[len(data)-packformat.FooterSize3:]); ok && data[8] == 3 {
		// Format 3: a cut in the frame table, past big.bin's 17 entries.
		f = f3
		whole = int64(f.FramesOff + 17*packformat.FrameEntrySize)
		sizes = []int64{0, page, 512 << 10, int64(f.IndexOff) &^ (page - 1), int64(f.IndexOff), int64(f.FramesOff + 40*packformat.FrameEntrySize)}
	}
	for _, size := range sizes {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			name, _ := writeFaultPack(t, opt)
			cold, err := packreader.Open(name)
			must(t, err)
			defer cold.Close()
			warm, err := packreader.Open(name)
			must(t, err)
			defer warm.Close()
			_ = dump(t, warm)
			must(t, warm.Verify())
			handles := map[string]fs.File{}
			for p, mf := range faultTree() {
				if mf.Mode.Type() != 0 {
					continue // Open follows symlinks
				}
				if h, err := warm.Open(p); err == nil {
					handles[p] = h
					defer h.Close()
				}
			}
			for _, d := range []string{".", "d"} {
				h, err := warm.Open(d)
				must(t, err)
				handles[d] = h
				defer h.Close()
			}
			must(t, os.Truncate(name, size))

			for _, r := range []*packreader.Reader{cold, warm} {
				p := &faultProbe{t: t, partial: size%page != 0}
				p.probeAll(r, handles)
				if p.changed == 0 {
					t.Errorf("no read failed with ErrChanged on a pack truncated to %d bytes", size)
				}
			}
			// Contents the truncation left whole still read right.
			if size >= whole {
				got, err := io.ReadAll(io.NewSectionReader(handles["big.bin"].(io.ReaderAt), 0, 1<<20))
				must(t, err)
				if !bytes.Equal(got, faultTree()["big.bin"].Data) {
					t.Error("content before the truncation point reads wrong")
				}
			}
			// The Reader still closes cleanly.
			must(t, cold.Close())
		})
	}
}

// TestIssue14TruncatedWhileReading truncates a mapped pack while
// goroutines read it: each read fails with ErrChanged or returns the
// right bytes.
func TestIssue14TruncatedWhileReading(t *testing.T) {
	name, _ := writeFaultPack(t)
	r, err := packreader.Open(name)
	must(t, err)
	defer r.Close()
	tree := faultTree()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			<-start
			for i := range 200 {
				p := "big.bin"
				if g%2 == 1 {
					p = fmt.Sprintf("d/f%04d", (i*31+g)%300)
				}
				got, err := r.ReadFile(p)
				if err != nil {
					if !errors.Is(err, packreader.ErrChanged) {
						errs <- fmt.Errorf("ReadFile %s: %v, want ErrChanged", p, err)
						return
					}
					continue
				}
				if !bytes.Equal(got, tree[p].Data) {
					errs <- fmt.Errorf("ReadFile %s: wrong bytes", p)
					return
				}
			}
		})
	}
	close(start)
	must(t, os.Truncate(name, 8192))
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := r.ReadFile("big.bin"); !errors.Is(err, packreader.ErrChanged) {
		t.Errorf("ReadFile after the truncation: %v, want ErrChanged", err)
	}
}

// TestIssue14FileServerTruncated serves a mapped pack over HTTP, through
// http.FileServerFS and through http.ServeContent of a file opened before
// the pack was truncated: the requests fail (an error status or a short
// body, never wrong bytes), no handler panics, and the process survives.
// It runs on format 2, whose records hold where a content lies: a format-3
// pack's frame table lies after its contents, so a cut through a content
// takes the table too, and every read after the first frame fails.
func TestIssue14FileServerTruncated(t *testing.T) {
	name, data := writeFaultPack(t, v2)
	r, err := packreader.Open(name)
	must(t, err)
	defer r.Close()
	big := faultTree()["big.bin"].Data

	var logBuf syncBuffer
	opened := make(chan struct{})
	truncated := make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/fs/", http.StripPrefix("/fs/", http.FileServerFS(r)))
	mux.HandleFunc("/held/big.bin", func(w http.ResponseWriter, req *http.Request) {
		f, err := r.Open("big.bin")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		// A first read checks the content's CRC-32C while it is whole,
		// so that the response fails in mid-copy.
		var one [1]byte
		if _, err := f.(io.ReaderAt).ReadAt(one[:], 0); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		close(opened)
		<-truncated
		http.ServeContent(w, req, "big.bin", time.Time{}, f.(io.ReadSeeker))
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ErrorLog = log.New(&logBuf, "", 0)
	srv.Start()
	defer srv.Close()

	// Before the truncation everything is served whole.
	if code, body, err := get(srv.URL + "/fs/big.bin"); code != http.StatusOK || err != nil || !bytes.Equal(body, big) {
		t.Fatalf("GET big.bin before truncation: %d, %d bytes, %v", code, len(body), err)
	}

	type result struct {
		code int
		body []byte
		err  error
	}
	held := make(chan result, 1)
	go func() {
		code, body, err := get(srv.URL + "/held/big.bin")
		held <- result{code, body, err}
	}()
	<-opened
	// Keep the first half of the content mapped: the response starts
	// right and fails where the pages are gone.
	off := bytes.Index(data, big)
	if off < 0 {
		t.Fatal("content not found in the pack")
	}
	must(t, os.Truncate(name, int64(off+len(big)/2)&^int64(os.Getpagesize()-1)))
	close(truncated)

	res := <-held
	if res.code == http.StatusOK && res.err == nil && bytes.Equal(res.body, big) {
		t.Error("ServeContent of a truncated pack sent the whole file")
	}
	if res.code != http.StatusOK || len(res.body) == 0 || !bytes.HasPrefix(big, res.body) {
		t.Errorf("ServeContent of a truncated pack: %d, %d bytes (a prefix: %v), %v; want 200 and a short prefix of the content",
			res.code, len(res.body), bytes.HasPrefix(big, res.body), res.err)
	}
	for _, p := range []string{"big.bin", "d/", "d/f0001", "sub/deep", ""} {
		code, body, err := get(srv.URL + "/fs/" + p)
		if code == http.StatusOK && err == nil {
			t.Errorf("GET %s of a truncated pack: 200, %d bytes", p, len(body))
		}
	}
	if s := logBuf.String(); strings.Contains(s, "panic") {
		t.Errorf("a handler panicked:\n%s", s)
	}
}

func get(url string) (int, []byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestIssue14ReplacedWhileMapped replaces a mapped pack by rename, as
// packwriter.WriteFile does: the mapping keeps the old file, whose bytes
// every read still returns.
func TestIssue14ReplacedWhileMapped(t *testing.T) {
	name, _ := writeFaultPack(t)
	r, err := packreader.Open(name)
	must(t, err)
	defer r.Close()
	must(t, packwriter.WriteFile(name, fstest.MapFS{"other": {Data: []byte("x")}}))
	p := &faultProbe{t: t}
	for name, mf := range faultTree() {
		if mf.Mode.Type() != 0 {
			continue
		}
		got, err := r.ReadFile(name)
		if p.check("ReadFile "+name, err, true) && !bytes.Equal(got, mf.Data) {
			t.Errorf("ReadFile %s after replacement: wrong bytes", name)
		}
	}
	if p.errors != 0 {
		t.Errorf("%d reads failed after a replacement by rename", p.errors)
	}
	must(t, r.Verify())
}
