package packfs

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

// Rename renames oldname to newname, as [os.Rename] does on one
// filesystem: never EXDEV, whichever layers hold them. A lower file is
// copied up first; a directory with lower contents is copied up whole, so
// its cost grows with what the lowers hold of it.
func (u *FS) Rename(oldname, newname string) error {
	if _, err := u.writable("rename", oldname); err != nil {
		return layer.LinkError("rename", oldname, newname, errReadOnly)
	}
	if !pathwalk.ValidPath(oldname) || !pathwalk.ValidPath(newname) {
		return layer.LinkError("rename", oldname, newname, fs.ErrInvalid)
	}
	om, orest, oin := u.mounted(oldname)
	_, nrest, nin := u.mounted(newname)
	switch {
	case oin && nin && mountPoint(oldname, orest) == mountPoint(newname, nrest) && orest != "." && nrest != ".":
		if err := layer.Rename(om, orest, nrest); err != nil {
			return layer.LinkError("rename", oldname, newname, bareUnsupported(err))
		}
		return nil
	case oin && orest == "." || nin && nrest == "." || u.busy(oldname):
		return layer.LinkError("rename", oldname, newname, syscall.EBUSY)
	case oin || nin:
		// Another file system: rename(2) gives EXDEV across mounts.
		return layer.LinkError("rename", oldname, newname, syscall.EXDEV)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.rename(oldname, newname); err != nil {
		return layer.LinkError("rename", oldname, newname, bareLink(err))
	}
	return nil
}

// rename checks in the order os and Linux do, so that errors are theirs.
func (u *FS) rename(oldname, newname string) error {
	if err := layer.CheckPath(oldname); err != nil {
		return err
	}
	if err := layer.CheckPath(newname); err != nil {
		return err
	}
	ndir, dst, nerr := u.walk(newname, false)
	odir, src, err := u.walk(oldname, false)
	if nerr == nil && dst.isDir() {
		// os.Rename refuses to replace a directory before asking the
		// kernel: the error of Lstat(oldname), or else EEXIST.
		switch {
		case err != nil:
			return err
		case !src.exists():
			return syscall.ENOENT
		case oldname == newname || src.path != dst.path:
			return syscall.EEXIST
		}
	}
	if err != nil {
		return err
	}
	if nerr != nil {
		if errors.Is(nerr, syscall.ENAMETOOLONG) && !src.exists() && layer.CheckName(path.Dir(newname)) == nil {
			// A new last element too long to look up (in a lower) comes
			// after a missing oldname, as in rename(2).
			return syscall.ENOENT
		}
		return nerr
	}
	if odir == nil || ndir == nil {
		return syscall.EBUSY
	}
	if !src.exists() {
		return syscall.ENOENT
	}
	if !dst.exists() {
		if err := layer.CheckElem(path.Base(dst.path)); err != nil {
			return err
		}
	}
	if within(dst.path, src.path) && dst.path != src.path {
		return syscall.EINVAL // into its own subtree
	}
	if dst.exists() {
		if within(src.path, dst.path) && dst.path != src.path {
			return syscall.ENOTEMPTY // over one of its own ancestors
		}
		if dst.path == src.path {
			return nil
		}
		if src.isDir() && !dst.isDir() {
			return syscall.ENOTDIR
		}
	}
	// Bring what moves into the upper layer, then move it there.
	var err2 error
	switch {
	case src.isDir() && (src.layer != 0 || len(src.dirs) > 1):
		err2 = u.copyUpTree(src)
		if err2 == nil {
			err2 = u.markOpaque(src.path)
		}
	case src.layer != 0:
		err2 = u.copyUp(src, true)
	}
	if err2 == nil {
		err2 = u.upperDir(ndir)
	}
	rw, oneStep := u.upper.(renameUnionFS)
	if err2 == nil && dst.upperWhiteout && !oneStep {
		err2 = u.upper.Remove(dst.path)
	}
	if err2 == nil && src.isDir() && dst.below && !layer.IsOpaque(u.upper, src.path) {
		// The lowers' entries at the new name must not merge into it:
		// the marker moves with the directory, so that they never show.
		err2 = u.markOpaque(src.path)
	}
	if err2 != nil {
		return err2
	}
	if oneStep {
		// The whiteout that hides the lowers' entry at the old name goes
		// in with the rename, which replaces one at the new name.
		err2 = rw.RenameUnion(src.path, dst.path, src.below)
	} else if err2 = u.upper.Rename(src.path, dst.path); err2 == nil && src.below {
		err2 = u.upper.Whiteout(src.path)
	}
	if err2 == nil && src.isDir() {
		if dst.isDir() {
			u.movedDirs(dst.path, "") // the empty directory replaced
		}
		u.movedDirs(src.path, dst.path)
	}
	return err2
}

// renameUnionFS is an upper layer that renames in one step over a
// whiteout, leaving one behind when asked (layer/mem).
type renameUnionFS interface {
	RenameUnion(oldname, newname string, whiteout bool) error
}

// within reports whether p is base or below it.
func within(p, base string) bool {
	return base == "." || p == base || strings.HasPrefix(p, base+"/")
}
