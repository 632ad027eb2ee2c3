package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"github.com/packfs/packfs/layer"
	"golang.org/x/sys/unix"
)

// unpackOptions says what unpack extracts and how.
type unpackOptions struct {
	paths    []string // the subtrees to extract, io/fs paths; none: all
	exclude  patterns // entries left out, with their subtrees
	force    bool     // replace what is in the way; else it is an error
	numeric  bool     // owners by the pack's ids, not by its names
	progress func(p string, size int64)
	bad      func(error) // told each entry that could not be extracted
}

// unpack extracts fsys, or the subtrees o.paths of it (with the
// directories above them), into the host directory dst, preserving
// modes, modification times (symlinks' too) and symlink targets.
// Whiteouts become 0/0 character devices, as overlayfs stores them (this
// needs CAP_MKNOD). Directories already in dst merge; a file already
// there is an error for that entry unless o.force.
//
// Nothing is written outside dst: every entry is created relative to a
// descriptor of its directory, opened with O_NOFOLLOW, so a symlink
// already in dst (or extracted before) is never followed, whether it
// stands where a directory of the pack goes or above a subtree asked for.
//
// An entry that cannot be extracted (a damaged content, say) is reported
// to o.bad and left out, with nothing of it in place, and extraction goes
// on; unpack then returns an error counting them. Directory modes and
// times are applied once their contents are written, deepest first,
// whatever happened before. Files are written sparse: blocks of zeros
// (a pack's holes among them) are left as holes. Entries that are one
// inode in the pack (FileInfo.Sys's inode, more than one link) come back
// as hard links. Run as root, unpack restores owners (uid and gid) and
// with them setuid and setgid bits; otherwise it drops those bits from
// files, as tar does when it does not restore owners: a setuid-user file
// must not come back as a setuid-root one.
func unpack(fsys fs.FS, dst string, o unpackOptions) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	rootFd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: dst, Err: err}
	}
	u := &unpacker{fsys: fsys, dst: dst, o: o, opened: map[string]int{".": rootFd}, links: map[uint64]int{}, root: os.Geteuid() == 0}
	defer u.closeLinks()
	rootInfo, err := fs.Stat(fsys, ".")
	if err != nil {
		unix.Close(rootFd)
		return err
	}
	u.later = append(u.later, dirMeta{".", rootFd, rootInfo})
	var errs []error
	for _, root := range subtreeRoots(o.paths) {
		if err := u.subtree(root); err != nil {
			errs = append(errs, err)
		}
	}
	// The directories above the subtrees, and dst, get their modes and
	// times last, deepest first.
	for _, d := range slices.Backward(u.later) {
		if err := u.setDirMeta(d.fd, d.path, d.info); err != nil {
			errs = append(errs, err)
		}
		unix.Close(d.fd)
	}
	if u.failed > 0 {
		errs = append(errs, fmt.Errorf("%s could not be extracted", plural(u.failed, "entry", "entries")))
	}
	return errors.Join(errs...)
}

// subtreeRoots returns the subtrees to extract, sorted, without those
// inside another: "d" and "d/e" extract d once.
func subtreeRoots(paths []string) []string {
	if len(paths) == 0 {
		return []string{"."}
	}
	roots := slices.Clone(paths)
	slices.Sort(roots)
	roots = slices.Compact(roots)
	out := roots[:0]
	for _, r := range roots {
		if r == "." {
			return []string{"."}
		}
		if n := len(out); n > 0 && strings.HasPrefix(r, out[n-1]+"/") {
			continue
		}
		out = append(out, r)
	}
	return out
}

type dirMeta struct {
	path string // in fsys
	fd   int    // open on the host directory
	info fs.FileInfo
}

// unpacker is one run of unpack.
type unpacker struct {
	fsys   fs.FS
	dst    string
	o      unpackOptions
	failed int
	// opened holds descriptors of the directories above the subtrees
	// (and of dst, "."), kept until their metadata is applied in later.
	opened map[string]int
	later  []dirMeta
	links  map[uint64]int // inode in fsys → O_PATH descriptor of its first file
	root   bool           // owners are restored
	ids    idCache        // this machine's ids of the pack's owner names
}

func (u *unpacker) report(err error) {
	u.failed++
	if u.o.bad != nil {
		u.o.bad(err)
	}
}

