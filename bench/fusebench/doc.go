// Package fusebench times PackFS mounted through FUSE against the tools
// users would mount instead, in the same run, on the same tree (the Go
// distribution's source tree, $(go env GOROOT)/src), every file on tmpfs
// (/dev/shm) so that no disk decides:
//
//   - reading: a pack mounted by package fusefs against squashfuse (and
//     squashfuse_ll where installed) on a squashfs image of the tree made
//     by mksquashfs with its defaults: find with stat of every entry,
//     reading every file (cold: a fresh mount; warm: a second pass) and
//     grep -r;
//   - writing: a store (packfs.Open) mounted by fusefs against
//     fuse-overlayfs (upper and work directories on tmpfs) and tmpfs
//     itself: creating and writing 20,000 small files, removing them, and
//     writing one 64 MiB file;
//   - writing over a read-only lower: a store over a pack of 20,000 small
//     files (packfs mount --upper) against fuse-overlayfs with a host
//     directory of the same files as its lowerdir, and tmpfs: removing
//     them (and their emptied directories), and renaming each.
//
// The benchmarks mount as root. Missing tools are installed with apt-get
// (squashfuse, squashfs-tools, fuse-overlayfs) when it is there; a tool
// still missing skips its column with a message, and no /dev/fuse skips
// everything.
//
// Run from bench/ with run.sh, which alternates the tools (each of its
// five runs measures every tool on every row in turn, so that a change of
// the machine's load falls on all columns alike) and prints the medians
// as tables (table.awk), with the load average before and after each run:
//
//	sh fusebench/run.sh [out] [runs]
//
// With FUSEBENCH_NODEAPI=1 the read rows have one more column: the pack
// served through go-fuse's node API (fusefs.Options.NodeAPI), against
// the raw API fusefs chooses for immutable trees.
package fusebench
