// Package packfs is a layered filesystem that speaks io/fs.
//
// A PackFS tree is a stack of layers: one writable upper layer held in
// memory, whose index is a persistent treap so that every state is an
// immutable snapshot, over read-only lower layers such as mmap'd pack files
// and contained host directories. Any layer, and any stack of them, is an
// [io/fs.FS]: pass it to fs.WalkDir, http.FileServerFS, template.ParseFS or
// fstest.TestFS as it is.
//
// The pieces live in packages of one idea each:
//
//   - [github.com/packfs/packfs/layer]: the contract every layer meets (the
//     write-extension interfaces, the writable File, errors, whiteouts) and
//     helpers that fall back when a layer lacks a capability;
//   - [github.com/packfs/packfs/layer/mem]: the writable in-memory layer,
//     with O(1) snapshots and readers that never wait on locks;
//   - [github.com/packfs/packfs/treap]: the persistent ordered map under it;
//   - [github.com/packfs/packfs/conformance]: the test suite every backend
//     passes, exported for downstream backends.
package packfs
