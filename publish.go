package packfs

import (
	"fmt"
	"io/fs"
	"time"

	"github.com/packfs/packfs/vfs"
)

// Publisher is told of each checkpoint of a store (Options.Publisher),
// after its pack is written and synced and before the store's manifest
// names it: it may copy the packs elsewhere (a bucket, say) and publish
// the checkpoint there. If it fails, the checkpoint fails as a failed
// manifest write does: the store goes on over its old packs, the log
// keeps every change, and the next checkpoint takes a new generation.
// It is called from the checkpoint's goroutine, one checkpoint at a
// time, without the writers' lock: writers go on while it runs.
type Publisher interface {
	PublishCheckpoint(c *Checkpoint) error
}

// Checkpoint is what a Publisher is given: the generation and the packs
// that hold the whole checkpointed tree, top first, and the root
// directory's time and mode.
type Checkpoint struct {
	Generation uint64
	RootTime   time.Time
	RootMode   fs.FileMode
	Packs      []CheckpointPack
}

// CheckpointPack is one pack of a checkpoint. Its name is unique within
// the store (a generation's pack keeps its name for as long as it
// exists); Open opens it for reading, and the caller closes it.
type CheckpointPack struct {
	Name string
	Size int64
	Open func() (vfs.File, error)
}

// publish hands next, whose packs are keep, to the Publisher, if any.
func (s *Store) publish(next manifest, keep []*openPack) error {
	if s.opts.Publisher == nil {
		return nil
	}
	c := &Checkpoint{Generation: next.gen, RootTime: time.Unix(0, next.root), RootMode: fs.FileMode(next.mode)}
	for _, p := range keep {
		name := p.name
		c.Packs = append(c.Packs, CheckpointPack{Name: name, Size: p.ref.size, Open: func() (vfs.File, error) {
			return s.dir.OpenFile(name, 0, 0)
		}})
	}
	if err := s.opts.Publisher.PublishCheckpoint(c); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}
