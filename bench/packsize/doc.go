// Package packsize measures compressed packs (packwriter.WithCompression)
// against what users compare them with, in the same run: squashfs
// (mksquashfs -comp gzip and -comp zstd, from the Debian package
// squashfs-tools, installed with apt-get when missing and running as
// root; otherwise the squashfs figures are skipped with a message),
// archive/zip with Deflate, and the uncompressed pack.
//
// Benchmarks:
//
//   - Size: bytes of the pack (uncompressed, zstd level 3 and 19) and of
//     the squashfs images, and the time each takes with every core, on
//     the Go distribution's src, on the whole GOROOT and on a generated
//     tree of 200,000 tiny files (PACKSIZE_TINY sets how many);
//   - RandomRead: fs.ReadFile of 20,000 small files in a random order,
//     warm (a first untimed pass) and cold (a fresh open, first touch),
//     from the compressed pack (with the default cache of decompressed
//     frames, and with one of 64 MiB that holds them all), the
//     uncompressed pack and a Deflate zip;
//   - SeqRead: a 64 MiB file read whole (WriteTo) from each pack, and
//     from the compressed one cold (a fresh Reader each time, so that
//     every frame is decompressed), through WriteTo and ReadFile;
//   - SeqReadCeiling: the zstd decoder alone on the same frames, on one
//     goroutine and on GOMAXPROCS: what the cold read is measured
//     against;
//   - SeqReadExecutable: the go command's executable read whole from a
//     compressed pack, whose frames went through the x86 filter;
//   - FirstByte: open the pack, open the 64 MiB file, read its first
//     byte, close, from the uncompressed and the compressed pack;
//   - FirstByteFloor: the same file opened, mapped, one byte of its data
//     read, unmapped and closed, with no packreader: the cost of the
//     mapping alone, which FirstByte's uncompressed row stands on;
//   - Tables: what each tree's tables take at zstd level 19, raw, in
//     zstd groups, and shuffled then in zstd groups, as packed tables
//     store them.
//
// Run from bench/ (each a single pass: the trees are large):
//
//	go test -run '^$' -bench 'Size' -benchtime 1x -timeout 1h ./packsize/
//	go test -run '^$' -bench 'Tables' -benchtime 1x -timeout 1h ./packsize/
//	go test -run '^$' -bench 'RandomRead|SeqRead|FirstByte' -benchtime 300ms -count 5 ./packsize/
//
// The tests (go test ./packsize/) check the same claims on small trees.
package packsize