// host names the entry p of fsys by its path under dst, for messages.
func (u *unpacker) host(p string) string {
	return filepath.Join(u.dst, filepath.FromSlash(p))
}

// subtree extracts the subtree root of fsys, making the directories above
// it first. It returns an error only when root itself cannot be read.
func (u *unpacker) subtree(root string) error {
	if root == "." {
		u.children(u.opened["."], ".")
		return nil
	}
	info, err := fs.Stat(u.fsys, root)
	if err != nil {
		return err
	}
	if u.o.exclude.match(root) {
		return nil
	}
	parent := u.opened["."]
	for i := 0; i < len(root); i++ {
		if root[i] != '/' {
			continue
		}
		a := root[:i]
		if fd, ok := u.opened[a]; ok {
			parent = fd
			continue
		}
		ainfo, err := fs.Stat(u.fsys, a)
		if err == nil {
			var fd int
			if fd, err = u.mkdir(parent, a, ainfo); err == nil {
				u.opened[a] = fd
				u.later = append(u.later, dirMeta{a, fd, ainfo})
				parent = fd
			}
		}
		if err != nil {
			// Nothing of the subtree goes anywhere but below a
			// directory of dst's own.
			u.report(err)
			return nil
		}
	}
	u.entry(parent, root, info)
	return nil
}

// entry extracts the entry p of fsys, described by info, into the host
// directory open as parent.
func (u *unpacker) entry(parent int, p string, info fs.FileInfo) {
	if u.o.progress != nil {
		size := int64(0)
		if info.Mode().IsRegular() {
			size = info.Size()
		}
		u.o.progress(p, size)
	}
	if !info.IsDir() {
		if err := u.extract(parent, p, info); err != nil {
			u.report(err)
		}
		return
	}
	fd, err := u.mkdir(parent, p, info)
	if err != nil {
		u.report(err)
		return
	}
	u.children(fd, p)
	if err := u.setDirMeta(fd, p, info); err != nil {
		u.report(err)
	}
	unix.Close(fd)
}

// children extracts the entries of the directory p of fsys into the host
// directory open as fd.
func (u *unpacker) children(fd int, p string) {
	ents, err := fs.ReadDir(u.fsys, p)
	if err != nil {
		u.report(err) // an unreadable directory: its subtree is left out
	}
	for _, e := range ents {
		cp := path.Join(p, e.Name())
		if u.o.exclude.match(cp) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			u.report(err)
			continue
		}
		u.entry(fd, cp, info)
	}
}

// mkdir makes the directory p of fsys in the host directory parent,
// merging with a directory there, and returns a descriptor of it.
func (u *unpacker) mkdir(parent int, p string, info fs.FileInfo) (int, error) {
	name := path.Base(p)
	err := unix.Mkdirat(parent, name, 0o700)
	if err == unix.EEXIST {
		var st unix.Stat_t
		if serr := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = nil
		} else if u.o.force {
			if err = unix.Unlinkat(parent, name, 0); err == nil {
				err = unix.Mkdirat(parent, name, 0o700)
			}
		} else {
			return -1, &fs.PathError{Op: "mkdir", Path: u.host(p), Err: errors.New("a file is in the way (use -force to replace it)")}
		}
	}
	if err != nil {
		return -1, &fs.PathError{Op: "mkdir", Path: u.host(p), Err: err}
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: u.host(p), Err: err}
	}
	return fd, nil
}

// setDirMeta gives the host directory open as fd the mode and time of the
// directory p of fsys.
func (u *unpacker) setDirMeta(fd int, p string, info fs.FileInfo) error {
	if uid, gid, ok := u.ownerOf(info); ok && u.root {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return &fs.PathError{Op: "chown", Path: u.host(p), Err: err}
		}
	}
	if err := unix.Fchmod(fd, uint32(info.Mode().Perm())|modeBits(info.Mode()&(fs.ModeSetgid|fs.ModeSticky))); err != nil {
		return &fs.PathError{Op: "chmod", Path: u.host(p), Err: err}
	}
	if info.ModTime().IsZero() {
		return nil
	}
	if err := futimens(fd, info); err != nil {
		return &fs.PathError{Op: "utimes", Path: u.host(p), Err: err}
	}
	return nil
}

