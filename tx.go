package packfs

import (
	"errors"
	"fmt"
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
	s    *Store
	fs   *FS // its changes, over a snapshot of the store
	now  time.Time
	ops  []op
	done bool
}

// Update runs fn as a transaction. If fn returns nil, its changes apply
// to the store atomically and, unless the policy is SyncNone, are durable
// when Update returns; a crash at any moment leaves all of them or none.
// If fn returns an error or panics, nothing applies, and Update returns
// the error or re-panics.
//
// Transactions and other changes run one at a time; readers of the store
// go on meanwhile, and see a transaction's changes all at once, when it
// applies. A file opened before then sees them one by one.
//
// fn must change the store only through tx: a change of the store itself
// made inside fn (s.WriteFile, a write to a file of s, s.Update,
// s.Checkpoint, s.Close) would wait for the transaction, which waits for
// fn, so it fails at once with an error wrapping ErrInTransaction.
// Changes from other goroutines wait for the transaction as usual.
func (s *Store) Update(fn func(tx *Tx) error) error {
	p, err := s.update(fn)
	if err != nil || p == 0 {
		return err
	}
	if s.opts.Sync != SyncNone {
		if err := s.sync(p); err != nil {
			return err
		}
	}
	s.maybeCheckpoint()
	return nil
}

// update runs the transaction and logs it, returning where its unit ends
// in the log (0: it changed nothing).
func (s *Store) update(fn func(tx *Tx) error) (wal.LSN, error) {
	if s.opts.Sync != SyncNone {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
	}
	if err := s.lockChange("update", "."); err != nil {
		return 0, err
	}
	defer s.wmu.Unlock()
	if err := s.usable("update", "."); err != nil {
		return 0, err
	}
	snap, err := s.live.Load().Snapshot()
	if err != nil {
		return 0, err
	}
	tx := &Tx{s: s}
	mode := fs.ModeDir | 0o755
	if fi, err := snap.Stat("."); err == nil {
		tx.now, mode = fi.ModTime(), fi.Mode()
	}
	// The snapshot's layers, not the snapshot itself, go below: one union
	// resolves a path once, where a union over a union would twice.
	tx.fs = New(newUpper(func() time.Time { return tx.now }, mode), snap.layers...)
	defer func() { tx.done = true }()
	if err := runCallback(s, fn, tx); err != nil {
		return 0, err
	}
	tx.done = true
	if len(tx.ops) == 0 {
		return 0, nil
	}
	entries := make([][]byte, 0, len(tx.ops))
	pre := undoPoint{top: snap.layers[0], lowers: snap.layers[1:]}
	s.frozen.Store(snap) // readers see the state before the transaction
	s.applying.Add(1)
	defer func() {
		if s.applying.Load()%2 == 1 {
			s.applying.Add(1)
		}
		s.frozen.Store(nil)
	}()
	for i, o := range tx.ops {
		s.now = time.Unix(0, o.time)
		if err := s.applyLive(o); err != nil {
			// The change applied to the snapshot, so it must apply here:
			// if not, memory and log disagree, and only a reopen mends it.
			return 0, s.breakAt(fmt.Errorf("packfs: transaction change %d of %d does not apply to the store: %w", i+1, len(tx.ops), err), pre)
		}
		es := o.entries()
		entries = append(entries, es...)
		if s.tail != nil {
			s.tail = append(s.tail, es...)
		}
	}
	p, err := s.log.Append(entries...)
	if err != nil {
		return 0, s.fail(err, &pre)
	}
	if s.opts.Sync != SyncNone {
		s.awaitSync(p, pre)
	}
	s.applying.Add(1)
	s.frozen.Store(nil) // and now the state after it
	return p, nil
}

// change applies o to the transaction's view and records it.
func (tx *Tx) change(o op, opName string) error {
	if tx.done {
		return layer.PathError(opName, o.path, fs.ErrClosed)
	}
	t := time.Now()
	tx.now, o.time = t, t.UnixNano()
	if err := apply(tx.fs, o); err != nil {
		return err
	}
	if o.data != nil {
		o.data = append([]byte(nil), o.data...)
	}
	tx.ops = append(tx.ops, o)
	return nil
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
	return tx.change(chtimesOp(name, atime, mtime), "chtimes")
}

// ErrInTransaction is wrapped by the error a change of a Store gives
// when it is made inside the callback of an Update of that store.
var ErrInTransaction = errors.New("packfs: store changed inside its own transaction")
