package remote_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/packreader"
)

// TestCountsGoSrc counts the requests and bytes of a cold walk of the Go
// source tree's pack (its go/ subtree in quick runs): at most 1.1 times
// the bytes from the index to the end, in at most one request per 64 KiB
// of them, then one request for a small file and none warm.
func TestCountsGoSrc(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skip("no go env GOROOT: ", err)
	}
	root := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	if testsize.Short() || raceEnabled {
		root = filepath.Join(root, "go")
	}
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no Go source tree at %s: %v", root, err)
	}
	srv := newServer(t)
	b := bucketAt(t, srv.URL, nil)
	path := writePack(t, os.DirFS(root))
	upload(t, b, "gosrc.pack", path)
	fi, _ := os.Stat(path)
	meta := fi.Size() - indexOff(t, path)
	local, err := packreader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()

	p, err := b.OpenPack(context.Background(), "gosrc.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var small string
	n, smalls := 0, 0
	err = fs.WalkDir(p, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() && fi.Size() > 0 && fi.Size() < 2000 {
			if smalls++; smalls == 20 { // not one beside the header
				small = name
			}
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	t.Logf("%s: %d entries, pack %d bytes, index to end %d bytes; open and cold walk: %d requests, %d bytes (%.3fx)",
		root, n, fi.Size(), meta, st.Gets, st.Bytes, float64(st.Bytes)/float64(meta))
	if float64(st.Bytes) > 1.1*float64(meta) {
		t.Errorf("cold walk: %d bytes, want ≤ 1.1 × %d", st.Bytes, meta)
	}
	// Tables of at most 4 MiB come whole with the open's second
	// request; larger ones a 64 KiB group at a time, fewer where
	// read-ahead joins them.
	if limit := 2 + (meta+64<<10-1)/(64<<10); meta > 4<<20 && st.Gets > limit || meta <= 4<<20 && st.Gets > 2 {
		t.Errorf("open and walk: %d requests, want ≤ %d", st.Gets, max(2, limit))
	}
	want, _ := local.ReadFile(small)
	got, err := p.ReadFile(small)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: %v", small, err)
	}
	if d := b.Stats().Gets - st.Gets; d != 1 {
		t.Errorf("small file %s: %d requests, want 1", small, d)
	}
	st = b.Stats()
	if _, err := p.ReadFile(small); err != nil {
		t.Fatal(err)
	}
	if d := b.Stats().Gets - st.Gets; d != 0 {
		t.Errorf("warm: %d requests, want 0", d)
	}
}