// modeBits returns the setuid, setgid and sticky bits of m as unix bits.
func modeBits(m fs.FileMode) uint32 {
	var b uint32
	if m&fs.ModeSetuid != 0 {
		b |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		b |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		b |= unix.S_ISVTX
	}
	return b
}

// futimens sets the access and modification times of the file open as fd
// to info's ModTime (utimensat with a NULL path, which x/sys/unix does not
// offer).
func futimens(fd int, info fs.FileInfo) error {
	ts := unix.NsecToTimespec(info.ModTime().UnixNano())
	times := [2]unix.Timespec{ts, ts}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&times[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// extract writes the non-directory entry p of fsys, described by info,
// into the host directory parent; on error nothing of it is left there.
func (u *unpacker) extract(parent int, p string, info fs.FileInfo) error {
	name := path.Base(p)
	out := u.host(p)
	if u.o.force {
		// What is in the way goes, an empty directory too (as with tar
		// --overwrite); a directory with contents stays, and the entry
		// fails below.
		var st unix.Stat_t
		if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			flags := 0
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				flags = unix.AT_REMOVEDIR
			}
			if err := unix.Unlinkat(parent, name, flags); err != nil && flags == 0 {
				return &fs.PathError{Op: "remove", Path: out, Err: err}
			}
		}
	}
	switch t := info.Mode().Type(); {
	case t == 0:
		ino, linked := linkOf(info)
		if linked {
			if done, err := u.linkTo(ino, parent, name); err != nil {
				return &fs.PathError{Op: "link", Path: out, Err: err}
			} else if done {
				return nil // the inode's owner, mode and time are set
			}
		}
		if err := u.writeFile(parent, p, info); err != nil {
			return err
		}
		if linked {
			u.keepLink(ino, parent, name)
		}
	case t == fs.ModeSymlink:
		target, err := fs.ReadLink(u.fsys, p)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(target, parent, name); err != nil {
			return &fs.PathError{Op: "symlink", Path: out, Err: err}
		}
	case layer.IsWhiteout(info.Mode()):
		if err := unix.Mknodat(parent, name, unix.S_IFCHR|uint32(info.Mode().Perm()), 0); err != nil {
			return &fs.PathError{Op: "mknod", Path: out, Err: err}
		}
	default:
		return &fs.PathError{Op: "unpack", Path: p, Err: fmt.Errorf("a %s cannot be extracted", entryKindName(info))}
	}
	if err := u.chown(parent, name, info); err != nil {
		return &fs.PathError{Op: "chown", Path: out, Err: err}
	}
	if _, _, owned := u.ownerOf(info); owned && info.Mode().IsRegular() && u.root && info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		// The owner is the pack's: setuid and setgid come back, after
		// chown, which clears them.
		if err := unix.Fchmodat(parent, name, uint32(info.Mode().Perm())|modeBits(info.Mode()), 0); err != nil {
			return &fs.PathError{Op: "chmod", Path: out, Err: err}
		}
	}
	if info.ModTime().IsZero() {
		return nil
	}
	ts := unix.NsecToTimespec(info.ModTime().UnixNano())
	if err := unix.UtimesNanoAt(parent, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "utimes", Path: out, Err: err}
	}
	return nil
}

// writeFile writes the regular file p of fsys into the host directory
// parent, removing it again when its content cannot be read whole.
func (u *unpacker) writeFile(parent int, p string, info fs.FileInfo) error {
	src, err := u.fsys.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	name := path.Base(p)
	fd, err := unix.Openat(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &fs.PathError{Op: "open", Path: u.host(p), Err: err}
	}
	f := os.NewFile(uintptr(fd), u.host(p))
	err = copySparse(f, src, info.Size())
	err = errors.Join(err, f.Chmod(info.Mode()&(fs.ModePerm|fs.ModeSticky)), f.Close())
	if err != nil {
		unix.Unlinkat(parent, name, 0)
	}
	return err
}

// setTimes sets out's access and modification times to info's ModTime,
// without following a symlink.
func setTimes(out string, info fs.FileInfo) error {
	ts := unix.NsecToTimespec(info.ModTime().UnixNano())
	if info.ModTime().IsZero() {
		return nil
	}
	err := unix.UtimesNanoAt(unix.AT_FDCWD, out, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return &fs.PathError{Op: "utimes", Path: out, Err: err}
	}
	return nil
}
