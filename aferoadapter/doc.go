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
// "a/", "" and "/". New translates them into io/fs paths lexically, as
// afero.BasePathFs does: all of them are relative to the root of the file
// system, "." and empty elements and trailing slashes are dropped, and ".."
// removes the element before it. A ".." that would climb above the root is
// not an escape: the operation fails with an *fs.PathError that matches
// fs.ErrNotExist, as BasePathFs reports it. Errors and File.Name report the
// name as the caller passed it, as os does. The root itself cannot be
// removed or renamed: Remove("/") and RemoveAll("/") fail with EINVAL.
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
