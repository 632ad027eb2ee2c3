package suite

import (
	"os"

	"github.com/packfs/packfs/bench/internal/workload"
)

// Target is a kind of file system in one place: in memory, or in a host
// directory.
type Target struct {
	Kind  workload.Kind
	Where string // Memory or the place's name
	place Place
}

// Targets returns each kind once, in memory, or once per place for a host
// kind (only in the first place when firstOnly).
func (c *Ctx) Targets(kinds ...workload.Kind) []Target {
	var out []Target
	for _, k := range kinds {
		if !k.Host {
			out = append(out, Target{Kind: k, Where: Memory})
			continue
		}
		for _, p := range c.Places {
			out = append(out, Target{Kind: k, Where: p.Name, place: p})
		}
	}
	return out
}

// Spec returns the row spec of the target with size n, ops operations and
// bytes bytes per run.
func (t Target) Spec(n, ops int, bytes int64) Spec {
	return Spec{Backend: t.Kind.Name, Where: t.Where, N: n, Ours: t.Kind.Ours, Ops: ops, Bytes: bytes}
}

// New returns a new, empty file system of the target; a host one lives in
// a new directory of its place, removed by Close.
func (t Target) New(c *Ctx) (workload.FS, error) {
	if !t.Kind.Host {
		return t.Kind.New("")
	}
	dir, err := c.TempDir(t.place)
	if err != nil {
		return nil, err
	}
	fsys, err := t.Kind.New(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return fsys, nil
}

// Run runs f on a new, empty file system of t and closes it, and returns
// the first error of the three.
func (t Target) Run(c *Ctx, f func(fsys workload.FS) error) error {
	fsys, err := t.New(c)
	if err != nil {
		return err
	}
	err = f(fsys)
	if cerr := fsys.Close(); err == nil {
		err = cerr
	}
	return err
}
