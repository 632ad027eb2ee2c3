// Package mem is PackFS's writable in-memory layer.
//
// # Basics
//
// [New] returns an empty [FS]. It implements the whole write contract of
// package layer ([layer.FS]) and fs.ReadDirFS, fs.ReadFileFS, fs.StatFS,
// fs.ReadLinkFS and fs.GlobFS, and behaves as a directory on Linux does
// through package os: the same results and the same errors, wrapped in
// *fs.PathError (rename and symlink: *os.LinkError).
//
// # Snapshots
//
// [FS.Snapshot] returns the current state as an immutable [Snapshot] in
// O(1). A snapshot never sees a later write, and holding or reading one
// never delays a writer; taking one waits for a write in progress.
//
// # Concurrency
//
// Any number of goroutines may use one FS. Readers never take a lock: they
// follow atomic pointers from the root. Writers serialize on one mutex and
// make each operation visible with one atomic store, so a reader sees an
// operation (a new name, a removal, a rename, a WriteFile) whole or not at
// all; a directory's new modification time may show an instant after its
// new entry. A file's handles see a change of it through the file itself,
// and the paths to it through the directories above: the first change
// after a snapshot, which must link the file's new state into new states
// of those directories, reaches the handles first, so that a reader may
// see it through a handle an instant before through the file's path. A
// listing of the live layer taken while the directory changes
// holds, once and in order, every entry that stayed, and each concurrent
// change or not, as getdents does on Linux; a snapshot, or a directory
// handle after its first ReadDir, lists one state.
//
// # Structure and cost
//
// Directories are persistent treaps of their entries, linked as a tree of
// inodes. Each entry is a cell whose state a writer replaces in place until
// the next snapshot freezes it; after that, the first change below a frozen
// directory copies the path to it once. A directory's index works the same
// way (treap.SetOwned): between snapshots, adding or removing an entry
// links an expected O(1) new nodes into the index in place, where a
// persistent update would copy the O(log n) path to it. So between
// snapshots, writing a file costs O(1) in the tree, creating or removing
// an entry O(log n) time and O(1) memory in its directory, and renaming
// or removing a directory does not depend on what it holds; listing k
// entries costs O(k + log n). A directory of the live layer with 64
// entries or more that is read also keeps a hash index of them, which
// lookups of the live layer ask first, without a lock: a name costs one
// probe there, in expected O(1), where the treap takes O(log n) dependent
// loads. The treap stays the truth (snapshots, listings and every edit
// use it), and a lookup that meets the index in the middle of a change
// asks the treap instead, so that the index never shows an operation half
// done. It costs about 9 bytes a slot, 18 an entry at 1,000, and every
// write to the directory a probe to keep it, so it is built by the first
// lookup that finds the directory large and the writer's lock free, in
// O(n), and never by a writer: a directory that is only filled or
// emptied has none. File contents live
// in 64 KiB chunks under a persistent radix tree: appending never copies
// what is already written and an overwrite copies only the chunks it
// touches. Seeking past the end and writing, or truncating upwards, leaves
// a hole that costs no memory. A handle's WriteShared (the durable store's
// large write) keeps as chunks the caller's own memory where it fills them
// whole, pinned by every version that holds them, instead of a copy.
//
// # Open files
//
// Open files behave as on Linux: a file removed or renamed while open keeps
// working through its handle, and sees the writes of other handles to the
// same file; O_APPEND writes land at the end atomically; ReadAt and WriteAt
// leave the offset alone; a read-only handle refuses writes with EBADF. A
// directory handle lists the entries it held at its first ReadDir.
//
// Offsets follow tmpfs: a file may hold up to math.MaxInt64 bytes, and a
// read or write whose end would pass that is refused with EINVAL before it
// does anything (as Linux refuses one whose end overflows a 64-bit
// offset); Seek and Truncate accept any offset up to math.MaxInt64. A
// negative offset is EINVAL for Seek and Truncate and, as with os, a
// "negative offset" error for ReadAt and WriteAt.
//
// # Names and modes
//
// Names are checked at creation by Linux's limits (see package layer,
// [layer.CheckName]): NUL is EINVAL, an element over 255 bytes or a path
// or symlink target of 4,096 bytes or more ENAMETOOLONG, an empty symlink
// target ENOENT. Mkdir keeps the permission and sticky bits of perm, and,
// as on Linux, makes the new directory setgid when its parent is; files
// do not inherit the bit, and Chmod sets exactly the bits it is given.
//
// # Symlinks
//
// Symlinks are followed inside the layer: an absolute target starts at the
// layer's root and ".." stops there, as in a chroot. A resolution that
// follows more than 40 links fails with ELOOP, and a path or target of
// 4,096 bytes or more with ENAMETOOLONG, as on Linux; so does an element
// of a target over 255 bytes, when the walk comes to look it up. Resolution and
// MkdirAll cost time linear in the path's length.
//
// # Under a union
//
// A union (package packfs) uses three methods of its own on its upper
// layer, so that readers never see its steps: [FS.LookupAt] looks a name
// up in a directory found earlier, so that the union resolves a path with
// one lookup per element, and reads that directory as it is now, so that
// a union may keep the handle across writes, as a directory descriptor
// is kept; [FS.CopyIn] adds a copy of lower entries, with
// their contents, modes and mtimes, in one step and without changing the
// directory's mtime; [FS.RenameUnion] renames over a whiteout and can
// leave one behind in the same step, as renameat2's RENAME_WHITEOUT does.
//
// A few more spare the union a second walk of a path it has just looked
// up: [FS.OpenAt] opens a regular file of a directory handle for reading,
// without a lock, in the one lookup; [FS.OpenFileIn] and [FS.RemoveIn]
// open or create and remove an entry of a directory handle under the
// writer's lock, as OpenFile and Remove do with its path; [FS.Linked]
// tells whether a handle's directory is still reachable, so that a union
// may keep handles across the removal of a directory.
//
// # Caveats
//
// Mode bits are stored and reported but not enforced: the layer has no
// calling user, so it acts as root does on Linux. No umask applies: the
// mode given is the mode kept. Owners are kept once given (Chown,
// Lchown, or a copy's [Copy.Owner]) and reported by FileInfo.Sys as a
// *layer.Sys; a file nobody gave one has none (Sys is nil), and Chown
// accepts any ids, as it does for root. The (uid, gid) pairs files are
// given go into one table for the process, which never shrinks: a pair
// costs about 50 bytes once, however many files have it. Access times
// are not kept; Lchtimes sets a symlink's own modification time. Hard
// links are not supported. The size of a directory is reported as 0. A whiteout entry
// (see package layer) cannot be opened, as the 0/0 character device it
// stands for cannot: Open gives ENXIO.
package mem
