package packfs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
)

// aliasWriter is what the cases of TestStoreReadOnlyHandleByAlias change
// the tree through: the store, or a host directory through os.
type aliasWriter interface {
	Rename(oldname, newname string) error
	Remove(name string) error
	WriteFile(name string, data []byte, perm fs.FileMode) error
	Mkdir(name string, perm fs.FileMode) error
	Symlink(oldname, newname string) error
	OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error)
}

// hostTree is aliasWriter over a host directory.
type hostTree string

func (h hostTree) p(name string) string                   { return filepath.Join(string(h), filepath.FromSlash(name)) }
func (h hostTree) Rename(o, n string) error               { return os.Rename(h.p(o), h.p(n)) }
func (h hostTree) Remove(name string) error               { return os.Remove(h.p(name)) }
func (h hostTree) Mkdir(name string, m fs.FileMode) error { return os.Mkdir(h.p(name), m) }
func (h hostTree) Symlink(o, n string) error              { return os.Symlink(o, h.p(n)) }
func (h hostTree) WriteFile(name string, b []byte, m fs.FileMode) error {
	return os.WriteFile(h.p(name), b, m)
}
func (h hostTree) OpenFile(name string, flag int, m fs.FileMode) (layer.File, error) {
	return os.OpenFile(h.p(name), flag, m)
}

// TestStoreReadOnlyHandleByAlias: a file opened for reading by a name
// that holds a symlink (a link to the file, or a link to its directory)
// is the file it was opened as, whatever later happens to that name. A
// checkpoint moves every open file to the new tree by the name the store
// keeps for it; that name must be the file's own, not the alias, or the
// handle moves to whatever the alias names by then (another file), or
// loses its file when the alias goes and stops seeing its writes.
func TestStoreReadOnlyHandleByAlias(t *testing.T) {
	writeA := func(w aliasWriter) error {
		f, err := w.OpenFile("d1/a", os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write([]byte("NEW"))
		return err
	}
	cases := []struct {
		name   string
		open   string // opened for reading before change
		change func(w aliasWriter) error
		after  func(w aliasWriter) error // after the checkpoint
	}{
		{name: "file link, target renamed over", open: "lf",
			change: func(w aliasWriter) error { return w.Rename("c", "d1/a") }},
		{name: "dir link, target renamed over", open: "ln/a",
			change: func(w aliasWriter) error { return w.Rename("c", "d1/a") }},
		{name: "dir link, target renamed over by alias", open: "ln/a",
			change: func(w aliasWriter) error { return w.Rename("c", "ln/a") }},
		{name: "dir link, target removed and made again", open: "ln/a",
			change: func(w aliasWriter) error {
				if err := w.Remove("d1/a"); err != nil {
					return err
				}
				return w.WriteFile("d1/a", []byte("new"), 0o644)
			}},
		{name: "dir link, directory renamed and made again", open: "ln/a",
			change: func(w aliasWriter) error {
				if err := w.Rename("d1", "d9"); err != nil {
					return err
				}
				if err := w.Mkdir("d1", 0o755); err != nil {
					return err
				}
				return w.WriteFile("d1/a", []byte("new"), 0o644)
			}},
		{name: "file link removed, file written after", open: "lf",
			change: func(w aliasWriter) error { return w.Remove("lf") },
			after:  writeA},
		{name: "file link retargeted, file written after", open: "lf",
			change: func(w aliasWriter) error {
				if err := w.Remove("lf"); err != nil {
					return err
				}
				return w.Symlink("c", "lf")
			},
			after: writeA},
		{name: "dir link removed, file written after", open: "ln/a",
			change: func(w aliasWriter) error { return w.Remove("ln") },
			after:  writeA},
	}
	for _, packed := range []bool{false, true} {
		for _, c := range cases {
			name := c.name
			if packed {
				// The tree is checkpointed before the open: the file and
				// the links are the pack's, read through the union's
				// lower layers.
				name += ", packed"
			}
			t.Run(name, func(t *testing.T) {
				testAliasHandle(t, c.open, c.change, c.after, packed)
			})
		}
	}
}

func testAliasHandle(t *testing.T, open string, change, after func(aliasWriter) error, packed bool) {
	// One sequence on the store and on a host directory through os.
	s, err := packfs.Open(t.TempDir(), &packfs.Options{Sync: packfs.SyncNone, CheckpointBytes: -1})
	mustDo(t, err)
	defer s.Close()
	trees := []aliasWriter{s, hostTree(t.TempDir())}
	var reads [2]string
	for i, w := range trees {
		mustDo(t, w.Mkdir("d1", 0o755))
		mustDo(t, w.WriteFile("d1/a", []byte("old contents"), 0o644))
		mustDo(t, w.WriteFile("c", []byte("other file"), 0o644))
		mustDo(t, w.Symlink("d1", "ln"))
		mustDo(t, w.Symlink("d1/a", "lf"))
		if packed && i == 0 {
			mustDo(t, s.Checkpoint())
		}
		h, err := w.OpenFile(open, os.O_RDONLY, 0)
		mustDo(t, err)
		defer h.Close()
		mustDo(t, change(w))
		if i == 0 {
			mustDo(t, s.Checkpoint())
		}
		if after != nil {
			mustDo(t, after(w))
		}
		b := make([]byte, 64)
		n, _ := h.ReadAt(b, 0)
		reads[i] = string(b[:n])
	}
	if reads[0] != reads[1] {
		t.Errorf("after a checkpoint, the file opened as %q reads %q; os reads %q", open, reads[0], reads[1])
	}
}
