// Package aferoadapter connects PackFS and [afero]: it runs existing afero
// code over a PackFS layer, and stacks any afero backend as a PackFS layer.
//
// # Basics
//
// [New] returns an afero.Fs over an fs.FS that has the capabilities of
// package layer, such as the in-memory layer mem.New(): all of afero.Fs,
// afero.Lstater and afero.Symlinker, and files with all of afero.File.
// It behaves as afero's OsFs over a directory does, that is as Linux does
// through package os: the same results and the same errors, which are
// *fs.PathError (rename and symlink: *os.LinkError) wrapping what os
// wraps, so errors.Is(err, fs.ErrNotExist) and friends work. Readdir and
// Readdirnames follow os's io.EOF rules; ReadAt and WriteAt leave the
// offset alone; O_APPEND appends atomically across handles.
//
// [Layer] goes the other way: it presents an afero.Fs (MemMapFs, a
// BasePathFs over OsFs, sftpfs, gcsfs...) as a layer.FS, so that it can be
// a lower or upper layer of a PackFS stack.
//
// # Paths
//
// afero programs name files as they would on the OS: "/a/b", "a/b", "./a",
// "a/", "" and "/". New resolves them as the Linux kernel does, never
// lexically, relative to the root of the file system whether or not they
// start with a slash. A plain name (past its leading slashes, elements
// that are names, no trailing slash) goes to the layer as it is, at no
// cost. Any other name is walked element by element from the root, with
// one lookup per element where the layer can look a name up in a
// directory it found before (mem, packs, the union: linear in the name's
// length), else over the layer's Lstat and Readlink of each prefix, with
// the rules of package internal/pathwalk:
//
//   - "" is ENOENT for every operation; doubled slashes count as one;
//   - every element but the last must be a directory, and a symlink there
//     is followed (an absolute target restarts at the root; 40 links at
//     most, then ELOOP);
//   - "." names the directory it is in, which must exist, ".." the parent
//     of the physical directory, symlinks followed: "l/.." with l a link
//     to c/c is c. At the root ".." stays at the root, as in a chroot:
//     nothing outside exists;
//   - a trailing slash demands a directory and follows a final symlink,
//     for every operation, Lstat and Readlink included;
//   - each operation finishes the last element as the kernel's does:
//     Mkdir, Symlink and O_CREAT|O_EXCL of ".", ".." or "/" are EEXIST,
//     O_CREAT of them or of a name with a trailing slash EISDIR, Symlink
//     of a missing name with a trailing slash ENOENT; Rename of ".", ".."
//     or "/" on either side EBUSY, and of a non-directory with a
//     trailing slash on either side ENOTDIR; Remove of "." EINVAL, of
//     ".." ENOTEMPTY, of "/" EBUSY, and of a non-directory (a symlink
//     too) with a trailing slash ENOTDIR;
//   - Linux's limits: a name of at most 255 bytes and a path of fewer
//     than 4,096, else ENAMETOOLONG; a NUL byte is EINVAL.
//
// Beyond the kernel, the Fs follows package os where os adds rules of its
// own, so that a program sees what it sees over afero.OsFs:
//
//   - Remove tries unlink, then rmdir, and reports rmdir's error unless
//     that is ENOTDIR (os.Remove);
//   - Rename fails with EEXIST when newname is a directory, unless
//     oldname names that same directory by another string
//     (os.Rename("/b/b", "/b//b") is fine, Rename("/b", "/b") is not);
//   - MkdirAll splits a decorated name as strings, at its last slash,
//     and runs over the Fs's own Stat, Mkdir and Lstat (os.MkdirAll):
//     MkdirAll("/a//c/a") over a file a fails with EEXIST from
//     Mkdir("/a/"), as os's does;
//   - RemoveAll of "" does nothing, of a name ending in "." is EINVAL,
//     and when Remove fails it removes the last element with all it
//     holds from its parent (os.RemoveAll): "f/" removes the file f,
//     and "d/.." empties d's parent, then fails with ENOTEMPTY;
//   - Symlink checks its target first: "" is ENOENT, whatever newname is.
//
// The root cannot be removed: RemoveAll("/") fails with EINVAL (os would
// empty it). Errors and File.Name report the name as the caller passed
// it, and Stat, Lstat and File.Stat name what they describe by the last
// element of that name ("." for "a/.", "l" for a symlink l), as os does.
//
// # Migrating from MemMapFs
//
// Swap the constructor; nothing else changes:
//
//	fsys := afero.NewMemMapFs()           // before
//	fsys := aferoadapter.New(mem.New())   // after
//
// Code that relied on where MemMapFs differs from the OS will now see what
// the OS does, which is what the same code sees in production over
// afero.NewOsFs(). The differences, each a named test of
// TestMemMapFsDiffers: MemMapFs creates missing parents silently (in
// Create, OpenFile, WriteFile, Mkdir and Rename), removes non-empty
// directories with Remove, lets Create and Rename replace directories,
// loses O_APPEND writes across two handles, moves the offset in WriteAt
// (and allows it in append mode), has no symlinks, answers a directory
// read with io.EOF instead of EISDIR, a read-only write and a negative
// Seek without EBADF or EINVAL, MkdirAll over a file with success, uses
// its own "File is closed" error (not fs.ErrClosed) and lets Stat and
// Close of a closed file succeed, sets the modification time to year 1
// for a zero time.Time in Chtimes, gives new files the mode
// os.ModeTemporary, ignores O_TRUNC with O_RDONLY (Linux truncates), and
// reports directories as 42 bytes long.
//
// # Performance
//
// Over mem.New(), an Fs lists directories 1.5x to 1.8x faster than
// MemMapFs and is slower on the rest: creating, removing and reading
// small files take 1.2x to 1.9x MemMapFs's time, stat 2.3x to 3x
// (bench/aferobench, 20,000 files of 128 bytes, medians of three runs of
// five). The in-memory layer pays for O(1) snapshots, lock-free readers
// and the OS's behaviour: a lookup is a search in an ordered index, not a
// hash probe; each change makes a new immutable version of the file and
// of its directory; creating or removing an entry sets the directory's
// modification time, which MemMapFs leaves alone. afero's helpers cost
// the same over any backend: afero.ReadFile over a file system that does
// no work at all takes 0.9x to 0.96x the time of a whole MemMapFs read.
//
// # Concurrency
//
// An Fs adds no state of its own: it is as safe for concurrent use as the
// file system under it (mem.FS is). A File is safe for concurrent use if
// the layer's file is.
//
// # Caveats
//
// Symlink targets are stored as given; an absolute target is resolved from
// the root of the layer, not of the host. Layer inherits whatever its
// afero backend does: a BasePathFs rewrites symlink targets into absolute
// host paths (and refuses targets that start with ".."), and a MemMapFs
// keeps every divergence listed above and panics when a directory is
// renamed into its own subtree.
package aferoadapter
