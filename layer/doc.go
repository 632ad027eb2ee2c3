// Package layer defines the contract every PackFS layer meets.
//
// # Basics
//
// A layer is an [fs.FS]. What it can do beyond reading is expressed by small
// capability interfaces, one per operation, each embedding fs.FS in the
// pattern of io/fs ([fs.StatFS], [fs.ReadDirFS], ...): [OpenFileFS],
// [MkdirFS], [RemoveFS], [RenameFS], [ChmodFS], [SymlinkFS] and so on. Their
// method sets follow [os.Root] (Go 1.25) name for name and parameter for
// parameter, so code written against *os.Root reads the same against a layer;
// the one difference is that files are returned as the [File] interface, which
// *os.File satisfies, rather than as *os.File. [FS] gathers the whole writable
// contract.
//
// Each capability has a package-level helper ([OpenFile], [Mkdir],
// [MkdirAll], [Remove], [RemoveAll], [WriteFile], ...) that uses the
// capability when the layer has it and otherwise falls back to simpler
// capabilities (MkdirAll by repeated Mkdir, WriteFile by OpenFile, RemoveAll
// by walking) or returns an error wrapping [errors.ErrUnsupported].
//
// # Errors
//
// Every error that names a path is an *[fs.PathError] (rename and link: an
// *[os.LinkError]) whose Op is the name package os uses on Linux ("open",
// "mkdir", "remove", "rename", ...) and which wraps what os would wrap on
// Linux for the same sequence of calls: [fs.ErrNotExist], [fs.ErrExist],
// [fs.ErrPermission], [fs.ErrInvalid], [fs.ErrClosed], or an errno such as
// [syscall.ENOTDIR], [syscall.EISDIR], [syscall.ENOTEMPTY], [syscall.ELOOP],
// [syscall.EXDEV] or [syscall.EBADF]. Test them with [errors.Is]; the errno
// values match the fs.Err* sentinels the way they do for os.
//
// # Names
//
// Every writable layer applies Linux's limits when it creates a name (open
// with O_CREATE, Mkdir, Symlink, Rename's new name, Whiteout), with
// Linux's errors: a NUL byte is syscall.EINVAL (os refuses it before any
// system call), an element over [NameMax] (255) bytes or a path of
// [PathMax] (4,096) bytes or more is syscall.ENAMETOOLONG, and so is a
// symlink target of PathMax bytes or more; an empty target is
// syscall.ENOENT before the new name is looked at. [CheckName],
// [CheckPath], [CheckElem] and [CheckSymlink] are that one rule, in the
// order Linux applies it: the whole path first, then, once the parent is
// found, the new element, so that a missing parent is ENOENT first.
//
// # Owners and a symlink's own times
//
// A layer that keeps owners reports them through FileInfo.Sys: a value
// with an Owner method ([OwnerSys]; [Sys] for the in-memory layer, the
// union and the store, packreader's Sys for packs) or, for host files, a
// *syscall.Stat_t. [OwnerOf] reads any of them, so code that shows or
// copies owners (a FUSE mount, unpack) needs no type switch; [NoOwner]
// is an id the layer does not record. Packs also know owner names
// ([OwnerNamesSys]). Chown and Lchown follow Linux's rules ([ChownIDs],
// [ChownMode]): -1 leaves an id, ids are taken as uid_t, and any chown of
// a non-directory drops its setuid bit and, with group execute, its
// setgid bit. [ChownFile] and [ChmodFile] change an open file through its
// handle, as fchown(2) and fchmod(2) do, even after it was removed.
// [LchtimesFS] sets a symlink's own times, as utimensat(2) with
// AT_SYMLINK_NOFOLLOW does.
//
// # Directory listings
//
// ReadDir of a layer and ReadDir(n) of its open directory both give
// entries sorted by name, on every backend: a directory handle takes its
// listing at its first ReadDir (the host directory backend reads the whole
// directory then and sorts it) and pages through it, until Seek rewinds
// it. This is where PackFS differs from os, whose batches come in the
// kernel's order. An entry's Info describes the file relative to the open
// directory, as os.File.Readdir's do, so a listing survives a rename of
// its directory. ReadDir on a closed handle gives an error wrapping
// [fs.ErrClosed], where os gives a "use of closed file" error that
// matches no sentinel.
//
// # Changes
//
// A layer that can change may report its changes ([WatchFS]): the
// in-memory layer does, and so do the union over it and the durable
// store (package packfs), so that a FUSE mount can tell the kernel at
// once of a change made beside it. [WatchFS.Watch] returns a [Watcher]
// whose Ready channel signals that changes wait and whose Changes takes
// them: each a [Change] with an [Op] (created, removed, renamed, written,
// attributes changed) and the names it touched, as the layer names them,
// symlinks resolved. A backend reports through a [Feed]: Publish costs
// one atomic load while nobody watches, and never waits for a watcher;
// a watcher that falls a few thousand changes behind gets one [OpReset]
// in their place, and repeats of one change in a row are kept once. A
// watcher's filter runs on the writer's goroutine, so it sees each change
// as it is made, by whom it is made (a mount uses it to drop the changes
// made through itself).
//
// # Whiteouts and opaque directories
//
// A union of layers hides a lower entry by recording a whiteout in the upper
// layer, and hides a lower directory's contents by marking the upper
// directory opaque. Both are ordinary entries, so every writable layer can
// store them: a whiteout is an entry whose type is [ModeWhiteout] (a character
// device, as Linux overlayfs stores them), and an opaque directory is one that
// contains a whiteout named [OpaqueName]. Layers that can store them
// implement [WhiteoutFS]. The OCI image spelling ([WhiteoutPrefix],
// [OpaqueName]) converts to and from this form.
package layer
