package packfs

import (
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packwriter"
)

// Checkpoint writes the changes held in memory out as a new pack on top
// of the store's others, makes it the store's base with a new manifest,
// and drops the log it covers. The pack keeps the upper layer's whiteouts
// and opaque directories, so it stacks like an image layer. Readers and
// writers go on meanwhile; a crash at any point leaves the store as it
// was before or as it is after.
//
// A checkpoint that fails (a full disk, say) changes nothing the store
// relies on: the log still holds every change, so the store goes on and
// a later checkpoint tries again.
func (s *Store) Checkpoint() error { return s.checkpoint(false) }

// Flatten is a checkpoint that writes the whole tree, every pack's
// content included, as one pack without whiteouts, and then removes the
// packs it replaces. Over lowers (Options.Lowers) it writes the store's
// own packs and changes as one pack, with the whiteouts and opaque
// directories that hide what the lowers hold; the lowers stay as given.
func (s *Store) Flatten() error { return s.checkpoint(true) }

// maybeCheckpoint starts a background checkpoint once the log has passed
// the size limit. After one failed, the next waits until the log has
// grown by another quarter of the limit: a full disk is not hammered.
// After one that left files open for writing, it waits until the log
// holds as many bytes as they do: each checkpoint writes such a file
// whole into its pack, so a file written through one handle across
// checkpoints costs packs of a few times its size, as its size doubles
// from one to the next, rather than its size once per limit's worth.
func (s *Store) maybeCheckpoint() {
	if s.limit < 0 || s.log.Size() < max(s.limit, s.ckRetry.Load(), s.ckOpen.Load()) || !s.ckAuto.CompareAndSwap(false, true) {
		return
	}
	s.wmu.Lock()
	s.launchCheckpoint()
	s.wmu.Unlock()
}

// launchCheckpoint starts a background checkpoint, which the caller has
// claimed by setting ckAuto; s.wmu is held.
func (s *Store) launchCheckpoint() {
	if s.closing {
		s.ckAuto.Store(false)
		return
	}
	s.bg.Add(1) // before Close's Wait, which runs only after closing is set
	flatten := len(s.packs) >= s.maxPacks()
	go func() {
		defer s.bg.Done()
		defer s.ckAuto.Store(false)
		// A failure the log did not cause is retried later; one it did
		// is the store's sticky error, which every change reports.
		if err := s.checkpoint(flatten); err != nil {
			s.ckRetry.Store(s.log.Size() + max(s.limit/4, 1))
		}
	}()
}

func (s *Store) maxPacks() int {
	if s.opts.MaxPacks > 0 {
		return s.opts.MaxPacks
	}
	return 8
}

