// Package remote reads packs from S3-compatible object storage, lazily,
// by ranged requests, and keeps store checkpoints and read-only replicas
// in a bucket.
//
// # Basics
//
// A [Bucket] is opened from a URL, s3://BUCKET/KEY?endpoint=…&region=…
// ([ParseURL] lists the query parameters and the AWS_* environment
// variables it falls back to), or from a minio-go client ([NewBucket]).
// [Bucket.OpenObject] gives an [Object], an io.ReaderAt over one object;
// [Bucket.OpenPack] serves a pack in the bucket as an fs.FS through
// packreader. [Bucket.UploadPack] uploads a pack, recording in the
// object's metadata where its index starts, its footer and its check
// table's first entry, so that opening it costs two requests whatever
// its size: the first 4 KiB (which also tell the size and ETag, and
// carry the metadata) and the root block, 4 KiB at the index (all the
// tables if they are at most 4 MiB). The tables are then fetched on
// first touch, 64 KiB of a table at a time, each 4 KiB block checked
// against its CRC-32C before use (see packreader.OpenReaderAt).
//
// # Caching and requests
//
// An Object reads whole blocks (Options.BlockSize, 64 KiB by default)
// into a bounded LRU cache (Options.CacheBytes). Readers of a block
// being fetched wait for that one request; a run of missing blocks is one
// request. A reader whose fetches follow one another (reads the cache
// serves do not count) gets a window fetched ahead of it, doubling from
// one block up to Options.ReadAhead and an eighth of the cache, and
// once it is halfway through the window before the last one fetched,
// the next is fetched in the background (reads past that window are
// another reader's and start none). A read larger than half the cache
// goes around it. The open's two requests are byte ranges, the first
// 4 KiB and the root block, outside the cache.
//
// With Options.CacheDir (or cache_dir in the URL) fetched blocks are
// also kept in a local directory, bounded by Options.CacheDirBytes and
// shared by later opens and other processes: a block found there costs
// no request. Its files are named by the object's ETag, so a replaced
// object never meets old blocks, and each carries its CRC-32C: a
// damaged or foreign file is removed and its block fetched again. The
// blocks are written in the background; [Bucket.SyncCache] waits for
// them. A directory that cannot be written only makes the cache smaller.
//
// # Integrity
//
// The ETag of the first response is pinned: every later request carries
// If-Match with it, and every response's ETag, size and Content-Range
// are compared with what was asked, so a replaced object gives
// [ErrChanged] and a server that ignores a range gives an error, never
// other bytes. The pack's own checks (its footer CRC, the CRC-32C of each
// index, key and string block on first touch, each content's CRC-32C
// before its first byte is returned) cover the bytes of a block's first
// fetch; the Object remembers each block's CRC-32C from that fetch, and a
// block fetched again (after eviction) must match it, or the read fails
// with ErrChanged. So a damaged or changed object gives an error.
//
// # Stores in a bucket
//
// A [Publisher] set as packfs.Options.Publisher uploads each checkpoint's
// packs under a prefix (PREFIX/packs/WRITER/NAME, WRITER random per
// Publisher) before the store's manifest names them, then writes
// PREFIX/MANIFEST, a JSON list of the packs with their sizes and ETags,
// with If-Match on the ETag it last saw (If-None-Match: * for the first):
// of two writers from one manifest only one wins, the other's checkpoint
// fails with [ErrConflict] and its store goes on over its log. A
// [Replica], opened from the bucket alone ([Bucket.OpenReplica]), reads
// the manifest every poll interval and, when its bytes changed (not its
// ETag alone, which a server may update apart from the bytes), moves to
// a new generation once every pack it names is open and matches its recorded ETag, so it never
// sees part of an upload; a [Snapshot] (or a file opened through the
// Replica) keeps its generation's packs open until released.
//
// # Errors and faults
//
// An attempt that makes no progress for Options.RequestTimeout (no
// response, or no body bytes) is cut off; transient
// failures (5xx, 429, dropped or cut connections, short bodies, an
// attempt's timeout) are retried with exponential backoff and jitter,
// Options.Retries times, then fail wrapping [ErrTransient]. Permanent
// ones fail at once: 404 wraps fs.ErrNotExist, 403 fs.ErrPermission, 412
// and a moved ETag ErrChanged. Errors are *fs.PathError naming the
// object as s3://BUCKET/KEY. The context given to OpenObject or OpenPack
// bounds every later read (fs.FS methods take none); ReadAtContext adds
// one of its own.
//
// # Caveats
//
//   - The tables a pack reader fetched stay in its memory until Close
//     (a buffer of the tables' size, whose pages are touched only as
//     they are fetched), besides the Object's cache.
//   - A block damaged in its first fetch fails the reads the pack's
//     checks cover; the content it belongs to stays failed in that open
//     pack (packreader remembers a bad content): open the pack again.
//   - A fetch runs under the open's context, not the reader's, since
//     other readers may wait for it: a reader whose own context ends
//     returns at once, and the fetch goes on until it ends or Close.
//   - A replica serves checkpoints: changes in the writer's log since its
//     last checkpoint are not in the bucket. Packs no manifest names any
//     more stay in the bucket (replicas may still read them); deleting
//     them is left to a lifecycle rule.
//   - Only S3's protocol is spoken (minio-go); GCS and Azure are reached
//     through their S3-compatible endpoints where they have one.
package remote
