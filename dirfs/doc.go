// Package dirfs serves a host directory as a PackFS layer, with every path
// contained beneath the directory.
//
// # Basics
//
// [New] opens a directory and returns an [FS]: an [io/fs.FS] that also
// implements [fs.ReadDirFS], [fs.ReadFileFS], [fs.StatFS], [fs.ReadLinkFS]
// and the whole writable contract of package layer ([layer.FS]): OpenFile,
// Create, Mkdir, MkdirAll, Remove, RemoveAll, Rename, Chmod, Chown, Lchown,
// Chtimes, Symlink, Readlink, WriteFile and Whiteout, and Lchtimes
// ([layer.LchtimesFS]). Owners show through FileInfo.Sys, a
// *syscall.Stat_t, which [layer.OwnerOf] reads. Names are io/fs paths
// (unrooted, slash-separated, no "." or ".." elements except the name ".").
// An FS is a writable upper layer on disk, or, with the [ReadOnly] option, a
// lower layer of a union: every write then fails with syscall.EROFS, as on a
// read-only mount.
//
// Results and errors are what package os gives on Linux for the same calls
// on the joined host path: an *[fs.PathError] (an *[os.LinkError] for
// Rename and Symlink) whose Op is os's ("open", "stat", "mkdir", "remove",
// "rename", ...) and whose Path is the name the caller gave, never the host
// path. Files returned by Open and OpenFile implement [layer.File]; their
// Name is the caller's name too. The conformance suite checks this against
// os, operation by operation, through both ways of resolving names below.
//
// # Containment policy
//
// No name given to an FS reaches outside its root, whatever symlinks, ".."
// elements or concurrent renames the tree contains.
//
//   - On Linux 5.6 and later every name is resolved with openat2 and
//     RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, relative to a descriptor of
//     the root, and the operation is the *at system call (mkdirat, unlinkat,
//     renameat, fstatat with AT_SYMLINK_NOFOLLOW, symlinkat, readlinkat,
//     mknodat, fchownat, utimensat) relative to the resolved parent directory, so no
//     step re-resolves a path string from the top. The kernel fails such a
//     lookup with EAGAIN when it crossed ".." while a rename or mount ran
//     anywhere on the system; after 8 EAGAINs in a row the name is walked
//     one element at a time instead (an openat with O_NOFOLLOW per element,
//     symlink targets read and walked, ".." back to the directory the walk
//     came from), so that a busy machine cannot fail a lookup. Since the
//     walk reads symlinks rather than letting the kernel follow them,
//     fs.protected_symlinks (Linux's refusal to follow a link in a sticky,
//     world-writable directory that neither the caller nor the directory's
//     owner owns) does not apply to a walked lookup; its targets stay
//     beneath the root all the same. Chmod
//     and Chtimes, which follow a final symlink, resolve the name to an
//     O_PATH descriptor and act on /proc/self/fd/N, that descriptor's inode.
//   - Where openat2 is missing (ENOSYS, or EPERM under a seccomp filter), or
//     /proc is not mounted, or off Linux, names are resolved by [os.Root].
//     Lchtimes of a symlink then opens its parent through os.Root and calls
//     utimensat there; off Linux it gives errors.ErrUnsupported.
//     The [ForceRoot] option, or the build tag dirfs_forceroot, forces this
//     fallback, so that tests run both; [FS.ViaRoot] reports which is used.
//   - Symlinks inside the tree are followed only while they stay inside:
//     a relative symlink may climb with ".." as long as it stays beneath the
//     root. An absolute symlink, a symlink whose target climbs above the
//     root, and a "magic" link such as /proc/self/root are errors when they
//     must be followed, wrapping [ErrEscapes] (a loop is ELOOP, as in os).
//     This is stricter than a chroot, which would resolve an absolute target
//     from the root: a tree copied from elsewhere with absolute symlinks
//     must be rewritten to relative ones to be followed.
//   - Operations that do not follow a final symlink (Lstat, Readlink,
//     Remove, Rename, Lchown, Lchtimes, Whiteout) act on the link itself, wherever it
//     points. Symlink stores any target verbatim, as os does: a link is
//     harmless until followed.
//   - A name that is not an io/fs path gives an error wrapping
//     [fs.ErrInvalid]; one that is absolute or climbs with ".." wraps
//     ErrEscapes as well.
//
// # Caveats
//
//   - The root itself is opened by its host path once, in New; replacing the
//     root directory afterwards does not move the FS.
//   - The entries of ReadDir lstat themselves by name through the FS when
//     Info is called, as os's entries do: an entry renamed in between
//     describes whatever has the name then. The entries of ReadDir on an
//     open directory lstat themselves relative to that directory while it
//     is open (fstatat on its descriptor), as os.File.Readdir's do, so a
//     rename of the directory loses none of them; after Close, by name.
//   - ReadDir(n) on an open directory gives its batches sorted by name, as
//     every PackFS backend does and os does not: the first call reads the
//     whole directory and sorts it, later calls page through that
//     listing, and a Seek to offset 0 lists it anew. Listing 100,000
//     entries 100 at a time took the time os.File.ReadDir(100) in the
//     kernel's order takes, within noise (256-361 ms against 286-379 ms on
//     tmpfs on our test machine), and allocated 21 MB against 12 MB, since
//     the whole listing is held from the first batch
//     (BenchmarkReadDirBatches). ReadDir(n <= 0) with nothing left gives
//     an empty slice, not nil, as os does. On a closed
//     directory ReadDir gives an error wrapping fs.ErrClosed.
//   - Names get Linux's checks before anything is resolved: NUL is EINVAL,
//     a path of 4,096 bytes or more ENAMETOOLONG, and an empty symlink
//     target ENOENT (see package layer), which os.Root, or a parent
//     resolved apart from the last element, would not see first.
//   - Through os.Root, Mkdir with the sticky bit in perm makes the
//     directory and then sets the bit with a chmod: os.Root.Mkdir refuses
//     such a perm. A reader may see the directory without it in between.
//   - Containment does not cover hard links: a file hard-linked into the
//     tree from outside is inside as far as any kernel is concerned.
//     Likewise bind mounts below the root are crossed (RESOLVE_NO_XDEV is
//     not set), as they are by os.
//   - Through os.Root, symlinks are followed at most 8 times (Linux: 40) and
//     Whiteout returns an error wrapping errors.ErrUnsupported, as it does
//     without CAP_MKNOD; a union then cannot use the FS as its upper layer.
//   - Permission bits are enforced by the kernel, as for os: a process that
//     is not root sees EACCES where the modes say so.
//   - Containment costs system calls: a name with a directory part is
//     resolved to a parent descriptor (openat2), used and closed, three
//     calls where os makes one. Stat and Lstat, over openat2, keep the
//     descriptors of the directories they resolve (up to 256 an FS), each
//     watched with inotify (one instance for the process), so that a
//     directory renamed, removed, replaced, or given another mode or owner
//     is looked up again, as is every one after a mount or unmount: a stat
//     of a nested name is then one fstatat on the kept descriptor and a
//     poll of the watch queue, and its answer is used only if nothing was
//     queued meanwhile, so a directory moved out of the root (or made
//     unsearchable) is never reached through the descriptor kept of it. A
//     path through a symlink or a mount point is not kept. Where nothing
//     can be kept, or changes beside the FS keep the queue from being empty
//     for the length of a call 64 times in a row, a stat opens the parent
//     afresh, as every other call does: a directory that leaves the root
//     (or its search permission) between that open and the call is still
//     used, as with os.Root.
//     Stat of a nested name costs 1.22x os.Stat on ext4 and 1.27x on
//     tmpfs on our test machine (2.2x uncached; a name directly under the
//     root, one fstatat, costs the same as os.Stat); open+read and create cost less
//     than os (no netpoller registration), and ReadDir 1.05-1.15x
//     os.ReadDir, since entries are not stat'd. See bench/dirfsbench.
package dirfs
