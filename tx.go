package packfs

import (
	"bytes"
	"errors"
	"io/fs"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/wal"
)

// Tx is a transaction of a Store: the changes made through it apply
// together or not at all, and become durable with one log sync. Reads
// through it see its own changes over the store as it was when the
// transaction began. A Tx is valid only inside the function given to
// Update, and only on that function's goroutine.
type Tx struct {
	s  *Store
	fs *FS // the live union, which its changes apply to
	// log holds the log entries of the changes made so far, one after
	// another: entry i ends at ends[i].
	log  []byte
	ends []int
	// names holds the names open handles had before the transaction
	// changed them, so that a transaction undone gives them back.
	names map[*storeFile]string
	done  bool
	// changes are what the store's watchers get at the commit.
	changes []layer.Change
}

// Update runs fn as a transaction. If fn returns nil, its changes apply
// to the store atomically and, unless the policy is SyncNone, are durable
// when Update returns; a crash at any moment leaves all of them or none.
// If fn returns an error or panics, nothing applies, and Update returns
// the error or re-panics.
//
// Transactions and other changes run one at a time; readers of the store
// go on meanwhile, and see a transaction's changes all at once, when it
// commits. Each change applies once, to the store's own tree, as fn makes
// it, while readers see the state before the transaction: so a file
// opened before the transaction sees its changes as they are made, and
// sees them go again if the transaction does not commit. So does a
// directory opened before it, in the listing its first ReadDir takes. A
// file opened while the transaction runs is opened in the state before
// it; when the transaction commits, the file moves to the state after
// it, under the name the transaction's renames gave it, and sees later
// writes as any open file does.
//
// fn must change the store only through tx: a change of the store itself
// made inside fn (s.WriteFile, a write to a file of s, s.Update,
// s.Checkpoint, s.Close) would wait for the transaction, which waits for
// fn, so it fails at once with an error wrapping ErrInTransaction.
// Changes from other goroutines wait for the transaction as usual.
func (s *Store) Update(fn func(tx *Tx) error) error {
	if s.opts.Sync != SyncNone {
		defer s.committing()()
	}
	p, err := s.update(fn)
	if err != nil || p == 0 {
		return err
	}
	if s.opts.Sync != SyncNone {
		if err := s.commitSync(p); err != nil {
			return err
		}
	}
	s.maybeCheckpoint()
	return nil
}

// update runs the transaction and logs it, returning where its unit ends
// in the log (0: it changed nothing).
//
// The changes apply to the live union as fn makes them, once: readers
// see the state before them (frozen) meanwhile. A transaction that does
// not commit is undone by going back to that state: a fresh upper layer
// over the frozen state's layers, its upper layer's snapshot among them,
// until the next checkpoint writes that layer out as a pack of its own
// (see undo).
func (s *Store) update(fn func(tx *Tx) error) (wal.LSN, error) {
	if s.opts.Sync != SyncNone {
		s.inflight.Add(1)
		defer s.leaveFlight()
	}
	if err := s.lockChange("update", "."); err != nil {
		return 0, err
	}
	defer s.wmu.Unlock()
	if err := s.usable("update", "."); err != nil {
		return 0, err
	}
	u := s.live.Load()
	snap, err := u.Snapshot()
	if err != nil {
		return 0, err
	}
	tx := &Tx{s: s, fs: u, log: s.txLog[:0], ends: s.txEnds[:0]}
	pre := undoPoint{top: snap.layers[0], lowers: snap.layers[1:]}
	s.beginTx(snap)
	s.frozen.Store(snap) // readers see the state before the transaction
	s.applying.Add(1)
	settled := false
	defer func() {
		tx.done = true
		if !settled && len(tx.ends) > 0 {
			s.undo(tx, snap) // fn failed or panicked
		}
		if s.applying.Load()%2 == 1 {
			s.applying.Add(1)
		}
		s.frozen.Store(nil)
		s.endTx(snap)
	}()
	if err := runCallback(s, fn, tx); err != nil {
		return 0, err
	}
	tx.done = true
	settled = true
	if len(tx.ends) == 0 {
		return 0, nil
	}
	es := tx.entries()
	if s.tail != nil {
		// A checkpoint runs, and keeps what is logged meanwhile: its own
		// copy, which the next transaction's buffers do not overwrite.
		tail := bytes.Clone(tx.log)
		for _, e := range es {
			s.tail = append(s.tail, tail[:len(e):len(e)])
			tail = tail[len(e):]
		}
	}
	p, err := s.log.Append(es...)
	tx.recycle(es)
	if err != nil {
		return 0, s.fail(err, &pre) // readers go back to pre for good
	}
	if s.opts.Sync != SyncNone {
		s.awaitSync(p, pre)
	}
	s.applying.Add(1)
	s.frozen.Store(nil) // and now the state after it
	for _, c := range tx.changes {
		s.feed.Publish(c)
	}
	return p, nil
}

