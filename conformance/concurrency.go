package conformance

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/packfs/packfs/internal/testsize"
)

var _ = register("Concurrent", testConcurrent)

// testConcurrent runs goroutines that create, write, read, rename and
// remove files of their own directories while all of them read shared files
// (and take snapshots, where the backend offers them); then it checks the
// final state against what each goroutine did. Run it under -race.
func testConcurrent(t *testing.T, newFS NewFS, _ *config) {
	fsys := newFS(t)
	mkdir(t, fsys, "shared")
	const nShared = 8
	shared := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "shared %d\n", i), 100+i) }
	for i := range nShared {
		must(t, "WriteFile", fsys.WriteFile(fmt.Sprintf("shared/s%d", i), shared(i), 0o644))
	}
	workers, iters := 8, 300
	if testsize.Short() {
		iters = 100
	}
	snapshot, _ := snapshotOf(fsys)
	models := make([]map[string]string, workers)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			dir := fmt.Sprintf("g%d", g)
			model := map[string]string{}
			models[g] = model
			if err := fsys.Mkdir(dir, 0o755); err != nil {
				t.Errorf("Mkdir(%s): %v", dir, err)
				return
			}
			for i := range iters {
				name := fmt.Sprintf("f%d", i%7)
				p := dir + "/" + name
				content := fmt.Sprintf("%d/%d", g, i)
				var err error
				switch i % 6 {
				case 0, 1:
					err = fsys.WriteFile(p, []byte(content), 0o644)
					if err == nil {
						model[name] = content
					}
				case 2:
					var f interface {
						Write([]byte) (int, error)
						Close() error
					}
					f, err = fsys.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
					if err == nil {
						_, err = f.Write([]byte(content))
						if cerr := f.Close(); err == nil {
							err = cerr
						}
						model[name] += content
					}
				case 3:
					if _, exists := model[name]; exists {
						to := fmt.Sprintf("r%d", i%5)
						err = fsys.Rename(p, dir+"/"+to)
						model[to] = model[name]
						delete(model, name)
					}
				case 4:
					if _, exists := model[name]; exists {
						err = fsys.Remove(p)
						delete(model, name)
					}
				case 5:
					if want, exists := model[name]; exists {
						var data []byte
						data, err = fsys.ReadFile(p)
						if err == nil && string(data) != want {
							t.Errorf("ReadFile(%s) = %q, want %q", p, data, want)
						}
					}
				}
				if err != nil {
					t.Errorf("worker %d, step %d: %v", g, i, err)
					return
				}
				s := (g + i) % nShared
				if data, err := fsys.ReadFile(fmt.Sprintf("shared/s%d", s)); err != nil || !bytes.Equal(data, shared(s)) {
					t.Errorf("ReadFile(shared/s%d) = %d bytes, %v", s, len(data), err)
					return
				}
				if i%10 == 0 {
					if list, err := fsys.ReadDir("shared"); err != nil || len(list) != nShared {
						t.Errorf("ReadDir(shared) = %d entries, %v", len(list), err)
						return
					}
					if _, err := fsys.ReadDir("."); err != nil {
						t.Errorf("ReadDir(.): %v", err)
						return
					}
				}
				if snapshot != nil && i%25 == 0 {
					view := snapshot()
					if data, err := fs.ReadFile(view, "shared/s0"); err != nil || !bytes.Equal(data, shared(0)) {
						t.Errorf("snapshot: ReadFile(shared/s0) = %d bytes, %v", len(data), err)
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for g, model := range models {
		dir := fmt.Sprintf("g%d", g)
		got := readDirNames(t, fsys, dir)
		if want := slices.Sorted(maps.Keys(model)); !slices.Equal(got, want) {
			t.Errorf("ReadDir(%s) = %v, want %v", dir, got, want)
			continue
		}
		for name, want := range model {
			wantContent(t, fsys, dir+"/"+name, want)
		}
	}
}
