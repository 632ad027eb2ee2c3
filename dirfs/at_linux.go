package dirfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// atImpl resolves every name with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS) relative to a descriptor of the root, and operates
// on the last element with the *at system calls relative to the resolved
// parent, so no step re-resolves a path string from the top: a concurrent
// rename or symlink swap can make a call fail, never leave the root.
//
// Calls that must follow a final symlink to change its target (chmod,
// chtimes) resolve the whole name to an O_PATH descriptor and act on
// /proc/self/fd/N, the descriptor's own inode (fchmodat and utimensat take no
// AT_EMPTY_PATH on the kernels we support). New checks that /proc is there.
type atImpl struct {
	fd   int // the root, O_PATH | O_DIRECTORY
	fsys *FS
	// refs counts 1 for the open FS plus the calls in progress; the root
	// descriptor is closed when it drops to 0, never while a call uses it,
	// so a descriptor number reused after Close is never resolved against.
	refs   atomic.Int64
	closed atomic.Bool
	dirs   *dirCache
	// walkAlways, for tests, makes every lookup take the walk that EAGAIN
	// falls back to.
	walkAlways bool
}

// hold keeps the root descriptor open until unhold; it reports false once
// the FS is closed.
func (a *atImpl) hold() bool {
	if a.closed.Load() {
		return false
	}
	for {
		n := a.refs.Load()
		if n <= 0 {
			return false
		}
		if a.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (a *atImpl) unhold() {
	if a.refs.Add(-1) == 0 {
		a.dirs.close()
		unix.Close(a.fd)
	}
}

// errNoOpenat2 tells New to fall back to os.Root.
var errNoOpenat2 = errors.New("dirfs: openat2 unavailable")

// resolveFlags confine resolution to the root: ".." and symlinks may move
// about beneath it, but an absolute symlink, a climb above it, or a magic
// link (/proc/self/root, /proc/N/fd/M) fails.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

func newAt(dir string, fsys *FS, o options) (impl, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	a := &atImpl{fd: fd, fsys: fsys, dirs: newDirCache(fd), walkAlways: o.walkAlways}
	a.refs.Store(1)
	probe, err := a.openat2(".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		unix.Close(fd)
		if err == unix.ENOSYS || err == unix.EPERM {
			return nil, errNoOpenat2
		}
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(probe)
	if err := unix.Access("/proc/self/fd/"+strconv.Itoa(probe), unix.F_OK); err != nil {
		unix.Close(fd)
		return nil, errNoOpenat2
	}
	return a, nil
}

func (a *atImpl) close() error {
	// A second Close does nothing, as os.Root's.
	if a.closed.CompareAndSwap(false, true) {
		a.unhold()
	}
	return nil
}

// oTmpfile is the bit of O_TMPFILE that is not O_DIRECTORY (the kernel's
// __O_TMPFILE).
const oTmpfile = unix.O_TMPFILE &^ unix.O_DIRECTORY

// openat2 opens name beneath the root, retrying EINTR, and EAGAIN up to
// raceTries times before walking the name (walk). An ELOOP is confirmed by
// the walk too: the kernel counts the symlinks a lookup followed across
// its restart from RCU mode to reference mode (total_link_count is set
// once per open, and an RCU lookup through ".." that sees a rename anywhere
// restarts with -ECHILD), so a chain of 40 links, which Linux follows,
// fails with ELOOP when a rename elsewhere lands during the lookup. The
// walk counts the links one lookup follows, and answers a real loop with
// ELOOP after 40.
func (a *atImpl) openat2(name string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveFlags}
	// openat2 takes a mode with O_CREAT or O_TMPFILE only (EINVAL
	// otherwise, where openat ignores it).
	if flags&(unix.O_CREAT|oTmpfile) != 0 {
		how.Mode = uint64(mode)
	}
	for i := 0; ; i++ {
		fd, err := -1, error(unix.EAGAIN)
		if !a.walkAlways {
			fd, err = unix.Openat2(a.fd, name, &how)
		}
		switch {
		case err == unix.EINTR, err == unix.EAGAIN && i < raceTries && !a.walkAlways:
			continue
		case err == unix.EAGAIN, err == unix.ELOOP:
			walks.Add(1)
			fd, err = a.walk(name, &how)
		}
		if err == unix.EXDEV {
			err = ErrEscapes
		}
		return fd, err
	}
}

// parent opens the directory holding name's last element and returns it
// with that element; release the descriptor with a.release.
func (a *atImpl) parent(name string) (int, string, error) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return a.fd, name, nil
	}
	fd, err := a.openat2(name[:i], unix.O_PATH|unix.O_DIRECTORY, 0)
	return fd, name[i+1:], err
}

