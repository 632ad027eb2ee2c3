// Package watchbench measures what a change feed (layer.WatchFS) costs
// the writer: the same changes of the in-memory layer, the union and the
// durable store with nobody watching, with a watcher the writer takes
// each change from itself (one goroutine: the figure callgrind can
// count), with one that a goroutine drains, and with that watcher's
// filter refusing every change (as a mount's does for the changes made
// through it); and, where /dev/fuse
// can be opened, with the tree mounted, so that each change made beside
// the mount is sent on to the kernel. The writer never waits for a
// watcher: what a watcher adds is its filter, one lock and an append.
//
//	cd bench && go test -run '^$' -bench . ./watchbench/
//
// Each iteration is one change: a create of a 128-byte file (WriteFile
// of a new name), a write of 128 bytes through an open handle, a chmod,
// or a rename and back (two changes). Cost per change, ns/op; the
// ratio against "none" in one run is the feed's cost.
package watchbench
