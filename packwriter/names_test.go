package packwriter_test

import (
	"bytes"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// named is a FileInfo.Sys with an owner and its names, as a pack's.
type named struct {
	uid, gid    uint32
	user, group string
}

func (s *named) Owner() (uint32, uint32)      { return s.uid, s.gid }
func (s *named) OwnerNames() (string, string) { return s.user, s.group }

// TestIssue16OwnerNames: a pack of a host directory records the names
// this machine gives its owners' ids, a repack keeps them, with and
// without compression, and a pack without names (a MapFS) has none.
func TestIssue16OwnerNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		t.Fatalf("this machine has no name for uid %d: %v", uid, err)
	}
	g, err := user.LookupGroupId(strconv.Itoa(gid))
	if err != nil {
		t.Fatalf("this machine has no name for gid %d: %v", gid, err)
	}
	for _, opts := range [][]packwriter.Option{nil, {packwriter.WithCompression(3)}} {
		r, _ := open(t, os.DirFS(dir), opts...)
		s := sysOf(t, r, "f")
		if s.Uid != uint32(uid) || s.User != u.Username || s.Group != g.Name {
			t.Errorf("f: %d %q %q, want %d %q %q", s.Uid, s.User, s.Group, uid, u.Username, g.Name)
		}
		// Repacking the pack keeps the names.
		r2, _ := open(t, r, opts...)
		if s2 := sysOf(t, r2, "f"); s2.User != s.User || s2.Group != s.Group {
			t.Errorf("repacked: %q %q, want %q %q", s2.User, s2.Group, s.User, s.Group)
		}
	}
	m := fstest.MapFS{
		"a": {Data: []byte("a"), Sys: &named{7, 8, "seven", "eight"}},
		"b": {Data: []byte("b"), Sys: &named{7, 9, "other", ""}},
		"c": {Data: []byte("c"), Sys: &named{10, 11, "bad:name", "bad/name"}},
		"d": {Data: []byte("d")},
	}
	r, _ := open(t, m)
	for name, want := range map[string][2]string{"a": {"seven", "eight"}, "b": {"seven", ""}, "c": {"", ""}, "d": {"", ""}} {
		if s := sysOf(t, r, name); s.User != want[0] || s.Group != want[1] {
			t.Errorf("%s: %q %q, want %q", name, s.User, s.Group, want)
		}
	}
	plain, _ := open(t, fstest.MapFS{"d": {Data: []byte("d")}})
	if s := sysOf(t, plain, "d"); s.User != "" || s.Group != "" {
		t.Errorf("a pack without names: %q %q", s.User, s.Group)
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, m, packwriter.WithFormat(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatalf("format 2 with owners given: %v", err)
	}
}