// beginTx starts the keeping of a transaction's moves for the files that
// will be opened beside it from snap, the state before it; s.wmu is
// held.
func (s *Store) beginTx(snap *FS) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	s.names.Add(1)
	s.txFrozen, s.txMoves = snap, s.txMoves[:0]
}

// endTx ends a transaction for the files opened beside it from snap, the
// state before it, which readers no longer see: those still there (it
// committed, or changed nothing) move to the live union, under the names
// its moves gave them, so that they see later writes as open files do;
// an undone transaction has moved them already. s.wmu is held.
func (s *Store) endTx(snap *FS) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	s.names.Add(1)
	u := s.live.Load()
	for h := range s.handles.all() {
		if h.in == snap {
			h.moveTo(u)
		}
	}
	s.txFrozen, s.txMoves = nil, s.txMoves[:0]
}

// maxStacked bounds the upper layers' snapshots that undone transactions
// leave below the live upper layer: one more starts a checkpoint, which
// writes them out as packs.
const maxStacked = 4

// undo goes back to snap, the state before the transaction tx, which did
// not commit; s.wmu is held. The live union's upper layer holds tx's
// changes, and snap's holds the state before them: a fresh upper layer
// over snap's layers is that state, writable. The open files move to it
// under the names they had before tx.
func (s *Store) undo(tx *Tx, snap *FS) {
	mode := fs.ModeDir | 0o755
	root := time.Now()
	fi, err := snap.Stat(".")
	if err == nil {
		root, mode = fi.ModTime(), fi.Mode()
	}
	s.now = root
	m := newUpper(s.clock, mode)
	if err == nil {
		keepRootOwner(m, fi)
	}
	u := New(m, snap.layers...)
	s.hmu.Lock()
	for h, p := range tx.names {
		h.path = p
	}
	for h := range s.handles.all() {
		if h.in == snap {
			h.path = h.before // opened beside tx, by its name before it
		}
		h.moveTo(u)
	}
	s.live.Store(u)
	s.hmu.Unlock()
	if s.limit >= 0 && len(u.layers)-1-len(s.packs)-len(s.opts.Lowers) > maxStacked && s.ckAuto.CompareAndSwap(false, true) {
		s.launchCheckpoint()
	}
}

// change applies o to the live union, whose readers see the state before
// the transaction, and records it.
func (tx *Tx) change(o op, opName string) error {
	if tx.done {
		return layer.PathError(opName, o.path, fs.ErrClosed)
	}
	s := tx.s
	o.time = time.Now().UnixNano()
	s.now = time.Unix(0, o.time) // as replay sets it
	switch o.kind {
	case opRename, opRemove, opRemoveAll:
		s.hmu.Lock()
		for h := range s.handles.all() {
			if _, ok := tx.names[h]; !ok {
				if tx.names == nil {
					tx.names = map[*storeFile]string{}
				}
				tx.names[h] = h.path
			}
		}
		s.hmu.Unlock()
	}
	if err := s.applyLive(o); err != nil {
		return err
	}
	tx.log, tx.ends = o.appendEntries(tx.log, tx.ends)
	if s.feed.Active() {
		tx.changes = append(tx.changes, changeOf(tx.fs, &o))
	}
	return nil
}

