// Package remotebench measures packs read from an S3-compatible bucket
// (package remote) against downloading the whole pack first and opening
// it locally, in the same run, with latency injected by a proxy on
// loopback (remotetest.Proxy, 20 ms a request by default) in front of an
// in-process gofakes3 server.
//
// The tree is the Go distribution's source ($(go env GOROOT)/src),
// packed once. Each iteration starts cold (a new Bucket, so an empty
// cache):
//
//   - Walk: open, then fs.WalkDir with Info of every entry;
//   - WalkRead: open, walk, and read every regular file;
//   - ReadOne: open and read one small file (the "lazy" case);
//
// each as remote (ranged reads through the block cache), remote-diskcache
// (the same with Options.CacheDir, filled by a run before the timer, so
// each iteration is a new process finding the blocks on disk) and download
// (one GET of the whole object to a temporary file, packreader.Open,
// then the same work). Requests and bytes per iteration are reported
// beside the time.
//
// Run from bench/ (short runs; the machine is shared):
//
//	go test -run '^$' -bench . -benchtime 3x -count 3 ./remotebench/
//
// -remotebench.latency sets the latency (e.g. 0s, 50ms).
package remotebench
