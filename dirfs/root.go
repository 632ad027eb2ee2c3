package dirfs

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
)

// rootImpl resolves names through os.Root: the fallback where openat2 is
// missing (before Linux 5.6, under a seccomp filter that refuses it, off
// Linux) or when ForceRoot asks for it. os.Root names its errors after its
// system calls ("statat", "mkdirat"); rootImpl renames them as the os
// functions name theirs, and maps its escape error to ErrEscapes.
type rootImpl struct {
	root *os.Root
}

func newRoot(dir string) (*rootImpl, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &rootImpl{root: r}, nil
}

func (r *rootImpl) close() error { return r.root.Close() }

// osOp gives err the Op of the os function and ErrEscapes for an escape.
func osOp(err error, op string) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe) && strings.HasSuffix(pe.Op, "at"):
		pe.Op = op
	case errors.As(err, &le) && strings.HasSuffix(le.Op, "at"):
		le.Op = op
	}
	return escaped(err)
}

// wrap presents an *os.File of the root under the caller's name.
func (r *rootImpl) wrap(f *os.File, name string) *file {
	return &file{f: f, name: name, host: f.Name()}
}

func (r *rootImpl) openFile(name string, flag int, perm fs.FileMode) (*file, error) {
	// os.Root follows a final symlink that openat refused with ENOTDIR,
	// even under O_NOFOLLOW; the kernel's answer to O_NOFOLLOW|O_DIRECTORY
	// on a symlink is that ENOTDIR.
	const noFollowDir = oNofollow | oDirectory
	if noFollowDir != 0 && flag&noFollowDir == noFollowDir {
		if fi, err := r.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
		}
	}
	f, err := r.root.OpenFile(name, flag, perm)
	if err != nil {
		return nil, osOp(err, "open")
	}
	return r.wrap(f, name), nil
}

func (r *rootImpl) stat(name string, follow bool) (fs.FileInfo, error) {
	if follow {
		fi, err := r.root.Stat(name)
		return fi, osOp(err, "stat")
	}
	fi, err := r.root.Lstat(name)
	return fi, osOp(err, "lstat")
}

func (r *rootImpl) readDir(name string) ([]fs.DirEntry, error) {
	// os.ReadDir opens with O_DIRECTORY: a file is ENOTDIR at "open".
	f, err := r.root.OpenFile(name, os.O_RDONLY|oDirectory, 0)
	if err != nil {
		return nil, osOp(err, "open")
	}
	defer f.Close()
	list, err := r.wrap(f, name).ReadDir(-1)
	slices.SortFunc(list, byName)
	return list, err
}

// mkdir makes name as mkdir(2) does, which os.Root.Mkdir refuses to do for
// a perm with more than permission bits: setuid and setgid in perm mean
// nothing to mkdir (a directory is setgid when its parent is, which the
// kernel sees to), and the sticky bit is set by a chmod right after.
func (r *rootImpl) mkdir(name string, perm fs.FileMode) error {
	if err := r.root.Mkdir(name, perm&fs.ModePerm); err != nil {
		return osOp(err, "mkdir")
	}
	if perm&fs.ModeSticky == 0 {
		return nil
	}
	fi, err := r.root.Lstat(name)
	if err == nil {
		err = r.root.Chmod(name, fi.Mode()&(fs.ModePerm|fs.ModeSetgid)|fs.ModeSticky)
	}
	return osOp(err, "mkdir")
}

func (r *rootImpl) remove(name string) error {
	return osOp(r.root.Remove(name), "remove")
}

func (r *rootImpl) removeAll(name string) error {
	return osOp(r.root.RemoveAll(name), "RemoveAll")
}

func (r *rootImpl) rename(oldname, newname string) error {
	return osOp(r.root.Rename(oldname, newname), "rename")
}

func (r *rootImpl) chmod(name string, mode fs.FileMode) error {
	return osOp(r.root.Chmod(name, mode), "chmod")
}

func (r *rootImpl) chown(name string, uid, gid int, follow bool) error {
	if follow {
		return osOp(r.root.Chown(name, uid, gid), "chown")
	}
	return osOp(r.root.Lchown(name, uid, gid), "lchown")
}

func (r *rootImpl) chtimes(name string, atime, mtime time.Time) error {
	return osOp(r.root.Chtimes(name, atime, mtime), "chtimes")
}

// lchtimes sets the times of name itself: os.Root's Chtimes for what is
// not a symlink, and for a symlink utimensat in its parent directory,
// opened through os.Root, where the platform has it (lchtimesAt).
func (r *rootImpl) lchtimes(name string, atime, mtime time.Time) error {
	fi, err := r.root.Lstat(name)
	if err != nil {
		return osOp(err, "lchtimes")
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return osOp(r.root.Chtimes(name, atime, mtime), "lchtimes")
	}
	dir, base := path.Split(name)
	if dir == "" {
		dir = "."
	}
	d, err := r.root.Open(dir)
	if err != nil {
		return osOp(&fs.PathError{Op: "lchtimes", Path: name, Err: underlying(err)}, "lchtimes")
	}
	defer d.Close()
	if err := lchtimesAt(d, base, atime, mtime); err != nil {
		return osOp(&fs.PathError{Op: "lchtimes", Path: name, Err: err}, "lchtimes")
	}
	return nil
}

// underlying is the error a *fs.PathError wraps, or err.
func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (r *rootImpl) symlink(oldname, newname string) error {
	return osOp(r.root.Symlink(oldname, newname), "symlink")
}

func (r *rootImpl) readlink(name string) (string, error) {
	target, err := r.root.Readlink(name)
	return target, osOp(err, "readlink")
}

// whiteout is unsupported: os.Root has no mknod.
func (r *rootImpl) whiteout(name string) error {
	return &fs.PathError{Op: "whiteout", Path: name, Err: errors.ErrUnsupported}
}