func (s *Store) checkpoint(flatten bool) error {
	if s.inCallback.Load() && withinCallback() {
		// It would wait for the transaction, which waits for it.
		return reentered("checkpoint", ".")
	}
	s.ckMu.Lock()
	defer s.ckMu.Unlock()

	// 1. Under the writers' lock: start a new log segment, and take the
	// snapshot it begins after.
	s.wmu.Lock()
	if err := s.usable("checkpoint", "."); err != nil {
		s.wmu.Unlock()
		return err
	}
	first, err := s.log.Rotate()
	if err != nil {
		s.wmu.Unlock()
		if s.log.SyncAll() != nil {
			return s.fail(err, nil) // the log failed, for good
		}
		// No new segment (a full disk): the log goes on in the old one.
		return fmt.Errorf("packfs: checkpoint: %w", err)
	}
	snap, err := s.live.Load().Snapshot()
	if err != nil {
		s.wmu.Unlock()
		return err
	}
	root, mode := s.man.root, fs.FileMode(s.man.mode)
	if fi, err := snap.Stat("."); err == nil {
		root, mode = fi.ModTime().UnixNano(), fi.Mode()
	}
	// What the packs do not hold: the upper layer, a delta, and the
	// snapshots of upper layers that undone transactions left below it
	// (see undo), each written as a pack of its own.
	// The lowers are never written: a flatten over them merges the
	// store's own layers into one that keeps the whiteouts and opaque
	// directories the lowers need (see delta).
	own := snap.layers[:len(snap.layers)-len(s.opts.Lowers)]
	srcs := own[:len(own)-len(s.packs)]
	switch {
	case flatten && len(s.opts.Lowers) == 0:
		srcs = []fs.FS{snap}
	case flatten:
		srcs = []fs.FS{&delta{layers: own}}
	}
	s.tail = [][]byte{}
	next := manifest{version: manifestVersion, gen: s.man.gen + 1, wal: first, root: root, mode: uint32(mode), lowers: s.man.lowers}
	s.wmu.Unlock()

	abandon := func(err error) error {
		s.wmu.Lock()
		s.tail = nil
		s.wmu.Unlock()
		return err
	}

	// 2. Without it: write the packs, bottom first, and the manifest.
	var made []*openPack // top first
	closeMade := func() {
		for _, p := range made {
			p.close()
		}
	}
	for i := len(srcs) - 1; i >= 0; i-- {
		if i < len(srcs)-1 {
			next.gen++
		}
		name := packName(next.gen)
		err = writeAtomic(s.dir, name, func(w io.Writer) error { return packwriter.Write(w, srcs[i]) })
		var p *openPack
		if err == nil {
			p, err = s.openPack(packRef{name: name})
		}
		if err != nil {
			closeMade()
			return abandon(err)
		}
		made = append([]*openPack{p}, made...)
	}
	keep := made
	if !flatten {
		keep = append(keep, s.packs...)
	}
	for _, q := range keep {
		next.packs = append(next.packs, q.ref) // size and sum, as opened
	}
	err = s.publish(next, keep)
	if err == nil {
		err = writeManifest(s.dir, next)
	}
	if err != nil {
		// The manifest may or may not have reached the disk: the new
		// pack must stay, and only a reopen knows which state is live.
		// The log still holds every change either way, so the store
		// goes on over its old packs; the next checkpoint takes a new
		// generation, never this one's pack's name.
		closeMade()
		s.wmu.Lock()
		s.tail = nil
		s.man.gen = next.gen
		s.wmu.Unlock()
		return fmt.Errorf("packfs: checkpoint: %w", err)
	}

	// 3. Under the writers' lock again: a fresh upper layer over the new
	// packs, with the changes made since step 1 applied to it, and the
	// open files moved to it. Only then is it published: a reader sees
	// the old union or the new one whole, never one whose files are
	// still being copied up for a writer that moves.
	s.wmu.Lock()
	old := s.packs
	s.man, s.packs = next, keep
	u := s.union(root, mode)
	// What the changes since step 1 and the open files copy up from the
	// top pack, the old upper layer holds in memory: the copies share it.
	u.shareFrom, _ = snap.layers[0].(*mem.Snapshot)
	var rerr error
	for _, e := range s.tail {
		o, err := decodeOp(e)
		if err == nil {
			s.now = time.Unix(0, o.time)
			err = apply(u, o)
		}
		if err != nil && rerr == nil {
			rerr = err
		}
	}
	s.tail = nil
	if rerr != nil {
		err := s.breakAt(fmt.Errorf("packfs: checkpoint: a change does not apply over the new pack: %w", rerr), s.undoPoint())
		s.wmu.Unlock()
		return err
	}
	s.hmu.Lock()
	var open int64
	stale := false // an open file left in an older union
	for h := range s.handles.all() {
		open += h.moveTo(u)
		stale = stale || h.in != u
	}
	u.shareFrom = nil
	s.live.Store(u)
	s.hmu.Unlock()
	// The next checkpoint writes the files open for writing whole again:
	// it waits until the log has grown by as much (see maybeCheckpoint).
	s.ckOpen.Store(open)
	var drop []*openPack
	if flatten {
		drop = old
		if stale {
			// A file the move left where it was reads that union's
			// packs as long as it is open: one no name reaches any more
			// (an unlinked file, whose data Linux keeps until its last
			// close), or a directory in the middle of its listing. The
			// oldest retired packs stay open until a flatten finds no
			// such file, or the store closes.
			s.kept = append(s.kept, s.retired[0]...)
		} else {
			for _, p := range s.kept {
				p.close()
			}
			for _, p := range s.retired[0] {
				p.close()
			}
			s.kept = nil
		}
		s.retired = [2][]*openPack{s.retired[1], old} // snapshots may still read them
	}
	s.wmu.Unlock()

	s.ckRetry.Store(0) // the next automatic one comes at the limit again

	// 4. Drop what the new manifest no longer needs.
	err = s.log.Drop(first)
	removed := false
	for _, p := range drop {
		if !next.has(p.name) {
			if rerr := s.dir.Remove(p.name); rerr == nil {
				removed = true
			}
		}
	}
	if removed {
		if serr := s.dir.SyncDir(); err == nil {
			err = serr
		}
	}
	return err
}
