// Package packwriter writes pack files: one immutable file holding a whole
// tree, read back by package packreader. Writing a pack is how PackFS
// compacts a layer.
//
// # Basics
//
// [Write] streams a pack of any fs.FS (a directory, a union, a snapshot of
// an in-memory layer) to an io.Writer in one pass over the tree. [WriteFile]
// does it atomically into a file: temporary file, fsync, rename, fsync of
// the directory. [WithProgress] reports progress after each entry.
//
// Regular files, directories, symlinks and whiteouts are written with their
// permission bits (plus setuid, setgid, sticky) and modification times; a
// whiteout named layer.OpaqueName also marks its directory opaque.
//
// # Compression, holes, owners and hard links
//
// Packs are written in format 3 unless [WithFormat] asks for 2. Format 3
// cuts contents into frames of 64 KiB (1 MiB when compressed), each
// checked by its own CRC-32C. A compressed pack also stores its tables
// (index, names, frames, owners) in compressed 64 KiB groups, and keeps
// no SHA-256 prefix per file (packreader/FORMAT.md, "Packed tables").
// [WithCompression] compresses them with zstd (github.com/klauspost/compress)
// on as many goroutines as GOMAXPROCS: small files share frames and
// compress together (squashfs's fragments), a frame that does not shrink
// is stored raw, and the output is still the same for the same tree. A
// frame that holds bytes of an x86-64 ELF file goes through a branch
// filter before zstd (its calls' and RIP-relative loads' addresses made
// absolute, as xz's BCJ filter does), which makes executables 7-8%
// smaller (packreader/FORMAT.md, "Frame filters").
// Runs of a frame's worth of zeros, and the holes a host file reports through
// SEEK_DATA and SEEK_HOLE (never read), are stored as holes. Owners
// (uid, gid) come from the source's FileInfo.Sys (a *syscall.Stat_t, or
// a packreader.Sys when repacking, or any Sys with an Owner method, as
// the in-memory layer's). Format 3 also records owner names: for a host
// directory, the names this machine's user and group databases give the
// ids (os/user, each id looked up once); when repacking, the pack's.
// Regular files that are one inode in
// the source (same device and inode, more than one link) become one inode
// of the pack, provided their content, mode, time and owner agree.
//
// # Format
//
// The format is specified in packreader/FORMAT.md. Output is deterministic:
// it depends only on the tree (names, types, modes, times, contents,
// targets), never on the time of the run or the order a directory lists
// its entries in.
//
// # Deduplication
//
// Identical contents are stored once. Candidates are found through a hash
// table keyed by SHA-256, and shared only after their bytes compare equal:
// when the destination can be read back (an *os.File opened read-write at
// offset 0, as WriteFile uses) the earlier copy is read from it; otherwise
// the earlier source file is read again from the fs.FS (always, for
// format 3, whose stored copy may be compressed). Cost is
// O(total bytes + n log n) for n entries.
//
// # Caveats
//
//   - Files up to 1 MiB are read once, with fs.ReadFile when the source
//     has it (one lookup, no file handle) and into a reused buffer
//     otherwise; larger files are read twice (hash, then copy), and a file
//     that changes between the two reads fails the write with [ErrChanged].
//     Writing from a snapshot avoids that.
//   - The whole index (about 100 bytes per entry plus names) is held in
//     memory until the end.
//   - Devices, pipes and sockets are an error; so are names that are not
//     valid io/fs path elements (not UTF-8, say) and entries that cannot
//     be read. [WithSkip] leaves such entries out instead and goes on;
//     a large file whose copy fails half way is taken back when the
//     destination is a file, and stops a stream. A character device is a
//     whiteout only when it is device 0/0 ([layer.IsWhiteoutInfo]).
//     [WithFilter] leaves out entries a caller names.
package packwriter
