package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/remote"
)

var serveAddr string

func serveFlags(fl *flag.FlagSet) {
	fl.StringVar(&serveAddr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
}

// shutdownGrace bounds how long serve waits for requests in flight once
// it is told to stop.
const shutdownGrace = 10 * time.Second

// cmdServe serves a pack or a store directory over HTTP until SIGINT or
// SIGTERM, then shuts down gracefully and exits 0.
func cmdServe(_ *flag.FlagSet, args []string, _, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := openServed(args[0])
	if err != nil {
		return err
	}
	defer st.close()
	ln, err := net.Listen("tcp", serveAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           &etagHandler{fsys: st.fsys, fp: st.fp, next: http.FileServerFS(st.fsys)},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	fmt.Fprintf(stderr, "packfs serve: serving %s %s at http://%s/\n", st.kind, args[0], ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop() // a second signal kills the process as usual
	fmt.Fprintf(stderr, "packfs serve: shutting down\n")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// servedTree is what serve serves: an immutable fs.FS and a fingerprint that
// changes whenever anything the tree holds does.
type servedTree struct {
	kind  string // "pack" or "store"
	fsys  fs.FS
	fp    []byte
	close func() error
}

// openServed opens name as a pack file or, if it is a directory, as a
// store, read-only, so that it can be served beside a writer.
func openServed(name string) (*servedTree, error) {
	if remote.IsURL(name) {
		return openServedRemote(name)
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		s, err := openStoreReadOnly(name)
		if err != nil {
			return nil, err
		}
		fp, err := storeFingerprint(name, s)
		if err != nil {
			s.Close()
			return nil, err
		}
		return &servedTree{kind: "store", fsys: s, fp: fp, close: s.Close}, nil
	}
	if err := packFile(name, fi); err != nil {
		return nil, err
	}
	r, fp, err := openServedPack(name)
	if err != nil {
		return nil, err
	}
	t := &servedTree{kind: "pack", fsys: r, fp: fp, close: r.Close}
	st, err := r.Stats()
	if err != nil {
		r.Close()
		return nil, err
	}
	if st.Whiteouts > 0 {
		// A delta pack: whiteouts are markers, not files. A read-only
		// union over the pack applies them instead of serving them.
		t.fsys = packfs.New(nil, r)
	}
	return t, nil
}

// openServedPack opens the pack file name and fingerprints what it opened.
func openServedPack(name string) (*packreader.Reader, []byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	r, err := packreader.Open(name)
	if err != nil {
		return nil, nil, err
	}
	// The fingerprint is read through f: make sure the reader maps the
	// same file, not one renamed over name meanwhile.
	if now, err := os.Stat(name); err != nil || !os.SameFile(fi, now) {
		r.Close()
		return nil, nil, fmt.Errorf("%s: replaced while opening; try again", name)
	}
	fp, err := packFingerprint(f, fi)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, fp, nil
}

// maxCheckTable bounds the check table packFingerprint reads: 4 bytes a
// 4 KiB block, so 64 MiB covers an index of 64 GiB.
const maxCheckTable = 64 << 20

// packFingerprint hashes what a pack records about its whole tree,
// without reading its contents: the header, the footer and the check
// table (FORMAT.md). The check table holds a CRC-32C of every block of
// the index, and each index record holds its content's SHA-256 prefix and
// CRC-32C, so the fingerprint changes with any content, name, mode, time
// or target. Costs one read of about 1/1000 of the index. A layout it
// does not know falls back to the file's identity (device, inode, size,
// mtime), which a pack also never shares with another: packs are
// written to a new file and renamed into place.
func packFingerprint(f *os.File, fi fs.FileInfo) ([]byte, error) {
	size := fi.Size()
	h := sha256.New()
	h.Write([]byte("pack\x00"))
	var head, foot [64]byte
	if size < packformat.HeaderSize+packformat.FooterSize {
		return nil, fmt.Errorf("%s: %w", f.Name(), packreader.ErrCorrupt)
	}
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return nil, err
	}
	if _, err := f.ReadAt(foot[:], size-packformat.FooterSize); err != nil {
		return nil, err
	}
	h.Write(head[:])
	h.Write(foot[:])
	le := binary.LittleEndian
	tableOff, tableLen, ok, err := packformat.CheckTable(f, size)
	if err != nil {
		return nil, err
	}
	if ok && tableLen <= maxCheckTable {
		table := make([]byte, tableLen)
		if _, err := f.ReadAt(table, int64(tableOff)); err != nil {
			return nil, err
		}
		h.Write(table)
	} else {
		var id [32]byte
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			le.PutUint64(id[0:], uint64(st.Dev))
			le.PutUint64(id[8:], st.Ino)
		}
		le.PutUint64(id[16:], uint64(size))
		le.PutUint64(id[24:], uint64(fi.ModTime().UnixNano()))
		h.Write(id[:])
	}
	return h.Sum(nil), nil
}

// storeManifest is the file a store directory's state starts from.
const storeManifest = "MANIFEST"

// openStoreReadOnly opens the store in dir read-only. A writer's
// checkpoint between our reading the manifest and the packs or log it
// names can remove them: then the manifest has changed, and we try again.
func openStoreReadOnly(dir string) (*packfs.Store, error) {
	for try := 0; ; try++ {
		before, err := os.ReadFile(filepath.Join(dir, storeManifest))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: not a store directory (no %s)", dir, storeManifest)
		}
		if err != nil {
			return nil, err
		}
		s, err := packfs.Open(dir, &packfs.Options{ReadOnly: true})
		if err == nil {
			return s, nil
		}
		after, rerr := os.ReadFile(filepath.Join(dir, storeManifest))
		if try == 4 || rerr != nil || bytes.Equal(before, after) {
			return nil, lowersHint(err)
		}
	}
}

// storeFingerprint hashes the state a read-only store opened in: the
// directory's identity, what the manifest lists, each pack's fingerprint
// and how much log was replayed over them. A read-only store never
// changes after Open, so this stands for its whole tree.
func storeFingerprint(dir string, s *packfs.Store) ([]byte, error) {
	info := s.Info()
	h := sha256.New()
	fmt.Fprintf(h, "store\x00%d\x00%d\x00%d\x00", info.Generation, info.LogSegment, info.LogBytes)
	if fi, err := os.Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			fmt.Fprintf(h, "%d\x00%d\x00", st.Dev, st.Ino)
		}
	}
	if fi, err := s.Stat("."); err == nil {
		fmt.Fprintf(h, "%d\x00%d\x00", fi.ModTime().UnixNano(), fi.Mode())
	}
	for _, p := range info.Packs {
		fmt.Fprintf(h, "%s\x00", p)
		// A writer may have flattened the pack away since: its name,
		// which holds its generation, stands for it then.
		if f, err := os.Open(filepath.Join(dir, p)); err == nil {
			fi, err := f.Stat()
			if err == nil {
				if fp, err := packFingerprint(f, fi); err == nil {
					h.Write(fp)
				}
			}
			f.Close()
		}
	}
	return h.Sum(nil), nil
}

