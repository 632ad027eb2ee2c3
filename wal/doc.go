// Package wal is PackFS's write-ahead log: the durable store appends each
// change of its in-memory layer here before acknowledging it, and replays
// the log when it opens.
//
// A log is a sequence of segment files in a vfs.FS. Each record carries a
// CRC-32C; several entries appended together form a transaction that
// replay applies whole or not at all. Sync is a group commit: committers
// waiting at the same moment share one write and one fdatasync. Replay
// stops at a torn tail and truncates it, and fails with ErrCorrupt on
// damage a crash cannot explain. FORMAT.md gives the byte layout.
//
// Appends gather in a buffer that is written out when it fills or at a
// sync. AppendSplit takes an entry in two parts, so that a caller need
// not join its header to its data, and writes a large one (32 KiB or
// more) to the segment at once, from where it lies: a large write is
// copied only by the page cache, and into blocks reserved ahead of it
// (fallocate), within the file's size: on ext4 a write that extends a file
// costs 1.3x one that does not. AppendMapped also hands back such an
// entry's data as the segment's pages, mapped read-only, so that a caller
// can keep those instead of a copy of its own. Writes says beforehand
// whether an append will write to the segment, the only appends that can
// fail for want of disk.
//
// # Durability
//
// Each segment's header holds a slot that every Sync carries forward to
// the offset the sync before it made durable, and Close to the end; Rotate
// seals the segment it leaves once the next one is durable. So a segment
// removed, emptied or cut below what it had made durable is ErrCorrupt,
// while what a crash leaves (a torn unsynced tail, preallocated zeros, a
// segment whose creation it interrupted) still replays. Only the units of
// the last sync of a log not closed since are unprotected: their loss
// reads as a torn tail. Options.FirstExists says that the first segment
// must exist.
package wal
