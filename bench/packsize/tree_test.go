package packsize

import (
	"io/fs"
	"slices"
	"testing/fstest"
	"time"
)

// fstestTree is a tree of files by path.
type fstestTree map[string][]byte

func (t fstestTree) fs() fs.FS {
	m := fstest.MapFS{}
	t0 := time.Unix(1.7e9, 0)
	for p, b := range t {
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644, ModTime: t0}
	}
	return m
}

func sortedKeys(t fstestTree) []string {
	out := make([]string, 0, len(t))
	for k := range t {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
