// Package conformance is PackFS's exported test suite: the checks every
// backend (a layer, a pack, a union, an adapter) runs on itself, and that a
// downstream package can run on its own, in the manner of go-fuse's
// posixtest (a map of named tests) together with [testing/fstest.TestFS].
//
// # Basics
//
// A writable backend runs the whole suite from one test, giving a function
// that makes a fresh, empty file system:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t *testing.T) layer.FS { return mem.New() })
//	}
//
// [Run] runs every test of [Tests] as a subtest, sorted by name; a package
// may instead call a few tests of Tests by name. A read-only backend (a
// pack, an archive) runs [RunReadOnly], which asks it to hold each tree of
// [Trees]:
//
//	func TestReadOnly(t *testing.T) {
//		conformance.RunReadOnly(t, func(t *testing.T, tree conformance.Tree) fs.FS {
//			upper := mem.New()
//			if err := conformance.Populate(upper, tree); err != nil {
//				t.Fatal(err)
//			}
//			return buildPack(t, upper) // the backend under test
//		})
//	}
//
// and [RunReadOnlyDifferential], which makes random trees in host
// directories and asks it to serve each directory's tree:
//
//	func TestReadOnlyDifferential(t *testing.T) {
//		conformance.RunReadOnlyDifferential(t, func(t *testing.T, dir string) fs.FS {
//			return packDir(t, dir) // a pack of dir, say
//		})
//	}
//
// Options adjust Run: [Skip] skips a named test for a difference the
// backend documents, [WithSeeds] and [WithOps] size the differential test
// (and the read-only one), and [WithOwners] says the backend keeps owners
// and a symlink's own times, which the differential tests then compare
// too.
// The flags -conformance.seeds and -conformance.ops override them, and
// -conformance.seed=N replays one sequence of the differential test,
// logging each operation with the result os gave.
//
// # What is checked
//
//   - fstest.TestFS, and a comparison of every entry (type, permission
//     bits, size, modification time to the second, content, symlink
//     target), on each tree of Trees written through the write interfaces
//     ("TestFS"); and on a snapshot, for a backend with a method
//     Snapshot() whose result implements fs.FS, which must keep showing
//     the old tree exactly while the backend goes on changing ("Snapshot").
//   - The error of each operation where Linux gives a distinct one: its
//     class (tested with errors.Is: fs.ErrNotExist, fs.ErrExist,
//     fs.ErrInvalid, fs.ErrClosed, syscall.ENOTDIR, EISDIR, ENOTEMPTY,
//     EINVAL, ELOOP, EBADF), its type (*fs.PathError, or *os.LinkError for
//     rename and symlink), its Op as package os names it on Linux ("open",
//     "mkdir", "remove", "rename", "readdirent", ...) and its paths.
//   - Open files as Linux keeps them: files removed or renamed while open,
//     O_APPEND (atomic across handles), O_TRUNC, ReadAt and WriteAt that
//     leave the offset alone, holes, Truncate, Seek, modification times,
//     modes kept as given, directory handles paged by ReadDir(n) while the
//     directory changes, and fs.ReadDirFile's io.EOF rules.
//   - Symlinks: relative targets kept verbatim, resolution through
//     directories and "..", dangling links, loops and the limit of 40.
//   - Whiteouts and opaque directories, for a backend whose Whiteout does
//     not return errors.ErrUnsupported.
//   - Concurrency: goroutines creating, reading, renaming and removing at
//     once, checked at the end; run the suite under -race.
//   - "Differential": random sequences of operations (100 of 50 by
//     default; with PACKFS_LONG=1 in the environment, 2,000, or 500 under
//     -race) over a small name space, applied to the
//     backend and, through package os, to a directory of the host (on
//     /dev/shm when it is writable). After every operation it compares the
//     error (class, type, Op, paths), the data read and the information
//     returned; every 10 operations and at the end, the whole trees. A
//     failing sequence is shrunk by delta debugging and printed as Go, each
//     line with what os answered.
//   - The read-only differential ([RunReadOnlyDifferential]), as many
//     sequences: the differential's own operations make a tree in a host
//     directory through os (results ignored), the backend is built over
//     it, and random read-only operations over the tree's names (O_RDONLY
//     opens, Read, ReadAt, Seek, Close, Stat and ReadDir of handles,
//     ReadFile, Readlink, Lstat, Stat, ReadDir; some on paths that are
//     not io/fs paths or have a name past NAME_MAX) are compared with os
//     on the directory, then the whole trees. A failing sequence is
//     shrunk, its reads and then its tree, and printed as Go.
//
// Its expectations are checked against os itself: the suite's own tests
// run it on plain os and on *os.Root, which must pass with no divergence.
//
// # Justified differences
//
// The suite does not hold a backend to what depends on the host rather
// than on the semantics of a file system:
//
//   - ownership (uid and gid), unless [WithOwners] is given; access times;
//     and the size of directories;
//   - modification times the clock set: only times set by Chtimes (before
//     2005) are compared, so a time that should have changed and did not
//     still shows;
//   - the umask: Run and each test set it to 0 while they run (so they must
//     not run in parallel with tests that create files through os), because
//     in-memory layers keep the mode they are given;
//   - permission enforcement: modes are stored, not enforced, as for root
//     on Linux; when not running as root the differential test generates
//     only modes that leave the owner read and write access, and it never
//     removes the owner's rwx from a directory;
//   - the order of a directory handle's entries, and which entries it shows
//     once the directory changed after it was opened (POSIX leaves both
//     open); fs.ReadDir must be sorted;
//   - the Op and path of a RemoveAll error (os reports whichever step
//     failed), and errors of no class (EBUSY, os's refusal of WriteAt in
//     append mode), compared by class only;
//   - reads and writes of zero bytes, for which os makes no system call and
//     so reports no error on a closed or read-only handle;
//   - EINVAL from reading a directory on ext4, counted as EISDIR;
//   - symlink targets ending in "/", and sequences whose symlinks would
//     climb above the root (the host would leave its directory).
package conformance
