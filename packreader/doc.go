// Package packreader opens pack files and serves them as an io/fs file
// system.
//
// # Basics
//
// [Open] maps a pack file into memory (mmap) and validates it; [OpenReaderAt]
// serves the same format through any io.ReaderAt, such as an object-store
// client, without mmap: it reads the header, the footer and the root
// block at open, and the tables on first touch, 64 KiB at a time, so that
// opening a pack of a million entries in a bucket costs a few KiB. The [Reader] implements fs.FS, fs.ReadDirFS,
// fs.ReadFileFS, fs.StatFS, fs.ReadLinkFS, fs.SubFS and fs.GlobFS. Its files
// implement io.ReaderAt, io.Seeker and io.WriterTo, and directories
// fs.ReadDirFile. Errors are *fs.PathError wrapping the sentinel os would
// give (fs.ErrNotExist, syscall.ENOTDIR, syscall.ELOOP, ...).
//
// Symlinks resolve inside the pack: absolute targets from the pack's root,
// ".." stopping at the root, ELOOP after 40 links, and ENAMETOOLONG for a
// path or a target of 4,096 bytes or more (Linux's PATH_MAX), refused
// before it is copied, and for an element of a target over 255 bytes when
// the walk comes to look it up. A resolution costs time linear in the bytes it
// reads and copies each target once, however many links lead through it,
// so no pack makes it allocate more than the pack's size. Whiteouts
// (written from layer.ModeWhiteout entries) are visible as entries of that
// mode, and [Reader.Opaque] reports a directory's opaque flag, so a union
// can apply them; [Reader.LookupAt] looks a name up in a directory found
// earlier, so that a union resolves a path in one lookup per element,
// and [Reader.OpenAt] opens a regular file there in that same lookup.
//
// [Reader.ReadFile] returns a copy, as fs.ReadFile's contract requires.
// [Reader.Bytes] returns the mapped bytes themselves, valid until Close
// (a copy for a compressed content, or one with holes).
//
// # Versions, compression, holes, owners
//
// Open reads format 2 and format 3 packs; [Reader.Version] says which.
// Format 3 stores contents in frames (64 KiB in an uncompressed pack,
// 1 MiB in a compressed one), each with its CRC-32C, raw or
// zstd-compressed ([Reader.Compressed]; packwriter.WithCompression), or
// as holes that read as zeros and take no storage. A read decompresses
// and checks only the frames it touches, through a bounded cache of
// decompressed frames shared by the Reader's readers ([WithCacheSize]).
// Uncompressed format-3 packs read from the mapping without a copy, as
// format 2 does.
//
// Read and ReadAt of a compressed file copy from the cache, and a frame
// is decompressed once however many reads come to it at once (the
// others wait for it). A file read in sequence (each Read or ReadAt
// starting where the one before ended, as io.Copy and bufio read) has
// the frames after the one it reads decompressed ahead of it on other
// goroutines, one per core up to 4 and within an eighth of the cache;
// a file read at random offsets has none, and Close of the file stops
// its read-ahead. A damaged frame ahead fails the read that comes to
// it, at its offset, as it would without read-ahead. ReadFile of a
// compressed file over two frames decompresses them on GOMAXPROCS
// goroutines; so does WriteTo (which io.Copy uses), ahead of what it
// writes, and it hands w the decompressed bytes where they lie in the
// cache, without a copy. Frame buffers outlive their Reader in process-wide pools (which
// the garbage collector empties), so that the next Reader's frames land
// in memory already touched: on the test machine a fresh page cost about
// as much to fault in as its bytes took to decompress. The FileInfo of a format-3 entry has a [*Sys]: owner
// (ids, and names where the pack records them), inode number and link
// count (entries that were hard links to one
// file share an inode). Files' Seek takes [SeekData] and [SeekHole], as
// lseek(2) does, so that a copy can skip the holes.
//
// # Format
//
// A pack is a header, a data region of deduplicated contents (each 8-byte
// aligned), an index of 64-byte records in breadth-first order (so each
// directory's children are one sorted, binary-searchable run), a key table
// of 8-byte name prefixes that lookups search, a string table, a check
// table and a footer; see FORMAT.md next to this file. Opening reads
// header, footer and the root's block and costs the same for ten entries
// or a million: a lookup of a path with d elements in directories of k
// entries reads O(d log k) keys and O(d) records, and the first read that
// touches a 4 KiB block of the index, key or string table checks that
// block's CRC-32C, once.
//
// # Integrity
//
// A truncated, bit-flipped or crafted pack gives an error wrapping
// [ErrCorrupt] at Open or at the read that touches the damaged part: each
// block of the index, key and string tables (and of format 3's frame and
// attribute tables) is checked against its CRC-32C when first touched,
// record fields are checked when decoded, and a content's CRC-32C
// (format 3: each frame's) is checked before any of it is returned, so
// the first byte of a large format-3 file costs one frame, not the whole
// content. [Reader.Verify] checks everything, including each content's
// SHA-256 and the zero padding between contents.
//
// # Concurrency
//
// A Reader and its files may be used from any number of goroutines. Close
// may be called while files are open or reads are in progress: it waits for
// reads that have started, and every later read fails with fs.ErrClosed.
// Nothing touches the mapping after it is unmapped, except slices the
// caller kept from Bytes.
// Every read that touches the mapping arms debug.SetPanicOnFault for its
// goroutine while it runs and restores the goroutine's setting after.
//
// # Caveats
//
//   - Slices from Bytes point into the mapping: reading them after Close,
//     or after the file was truncated, faults (unless the reading goroutine
//     set debug.SetPanicOnFault), and they must not be written to.
//   - Packs are written to a new file and renamed into place
//     (packwriter.WriteFile), never modified: a Reader keeps the file it
//     mapped, whatever replaces it. If the mapped file itself is truncated,
//     a read that touches a lost page fails with an error wrapping
//     [ErrChanged] and ErrCorrupt instead of killing the process with
//     SIGBUS; the pages before the cut read as before, and the rest of a
//     page cut in the middle reads as zeros, which the checks report as
//     ErrCorrupt where they have not passed already. A file rewritten in
//     place can show its new bytes in parts already checked: that is not
//     detected.
//   - Modification times are stored in Unix nanoseconds: times before 1678
//     or after 2262 do not round-trip.
//   - Padding bytes between contents are checked by Verify only: reads
//     never touch them.
//   - DirEntry.Info of an entry from ReadDir decodes the entry when called,
//     as os does, and fails with fs.ErrClosed after Close.
//   - A Reader of a compressed pack keeps up to [DefaultCacheSize] (64 MiB)
//     of decompressed frames unless told otherwise ([WithCacheSize]), and
//     holds the tables it has read (decompressed, for a compressed pack)
//     until Close, in a buffer of their raw size.
//   - FileInfo.Sys decodes the entry's owner and inode when called, and
//     returns nil after Close.
//   - A Reader of a mapped format-3 pack remembers where each content it
//     read whole lies in the mapping: 4 bytes per record, allocated
//     4 KiB (1,024 records) at a time as reads come to them, held until
//     Close.
//   - WriteTo of a compressed file hands w the cache's own bytes: a w
//     that breaks io.Writer's contract by changing them changes what
//     later reads of those frames return.
package packreader
