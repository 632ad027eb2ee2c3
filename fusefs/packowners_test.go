package fusefs_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// TestMountedPackOwners: a mounted pack, served through the raw API,
// shows the owners the pack records, and the mount's where it records
// none, as the node API does for other layers.
func TestMountedPackOwners(t *testing.T) {
	m := mem.New()
	for _, name := range []string{"f", "g", "h"} {
		if err := m.WriteFile(name, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	for name, ids := range map[string][2]int{"f": {1234, 5678}, "g": {1000, -1}, "d": {42, 43}} {
		if err := m.Lchown(name, ids[0], ids[1]); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := packwriter.Write(&buf, m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	pack, err := packreader.OpenReaderAt(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := mountT(t, pack, nil)
	uid, gid := lstatOwner(t, dir) // the mount's: the root has no owner
	for name, want := range map[string][2]uint32{"f": {1234, 5678}, "g": {1000, gid}, "h": {uid, gid}, "d": {42, 43}} {
		if u, g := lstatOwner(t, filepath.Join(dir, name)); u != want[0] || g != want[1] {
			t.Errorf("%s through the mount: %d:%d, want %d:%d", name, u, g, want[0], want[1])
		}
	}
}
