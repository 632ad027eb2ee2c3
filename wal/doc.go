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
package wal
