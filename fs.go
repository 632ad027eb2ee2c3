// Package packfs is a layered filesystem that speaks io/fs.
//
// # Basics
//
// A PackFS tree is a stack of layers: one writable upper layer, usually
// held in memory with every state an immutable snapshot, over read-only
// lower layers such as mmap'd pack files, contained host directories or
// snapshots. [New] stacks them into an [FS], which is an [io/fs.FS] (pass
// it to fs.WalkDir, http.FileServerFS, template.ParseFS or fstest.TestFS
// as it is) and implements the write contract of package layer.
//
// # Union semantics
//
// The union behaves as one directory on Linux does through package os:
//
//   - Reads fall through the upper layer, then the lowers in order.
//     Directories of the same name merge; ReadDir lists each name once,
//     from the topmost layer holding it, sorted, in O(k log layers).
//   - Writing to a lower file, or changing its mode, owner or times, first
//     copies it up with its owner, mode, mtime and contents. With an upper layer of
//     package mem the copy, with any missing parent directories, is built
//     aside and published in one step, so that readers and snapshots see
//     the lower file or the whole copy, never a part; other upper layers
//     get it step by step, streamed. A read-only handle opened before the
//     copy-up follows it; one whose open runs beside it ends on the copy.
//   - Removing a name a lower layer holds records a whiteout in the upper
//     layer, so the lower version never comes back. RemoveAll of a
//     directory costs one upper operation and one whiteout, whatever it
//     holds. A directory made where a lower one was removed is opaque: the
//     lower contents stay hidden.
//   - Rename works for files and for directories in any layer; there is no
//     EXDEV. A directory with lower contents is copied up whole first; the
//     move, and the whiteout it leaves, are one step of a mem upper layer.
//   - Paths resolve as on Linux, within its limits: 40 symlinks (ELOOP),
//     4,096 bytes for a path or a symlink target (ENAMETOOLONG; MkdirAll
//     of a longer path fails whole, where os.MkdirAll makes the parents
//     that fit, since a failed operation changes nothing). A
//     resolution costs time linear in the path's length, one lookup per
//     element and layer, where the layers look names up in a directory
//     found earlier (a LookupAt method: package mem, packreader and
//     unions without mounts have one); other fs.FS layers are asked by
//     the whole path at each element.
//   - [FS.Snapshot] returns an immutable union in O(1): a snapshot of the
//     upper layer over the same lowers.
//   - Creating a name applies Linux's limits (see package layer's Names)
//     before anything is copied up, so a refused creation leaves even the
//     upper layer as it was. Mkdir in a setgid directory, of any layer,
//     makes a setgid directory, as on Linux.
//
// # Concurrency
//
// Any number of goroutines may use one FS. Reads take no lock: they go
// straight to the layers; writes serialize on one mutex, since a copy-up
// takes several steps of the upper layer. A read that resolves a name
// and then fails to read what it found, while a writer held the mutex
// in between (a removal or rename that left a whiteout there), waits for
// that writer and reads again, so that it never reports a state the
// union did not have; no other read waits. A read of a name in a
// directory that one lower layer alone holds asks that layer only; a read
// in any other directory (the root, one that merges layers) looks the
// last element up in the layers' handles on its directory, which the
// union keeps until a write changes which layers merge into a directory
// (a copy-up, removal or rename of a directory, a mount), so that its
// cost does not grow with the path's depth. Adding and removing files
// keeps them, given an upper layer of package mem, whose handles follow
// its changes. A regular file of a pack opens in the lookup that finds it
// (packreader's OpenAt), with the union's handle in the same allocation;
// an open handle of a lower file waits for a copy-up on a short lock of
// its path's hash bucket, which readers of other files seldom share.
//
// # Durability
//
// [Open] returns a [Store]: the same union kept in a directory, so that it
// survives a crash. Every change is written ahead to a log (package wal)
// before it is acknowledged, and replayed when the store opens. Under the
// default policy, [SyncOnCommit], changes are durable at File.Sync,
// [Store.Sync], the commit of a transaction ([Store.Update]) and Close;
// [SyncAlways] makes each one durable before it returns, and committers
// waiting at the same moment share one fdatasync. A checkpoint writes the
// upper layer out as a delta pack and a new manifest, atomically, and
// drops the log it covers (owners go into the pack's attribute table); it
// runs by itself as the log grows, and
// flattens the stack once it holds [Options.MaxPacks] packs. After a
// crash, the store reopens to exactly the state after some prefix of its
// changes, one that includes every acknowledged one.
//
// Damage that no crash explains is refused, not read past: Open fails
// with an error wrapping [ErrCorrupt] when a pack the manifest lists is
// missing, cut short or replaced by another (the manifest records each
// pack's size and a sum of its check table and footer), when a log
// segment is missing, emptied or shorter than it had been made durable
// (each segment's header keeps the offset known durable, and says when
// another follows it), and when the manifest names a segment that is
// gone. What a crash does leave, a torn unsynced tail or preallocated
// zeros, still recovers. Stores written by earlier versions (manifest and
// segments of version 1) open as before and gain these checks at their
// next checkpoint; earlier versions refuse a store written by this one
// with an error wrapping ErrCorrupt ("unknown version line").
//
// A read-only open ([Options.ReadOnly]) reads beside the writer without a
// lock: one that meets a checkpoint in flight (a manifest replaced, the
// segments and packs it named removed) starts again, so that it returns a
// state the writer made whole.
//
// A change that fails leaves the tree as it was. When the log's write or
// sync fails (a full disk), every change whose call returns the failure
// is undone: readers, snapshots and open files see from then on the state
// before the first of them, and every later change fails; the store must
// be reopened. Changes already acknowledged stay in view, as written data
// stays in Linux's page cache after a failed fsync, though under
// SyncOnCommit a reopen loses those no sync had made durable. A
// checkpoint that fails costs nothing the log does not hold: the store
// goes on, and a later checkpoint tries again. Names Linux refuses (a NUL
// byte, an element past 255 bytes, a path of 4,096 bytes or more) are
// refused before they are logged, with EINVAL or ENAMETOOLONG. Every
// method of a closed store fails with fs.ErrClosed.
//
// # Lowers
//
// A store can sit over read-only lower layers ([Options.Lowers]: packs,
// host directories, any fs.FS), as an overlayfs upperdir sits over its
// lowerdirs: its tree is their union with its own packs and changes on
// top. Removing or renaming a name of a lower records a whiteout, a
// directory made where a lower one was removed is opaque, and these are
// changes like any other: logged, durable at a sync, written into the
// store's packs by checkpoints. The lowers are never written: a
// checkpoint writes only the store's own changes, and a flatten merges
// only the store's packs, keeping the whiteouts and opaque directories
// that hide what the lowers hold. The log holds changes made over the
// lowers, so the manifest records them (a pack by its size and sum, any
// other layer by its place), and an open over other lowers, over none, or
// with lowers given to a store made without them fails with an error
// wrapping [ErrLowers]. A lower that is not a pack (a host directory) may
// change while the store is closed, since Close checkpoints a store
// over one first; after a crash the log replays over it as it is then.
// This is what packfs mount --upper DIR serves.
//
// # Packages
//
//   - [github.com/packfs/packfs/layer]: the contract every layer meets (the
//     write-extension interfaces, the writable File, errors, whiteouts) and
//     helpers that fall back when a layer lacks a capability;
//   - [github.com/packfs/packfs/layer/mem]: the writable in-memory layer,
//     with O(1) snapshots and readers that never wait on locks;
//   - [github.com/packfs/packfs/treap]: the persistent ordered map under it;
//   - [github.com/packfs/packfs/conformance]: the test suite every backend
//     passes, exported for downstream backends;
//   - [github.com/packfs/packfs/wal]: the store's write-ahead log;
//   - [github.com/packfs/packfs/vfs]: the file-system seam the store writes
//     through, with a crash-simulating test implementation in vfs/vfstest.
//
// # Caveats
//
// The union's root directory shows the upper layer's root attributes.
// Renaming a directory whose contents live in lower layers copies them up,
// so it costs in proportion to them. A union hides whiteouts rather than
// showing them, so it cannot itself be another union's upper layer; put
// its snapshot below instead.
package packfs