// entries returns the transaction's log entries, slices of tx.log, in a
// slice the store keeps for the next transaction.
func (tx *Tx) entries() [][]byte {
	es := tx.s.txEntries[:0]
	start := 0
	for _, end := range tx.ends {
		es = append(es, tx.log[start:end:end])
		start = end
	}
	return es
}

// maxRecycled bounds the bytes of entries a store keeps for its next
// transaction: a large one's buffer goes with it.
const maxRecycled = 1 << 20

// recycle gives the transaction's buffers, which the log has copied, to
// the next transaction; s.wmu is held.
func (tx *Tx) recycle(es [][]byte) {
	s := tx.s
	if cap(tx.log) > maxRecycled {
		return
	}
	clear(es)
	s.txLog, s.txEnds, s.txEntries = tx.log[:0], tx.ends[:0], es[:0]
	tx.log, tx.ends = nil, nil
}

// Reading: the transaction's view.

func (tx *Tx) Open(name string) (fs.File, error)          { return tx.fs.Open(name) }
func (tx *Tx) Stat(name string) (fs.FileInfo, error)      { return tx.fs.Stat(name) }
func (tx *Tx) Lstat(name string) (fs.FileInfo, error)     { return tx.fs.Lstat(name) }
func (tx *Tx) ReadDir(name string) ([]fs.DirEntry, error) { return tx.fs.ReadDir(name) }
func (tx *Tx) ReadFile(name string) ([]byte, error)       { return tx.fs.ReadFile(name) }
func (tx *Tx) ReadLink(name string) (string, error)       { return tx.fs.ReadLink(name) }

// Changing: recorded, applied to the store at commit.

func (tx *Tx) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return tx.change(op{kind: opWriteFile, path: name, a: int64(perm), data: data}, "open")
}
func (tx *Tx) Mkdir(name string, perm fs.FileMode) error {
	return tx.change(op{kind: opMkdir, path: name, a: int64(perm)}, "mkdir")
}
func (tx *Tx) MkdirAll(name string, perm fs.FileMode) error {
	return tx.change(op{kind: opMkdirAll, path: name, a: int64(perm)}, "mkdir")
}
func (tx *Tx) Remove(name string) error {
	return tx.change(op{kind: opRemove, path: name}, "remove")
}
func (tx *Tx) RemoveAll(name string) error {
	return tx.change(op{kind: opRemoveAll, path: name}, "unlinkat")
}
func (tx *Tx) Rename(oldname, newname string) error {
	return tx.change(op{kind: opRename, path: oldname, path2: newname}, "rename")
}
func (tx *Tx) Symlink(oldname, newname string) error {
	return tx.change(op{kind: opSymlink, path: oldname, path2: newname}, "symlink")
}
func (tx *Tx) Chmod(name string, mode fs.FileMode) error {
	return tx.change(op{kind: opChmod, path: name, a: int64(mode)}, "chmod")
}

// Chtimes changes name's times; a zero time leaves that one unchanged.
func (tx *Tx) Chtimes(name string, atime, mtime time.Time) error {
	return tx.change(chtimesOp(opChtimes, name, atime, mtime), "chtimes")
}

// Lchtimes changes name's own times, not following a final symlink.
func (tx *Tx) Lchtimes(name string, atime, mtime time.Time) error {
	return tx.change(chtimesOp(opLchtimes, name, atime, mtime), "lchtimes")
}

// Chown changes name's owner, following symlinks; -1 leaves an id.
func (tx *Tx) Chown(name string, uid, gid int) error {
	return tx.change(op{kind: opChown, path: name, a: int64(uid), b: int64(gid)}, "chown")
}

// Lchown changes name's owner without following a final symlink.
func (tx *Tx) Lchown(name string, uid, gid int) error {
	return tx.change(op{kind: opLchown, path: name, a: int64(uid), b: int64(gid)}, "lchown")
}

// ErrInTransaction is wrapped by the error a change of a Store gives
// when it is made inside the callback of an Update of that store.
var ErrInTransaction = errors.New("packfs: store changed inside its own transaction")
