package mem_test

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// dump records every entry of fsys: type, mode, size, mtime and contents.
func dump(t *testing.T, fsys fs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		switch {
		case info.Mode().IsRegular():
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(fsys, name)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		out[name] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSnapshotsNeverChange applies random operations, through paths and
// through handles kept open, takes snapshots at random points, and checks
// at the end that each snapshot still shows exactly what it showed when it
// was taken; Check runs after every operation.
func TestSnapshotsNeverChange(t *testing.T) {
	seeds := 30
	if testsize.Short() {
		seeds = 5
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 99))
			fsys := mem.New()
			dirs := []string{".", "a", "a/b", "c", "a/b/d"}
			pick := func() string {
				return path.Join(dirs[rng.IntN(len(dirs))], fmt.Sprint("n", rng.IntN(4)))
			}
			for _, d := range dirs[1:] {
				if err := fsys.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			type snap struct {
				s    *mem.Snapshot
				want map[string]string
				step int
			}
			var snaps []snap
			var handles []layer.File
			for step := range 300 {
				switch op := rng.IntN(12); op {
				case 0, 1:
					fsys.WriteFile(pick(), []byte(fmt.Sprint("w", step)), 0o644)
				case 2:
					if f, err := fsys.OpenFile(pick(), os.O_RDWR|os.O_CREATE, 0o600); err == nil {
						handles = append(handles, f)
					}
				case 3, 4:
					if len(handles) > 0 {
						f := handles[rng.IntN(len(handles))]
						f.WriteAt([]byte(fmt.Sprint("h", step)), int64(rng.IntN(6)))
					}
				case 5:
					if len(handles) > 0 {
						handles[rng.IntN(len(handles))].Truncate(int64(rng.IntN(4)))
					}
				case 6:
					fsys.Rename(pick(), pick())
				case 7:
					fsys.Rename(dirs[1+rng.IntN(len(dirs)-1)], pick())
				case 8:
					fsys.Remove(pick())
				case 9:
					fsys.Mkdir(pick(), 0o750)
				case 10:
					fsys.Chmod(pick(), fs.FileMode(rng.IntN(0o777)))
				case 11:
					s := fsys.Snapshot()
					snaps = append(snaps, snap{s, dump(t, s), step})
				}
				if err := fsys.Check(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			for _, s := range snaps {
				got := dump(t, s.s)
				if fmt.Sprint(got) != fmt.Sprint(s.want) {
					t.Fatalf("snapshot of step %d changed:\n got %v\nwant %v", s.step, got, s.want)
				}
			}
			for _, f := range handles {
				f.Close()
			}
		})
	}
}