// etagHandler gives each regular file a strong ETag before handing the
// request to the file server, whose ServeContent then answers
// If-None-Match, If-Match and If-Range with it. The tree never changes
// while served, so the tree's fingerprint and the file's name determine
// its bytes; its size, time and mode go in as well. Nothing is hashed but
// those few bytes, whatever the file's size.
type etagHandler struct {
	fsys fs.FS
	fp   []byte
	next http.Handler
}

func (h *etagHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if name, ok := servedFile(r); ok {
		if fi, err := fs.Stat(h.fsys, name); err == nil && fi.Mode().IsRegular() {
			w.Header().Set("Etag", etag(h.fp, name, fi))
		}
	}
	h.next.ServeHTTP(w, r)
}

// servedFile returns the name of the file the file server will answer r
// with, when it answers with a file rather than a listing or a redirect.
func servedFile(r *http.Request) (string, bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return "", false
	}
	p := r.URL.Path
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/index.html") {
		return "", false // a listing or a redirect
	}
	// As the file server does: the cleaned path names the file.
	name := strings.TrimPrefix(path.Clean("/"+p), "/")
	if name == "" {
		return "", false
	}
	return name, true
}

func etag(fp []byte, name string, fi fs.FileInfo) string {
	h := sha256.New()
	h.Write(fp)
	var meta [24]byte
	binary.LittleEndian.PutUint64(meta[0:], uint64(fi.Size()))
	binary.LittleEndian.PutUint64(meta[8:], uint64(fi.ModTime().UnixNano()))
	binary.LittleEndian.PutUint64(meta[16:], uint64(fi.Mode()))
	h.Write(meta[:])
	io.WriteString(h, name)
	return `"` + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18]) + `"`
}
