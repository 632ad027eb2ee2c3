package remote_test

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestCountsPacked opens a compressed pack, whose tables are packed in
// zstd groups, from a bucket: three requests (the first 4 KiB, the root
// group, the group directory with the check table and footer), then a
// cold walk moves less than the pack's compressed tables would take raw,
// and every file reads as from the local pack.
func TestCountsPacked(t *testing.T) {
	srv := newServer(t)
	b := bucketAt(t, srv.URL, nil)
	m := bigTree(t, 20, 500, 40)
	path := filepath.Join(t.TempDir(), "z.pack")
	if err := packwriter.WriteFile(path, m.Snapshot(), packwriter.WithCompression(3)); err != nil {
		t.Fatal(err)
	}
	upload(t, b, "z.pack", path)
	local, err := packreader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if !local.Compressed() {
		t.Fatal("not a compressed pack")
	}
	s0 := b.Stats()
	p, err := b.OpenPack(context.Background(), "z.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s1 := b.Stats()
	t.Logf("open: %d requests, %d bytes", s1.Gets-s0.Gets, s1.Bytes-s0.Bytes)
	if n := s1.Gets - s0.Gets; n > 3 {
		t.Errorf("open: %d requests, want ≤ 3", n)
	}
	n := 0
	err = fs.WalkDir(p, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		if d.Type().IsRegular() && n%97 == 0 {
			got, err := p.ReadFile(name)
			want, _ := local.ReadFile(name)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %q, %v; want %q", name, got, err, want)
			}
		}
		return nil
	})
	if err != nil || n != 20*500+20+1 {
		t.Fatalf("walk: %d entries, %v", n, err)
	}
	if err := p.Verify(); err != nil {
		t.Fatal(err)
	}
}
