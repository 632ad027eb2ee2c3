// Package packbench benchmarks pack files (packreader, packwriter) against
// the alternatives a user would pick for a read-only tree: the host file
// system through os.DirFS, archive/zip (Store method, zip.OpenReader used
// as an fs.FS) and testing/fstest.MapFS, all in the same run.
//
// Workloads (20,000 files of 128 bytes in one directory unless noted):
//
//   - Read: fs.ReadFile of the files in a random order (warm: Read, Stat
//     and ReadDir make one untimed pass first, so that first touches of
//     the pack's mapping are ReadFirstTouch's alone);
//   - ReadFirstTouch: a fresh Open of the pack, then one pass in random
//     order over cold mappings (page faults), per file;
//   - Stat: fs.Stat in random order;
//   - ReadDir: fs.ReadDir of the 20,000-entry directory;
//   - Open: packreader.Open vs zip.OpenReader of the same tree, and
//     packreader.Open of a 1,000,000-entry pack (Open1M), each followed by
//     Close;
//   - Compact: packwriter.Write of a mem snapshot of 20,000 and of 80,000
//     distinct contents, reported in entries/s.
//   - ReadFormat, ReadFormatPaired, CompactFormat: Read and Compact (of
//     20,000 entries) with the pack written in format 2 and in format 3
//     (uncompressed) side by side; ReadFormatPaired reads both packs in
//     one loop, taking turns, and reports each format's ns per read and
//     their ratio (f3/f2), which a shared machine's load moves less than
//     it moves separate runs.
//
// Run from bench/ (short runs; the machine is shared):
//
//	go test -run '^$' -bench . -benchtime 200ms ./packbench/
package packbench