func (a *atImpl) release(fd int) {
	if fd != a.fd {
		unix.Close(fd)
	}
}

// procPath names the inode of an open descriptor.
func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

func perr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func lerr(op, oldname, newname string, err error) error {
	return &os.LinkError{Op: op, Old: oldname, New: newname, Err: err}
}

// retry calls f until it does not fail with EINTR, as os does.
func retry(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

func (a *atImpl) openFile(name string, flag int, perm fs.FileMode) (*file, error) {
	if !a.hold() {
		return nil, perr("open", name, fs.ErrClosed)
	}
	defer a.unhold()
	fd, err := a.openat2(name, flag, syscallMode(perm))
	if err != nil {
		return nil, perr("open", name, err)
	}
	return &file{f: os.NewFile(uintptr(fd), name), name: name}, nil
}

// statTries bounds the tries of a stat through the directory cache.
const statTries = 64

// statHook, for tests, is told of each lstat of a nested name: whether the
// directory cache answered it, and the inode found.
var statHook func(name string, cached bool, ino uint64)

func (a *atImpl) stat(name string, follow bool) (fs.FileInfo, error) {
	op := "lstat"
	if follow {
		op = "stat"
	}
	if !a.hold() {
		return nil, perr(op, name, fs.ErrClosed)
	}
	defer a.unhold()
	var st unix.Stat_t
	if name == "." {
		if err := unix.Fstat(a.fd, &st); err != nil {
			return nil, perr(op, name, err)
		}
		return newFileInfo(".", &st), nil
	}
	// Lstat the last element from its parent, cached where it can be;
	// only a symlink there needs the whole name resolved again, following
	// it.
	// A directory not yet cached is cached first: an answer through the
	// cache is checked against the watches, one through a descriptor
	// opened for the call is not. If changes beside the FS keep the watch
	// queue from being empty for the length of a call, statTries times,
	// the uncached way.
	var err error
	base, cached := name, false
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		dir := name[:i]
		base = name[i+1:]
		for range statTries {
			if cached, err = a.dirs.lstat(dir, base, &st); cached || !a.dirs.fill(dir) {
				break
			}
		}
	}
	if !cached {
		var pfd int
		pfd, base, err = a.parent(name)
		if err != nil {
			return nil, perr(op, name, err)
		}
		err = retry(func() error { return unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) })
		a.release(pfd)
	}
	if statHook != nil && err == nil && base != name {
		statHook(name, cached, st.Ino)
	}
	if err != nil {
		return nil, perr(op, name, err)
	}
	if follow && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		fd, err := a.openat2(name, unix.O_PATH, 0)
		if err != nil {
			return nil, perr(op, name, err)
		}
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return nil, perr(op, name, err)
		}
	}
	return newFileInfo(base, &st), nil
}

