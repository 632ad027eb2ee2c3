// Package fusefs serves any PackFS layer to the kernel through FUSE, so
// that every program (shells, compilers, editors, git, rsync) can use a
// pack, a union or a durable store.
//
// # Basics
//
// [Mount] serves an [io/fs.FS] at a directory and returns a [Server];
// [Server.Wait] returns once it is unmounted, [Server.Unmount] ends it.
// A file system that implements [layer.OpenFileFS] is served read-write,
// each FUSE request becoming the layer call of the same name (create,
// write, fsync, mkdir, unlink, rmdir, rename, symlink, setattr for mode,
// owner, times and size); one without it, such as a pack, is served
// read-only and immutable, and every change is EROFS. Errors reach
// programs as the errno the layer's error wraps, or the one os gives for
// the fs.Err* sentinel it wraps (EIO when there is none).
//
// A tree that may change is served through go-fuse's node API
// (github.com/hanwen/go-fuse/v2/fs): go-fuse keeps the tree of the names
// the kernel holds, and every request reaches the layer by the node's
// path, so a rename through the mount moves a node and its subtree, and
// an open file follows it. An immutable tree (a pack, a union of packs,
// or any tree mounted with Options.Immutable) is served through the raw
// API (fuse.RawFileSystem) instead: requests are answered by inode
// number from a table of what the kernel holds, with each node's
// attributes, listing and link target read once, since nothing changes.
// Measured over the Go source tree (bench/fusebench, FUSEBENCH_NODEAPI=1),
// the raw API with the caching below takes 0.5x to 0.75x the node API's
// time on every read row (find with stat, reading every file cold and
// warm, grep -r). The kernel resolves paths itself,
// one element at a time, with its own symlink and length limits, so the
// layer sees only fs.ValidPath paths.
//
// # Inodes and links
//
// A format-3 pack served directly shows its own inode numbers and link
// counts (packreader.Sys): entries that were hard links share a number,
// and the numbers never change. Other layers keep no inode numbers, so
// the mount hands them out: a node keeps its number while the kernel
// remembers it (across renames, and beside a READDIRPLUS listing, which
// gives the numbers stat will), and a name the kernel forgot gets a new
// one at its next lookup. Hard links are refused with EPERM, as on a
// file system without them (git then renames). A directory's link count
// is 2 and one per subdirectory, as on Linux, counted once and again
// after a change of its subdirectories; a removed file or directory
// still open has 0.
//
// # Caching
//
// The kernel trusts names and attributes for EntryTimeout and AttrTimeout
// (an hour for an immutable tree, a second otherwise). Changes made
// through the mount keep its cache right: the kernel updates or drops
// what they touch. On an immutable mount the kernel opens nothing (OPEN
// and OPENDIR answer ENOSYS, so no OPEN, OPENDIR, RELEASE or RELEASEDIR
// requests), keeps file contents, listings and symlink targets in its
// caches, and READDIRPLUS gives every entry's attributes, so that find
// with stat sends one request per page of a listing and nothing else. At
// the first read of a file there, the server pushes the next small files
// of its directory into the kernel's page cache (FUSE_NOTIFY_STORE), so
// that a program reading a tree file by file (grep -r, tar, a build)
// waits for no request for most of them.
//
// A file opened for writing while it is empty (created, truncated) is
// written past the kernel's page cache (FOPEN_DIRECT_IO, where the kernel
// can still map such a file shared): each write reaches the layer
// straight from the program's buffer, without the page cache's copy in
// between, and reads through that descriptor each reach the layer too.
// The kernel keeps other descriptors and mappings of the file coherent
// with it, as ever.
//
// A change made to the served tree other than through the mount (by the
// program that serves it, say) shows at once when the tree reports its
// changes ([layer.WatchFS]: the in-memory layer, a union over it, a
// store): the mount watches it and tells the kernel to drop the names,
// attributes and pages the change touched (FUSE_NOTIFY_INVAL_ENTRY,
// FUSE_NOTIFY_DELETE, FUSE_NOTIFY_INVAL_INODE), and moves or drops the
// node of a name renamed or removed, so that a file open through the
// mount follows its file. The notifications go out from a goroutine of
// the mount's own, a moment after the change; the writer never waits for
// them, and the kernel's requests never wait for a notification. A
// change made through the mount is not reported back: the kernel knows
// it. With [Options.NoWatch], and for any other tree, changes show once
// the timeouts pass, or at once after [Server.Invalidate] of the changed
// name.
//
// # Durability
//
// fsync of a file calls its Sync: on a store (packfs.Open), a durable
// commit. fsync of a directory calls the file system's Sync method, when
// it has one. close(2) commits nothing by itself, as on Linux.
//
// # Caveats
//
//   - RENAME_EXCHANGE and RENAME_WHITEOUT are EINVAL: no layer call does
//     them in one step. RENAME_NOREPLACE is checked and done under a lock
//     that orders it with every other change made through the mount, but
//     not with changes made beside it.
//   - A read through the mount that races a change made beside it to the
//     same file can return the older content padded with zeros to the
//     newer size, once: the kernel learns the new size (from a listing,
//     a lookup) while its read of the old content is in flight, and keeps
//     the page that read fills until the change's notification drops it.
//     Reads after that notification see the new content.
//   - A change made beside the mount to a name at the very moment a
//     request through the mount changes the same name is taken for the
//     mount's own, and shows once the timeouts pass. FUSE has no
//     notification of a move: a directory renamed beside the mount is
//     dropped from the kernel's cache under its old name, and a process
//     working inside it goes on there, but getcwd gives the old path
//     until the new name is looked up. After the kernel
//     was told that anything may have changed (a watcher that fell far
//     behind, a store's log failure), a name it found missing before
//     stays missing until NegativeTimeout passes.
//   - Layers keep only modification times: atime and ctime read as the
//     mtime. Owners are the layer's (layer.OwnerOf: packs, the in-memory
//     layer, unions and stores once chown'd, host directories); a file
//     without one shows the mounting user's uid and gid, and a file made
//     through the mount gets no owner of its own.
//   - Extended attributes, locks across mounts, mknod and O_TMPFILE are
//     not offered; POSIX and BSD locks are the kernel's, local to this
//     machine.
//   - Mounting needs /dev/fuse and root, or fusermount3 for other users;
//     as root Mount calls mount(2) itself.
package fusefs
