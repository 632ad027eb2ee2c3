package workload

import (
	"errors"
	"io/fs"
	"testing"
)

// TestRemoveAll checks RemoveAll on every writable kind: it removes a
// tree, and a missing name is not an error.
func TestRemoveAll(t *testing.T) {
	kinds := []Kind{KindMem, KindUnion, KindDirfs, KindAdapter, KindOS, KindOSFsync,
		KindOSRoot, KindMemMapFs, KindOsFs, KindBilly}
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			var dir string
			if k.Host {
				dir = t.TempDir()
			}
			fsys, err := k.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			run, sub := fsys.Path("run"), fsys.Path("run/d")
			err = Join(fsys.Mkdir(run), fsys.Mkdir(sub), fsys.Create(fsys.Path("run/d/f"), Payload(3)),
				fsys.RemoveAll(run))
			if err != nil {
				t.Fatal(err)
			}
			if err := fsys.Stat(run); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Stat after RemoveAll: %v", err)
			}
			if err := fsys.RemoveAll(run); err != nil {
				t.Fatalf("RemoveAll of a missing name: %v", err)
			}
		})
	}
}