func (a *atImpl) readDir(name string) ([]fs.DirEntry, error) {
	if !a.hold() {
		return nil, perr("open", name, fs.ErrClosed)
	}
	defer a.unhold()
	fd, err := a.openat2(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, perr("open", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	list, err := f.ReadDir(-1)
	// Sort before wrapping, so that comparisons call os's Name directly.
	slices.SortFunc(list, byName)
	return wrapEntries(list, a.fsys, name, nil), err
}

func (a *atImpl) mkdir(name string, perm fs.FileMode) error {
	if !a.hold() {
		return perr("mkdir", name, fs.ErrClosed)
	}
	defer a.unhold()
	pfd, base, err := a.parent(name)
	if err != nil {
		return perr("mkdir", name, err)
	}
	defer a.release(pfd)
	if err := retry(func() error { return unix.Mkdirat(pfd, base, syscallMode(perm)) }); err != nil {
		return perr("mkdir", name, err)
	}
	return nil
}

// remove unlinks name, or removes it as a directory, choosing the error as
// os.Remove does: rmdir of a non-directory is ENOTDIR, so unlink's error is
// the real one then.
func (a *atImpl) remove(name string) error {
	if !a.hold() {
		return perr("remove", name, fs.ErrClosed)
	}
	defer a.unhold()
	pfd, base, err := a.parent(name)
	if err != nil {
		return perr("remove", name, err)
	}
	defer a.release(pfd)
	e := retry(func() error { return unix.Unlinkat(pfd, base, 0) })
	if e == nil {
		return nil
	}
	e1 := retry(func() error { return unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR) })
	if e1 == nil {
		return nil
	}
	if e1 != unix.ENOTDIR {
		e = e1
	}
	return perr("remove", name, e)
}

// removeAll follows os.RemoveAll: try Remove; otherwise empty the directory
// through descriptors opened with O_NOFOLLOW relative to their parents, so
// that no symlink met on the way is followed.
func (a *atImpl) removeAll(name string) error {
	if !a.hold() {
		return perr("RemoveAll", name, fs.ErrClosed)
	}
	defer a.unhold()
	err := a.remove(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	pfd, base, perr2 := a.parent(name)
	if perr2 != nil {
		if perr2 == unix.ENOENT {
			return nil
		}
		return perr("RemoveAll", name, perr2)
	}
	defer a.release(pfd)
	if err := removeAllFrom(pfd, base); err != nil {
		return perr("RemoveAll", name, err)
	}
	return nil
}

func removeAllFrom(pfd int, base string) error {
	err := retry(func() error { return unix.Unlinkat(pfd, base, 0) })
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM && err != unix.EACCES {
		return err
	}
	uerr := err
	for attempt := 0; ; attempt++ {
		fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT {
			return nil
		}
		if err != nil {
			if err == unix.ENOTDIR || err == unix.ELOOP {
				return uerr
			}
			return err
		}
		d := os.NewFile(uintptr(fd), base)
		names, rerr := d.Readdirnames(-1)
		var first error
		for _, n := range names {
			if err := removeAllFrom(fd, n); err != nil && first == nil {
				first = err
			}
		}
		d.Close()
		if first != nil {
			return first
		}
		if rerr != nil {
			return rerr
		}
		err = retry(func() error { return unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR) })
		if err == nil || err == unix.ENOENT {
			return nil
		}
		// Entries created while we emptied the directory: go round again,
		// a bounded number of times.
		if err != unix.ENOTEMPTY || attempt >= 8 {
			return err
		}
	}
}

func (a *atImpl) rename(oldname, newname string) error {
	if !a.hold() {
		return lerr("rename", oldname, newname, fs.ErrClosed)
	}
	defer a.unhold()
	opfd, obase, err := a.parent(oldname)
	if err != nil {
		return lerr("rename", oldname, newname, err)
	}
	defer a.release(opfd)
	npfd, nbase, err := a.parent(newname)
	if err != nil {
		return lerr("rename", oldname, newname, err)
	}
	defer a.release(npfd)
	if err := retry(func() error { return unix.Renameat(opfd, obase, npfd, nbase) }); err != nil {
		return lerr("rename", oldname, newname, err)
	}
	return nil
}

// target resolves name, following a final symlink beneath the root, to an
// O_PATH descriptor.
func (a *atImpl) target(name string) (int, error) {
	return a.openat2(name, unix.O_PATH, 0)
}

func (a *atImpl) chmod(name string, mode fs.FileMode) error {
	if !a.hold() {
		return perr("chmod", name, fs.ErrClosed)
	}
	defer a.unhold()
	fd, err := a.target(name)
	if err != nil {
		return perr("chmod", name, err)
	}
	defer unix.Close(fd)
	if err := retry(func() error { return unix.Chmod(procPath(fd), syscallMode(mode)) }); err != nil {
		return perr("chmod", name, err)
	}
	return nil
}

func (a *atImpl) chown(name string, uid, gid int, follow bool) error {
	if !a.hold() {
		return perr("chown", name, fs.ErrClosed)
	}
	defer a.unhold()
	if follow {
		fd, err := a.target(name)
		if err != nil {
			return perr("chown", name, err)
		}
		defer unix.Close(fd)
		if err := retry(func() error { return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH) }); err != nil {
			return perr("chown", name, err)
		}
		return nil
	}
	pfd, base, err := a.parent(name)
	if err != nil {
		return perr("lchown", name, err)
	}
	defer a.release(pfd)
	if err := retry(func() error { return unix.Fchownat(pfd, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return perr("lchown", name, err)
	}
	return nil
}

// utimes is the times argument of utimensat for atime and mtime: a zero
// time is left alone (UTIME_OMIT).
func utimes(atime, mtime time.Time) []unix.Timespec {
	ts := make([]unix.Timespec, 2)
	for i, t := range [2]time.Time{atime, mtime} {
		if t.IsZero() {
			ts[i] = unix.Timespec{Sec: unix.UTIME_OMIT, Nsec: unix.UTIME_OMIT}
		} else {
			ts[i] = unix.NsecToTimespec(t.UnixNano())
		}
	}
	return ts
}

// lchtimes sets the times of name itself, a final symlink not followed,
// relative to its parent's descriptor as lchown does.
func (a *atImpl) lchtimes(name string, atime, mtime time.Time) error {
	if !a.hold() {
		return perr("lchtimes", name, fs.ErrClosed)
	}
	defer a.unhold()
	ts := utimes(atime, mtime)
	pfd, base, err := a.parent(name)
	if err != nil {
		return perr("lchtimes", name, err)
	}
	defer a.release(pfd)
	if err := retry(func() error { return unix.UtimesNanoAt(pfd, base, ts, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return perr("lchtimes", name, err)
	}
	return nil
}

// lchtimesAt sets the times of base in the open directory d, a final
// symlink not followed.
func lchtimesAt(d *os.File, base string, atime, mtime time.Time) error {
	ts := utimes(atime, mtime)
	return retry(func() error { return unix.UtimesNanoAt(int(d.Fd()), base, ts, unix.AT_SYMLINK_NOFOLLOW) })
}

// chtimes sets the times as os.Chtimes does: a zero time is left alone.
func (a *atImpl) chtimes(name string, atime, mtime time.Time) error {
	if !a.hold() {
		return perr("chtimes", name, fs.ErrClosed)
	}
	defer a.unhold()
	ts := utimes(atime, mtime)
	fd, err := a.target(name)
	if err != nil {
		return perr("chtimes", name, err)
	}
	defer unix.Close(fd)
	if err := retry(func() error { return unix.UtimesNanoAt(unix.AT_FDCWD, procPath(fd), ts, 0) }); err != nil {
		return perr("chtimes", name, err)
	}
	return nil
}

func (a *atImpl) symlink(oldname, newname string) error {
	if !a.hold() {
		return lerr("symlink", oldname, newname, fs.ErrClosed)
	}
	defer a.unhold()
	pfd, base, err := a.parent(newname)
	if err != nil {
		return lerr("symlink", oldname, newname, err)
	}
	defer a.release(pfd)
	if err := retry(func() error { return unix.Symlinkat(oldname, pfd, base) }); err != nil {
		return lerr("symlink", oldname, newname, err)
	}
	return nil
}

func (a *atImpl) readlink(name string) (string, error) {
	if !a.hold() {
		return "", perr("readlink", name, fs.ErrClosed)
	}
	defer a.unhold()
	pfd, base, err := a.parent(name)
	if err != nil {
		return "", perr("readlink", name, err)
	}
	defer a.release(pfd)
	for size := 128; ; size *= 2 {
		buf := make([]byte, size)
		var n int
		err := retry(func() error {
			var e error
			n, e = unix.Readlinkat(pfd, base, buf)
			return e
		})
		if err != nil {
			return "", perr("readlink", name, err)
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// whiteout makes a 0/0 character device at name. A file or symlink there is
// replaced atomically (mknod at a temporary name, then rename over it); an
// empty directory is removed first, since rename cannot put a non-directory
// over a directory.
func (a *atImpl) whiteout(name string) error {
	if !a.hold() {
		return perr("whiteout", name, fs.ErrClosed)
	}
	defer a.unhold()
	pfd, base, err := a.parent(name)
	if err != nil {
		return perr("whiteout", name, err)
	}
	defer a.release(pfd)
	var st unix.Stat_t
	err = unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	mknod := func(at string) error {
		return retry(func() error { return unix.Mknodat(pfd, at, unix.S_IFCHR, 0) })
	}
	unsupported := func(err error) error {
		if err == unix.EPERM {
			return perr("whiteout", name, errors.ErrUnsupported)
		}
		return perr("whiteout", name, err)
	}
	switch {
	case err == unix.ENOENT:
		if err := mknod(base); err != nil {
			return unsupported(err)
		}
		return nil
	case err != nil:
		return perr("whiteout", name, err)
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		if err := retry(func() error { return unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR) }); err != nil {
			return perr("whiteout", name, err)
		}
		if err := mknod(base); err != nil {
			return unsupported(err)
		}
		return nil
	}
	tmp := ".wh.tmp." + strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(tmpSeq.Add(1), 36)
	if err := mknod(tmp); err != nil {
		return unsupported(err)
	}
	if err := retry(func() error { return unix.Renameat(pfd, tmp, pfd, base) }); err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return perr("whiteout", name, err)
	}
	return nil
}

// fileInfo is what stat returns: os's FileInfo, built from the same Stat_t,
// with a *syscall.Stat_t as Sys as os gives.
type fileInfo struct {
	name string
	sys  syscall.Stat_t
}

func newFileInfo(name string, st *unix.Stat_t) *fileInfo {
	fi := &fileInfo{name: path.Base(name)}
	fi.sys = syscall.Stat_t{
		Dev: st.Dev, Ino: st.Ino, Nlink: st.Nlink, Mode: st.Mode, Uid: st.Uid, Gid: st.Gid,
		Rdev: st.Rdev, Size: st.Size, Blksize: st.Blksize, Blocks: st.Blocks,
		Atim: syscall.Timespec(st.Atim), Mtim: syscall.Timespec(st.Mtim), Ctim: syscall.Timespec(st.Ctim),
	}
	return fi
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.sys.Size }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.sys.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.sys }

func (fi *fileInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.sys.Mode & 0o777)
	switch fi.sys.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if fi.sys.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.sys.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.sys.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

func (fi *fileInfo) String() string { return fs.FormatFileInfo(fi) }

// oDirectory makes the fallback's ReadDir open as os.ReadDir does.
const oDirectory = syscall.O_DIRECTORY

// oNofollow lets the fallback tell O_NOFOLLOW in a caller's flags.
const oNofollow = syscall.O_NOFOLLOW

// sameFile reports whether two results of stat describe the same file.
func sameFile(a, b fs.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// statAt lstats the entry name of the open directory f relative to its
// descriptor. ok is false when f is closed: the descriptor is gone.
func (f *file) statAt(name string) (fi fs.FileInfo, ok bool, err error) {
	rc, cerr := f.f.SyscallConn()
	if cerr != nil {
		return nil, false, nil
	}
	var st unix.Stat_t
	cerr = rc.Control(func(fd uintptr) {
		err = retry(func() error { return unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	})
	if cerr != nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, &fs.PathError{Op: "lstat", Path: path.Join(f.name, name), Err: err}
	}
	return newFileInfo(name, &st), true, nil
}

// removed reports whether the directory open as d has been removed: it
// has no links left.
func removed(d *os.File) bool {
	fi, err := d.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
