package packfs

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"syscall"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/treap"
)

// mounts is the mount table: mount point → file system, a persistent
// treap published whole, so that a lookup never waits for Mount.
type mounts = treap.Map[string, fs.FS]

// Mount binds fsys at the directory dir of the union, as mount(2) does:
// dir must exist as a directory, and until Unmount every name below it is
// fsys's. Any fs.FS can be mounted: a pack, a dirfs, another union; writes
// reach it through the capabilities of package layer, and fail with EROFS
// where it has none. Resolution takes the longest mount point that is a
// whole-element prefix of the name ("app" never matches "app-secret"), in
// O(depth · log mounts).
//
// Mount points are matched on names as given: a symlink of the union that
// points below a mount point does not lead into the mount.
func (u *FS) Mount(dir string, fsys fs.FS) error {
	if !fs.ValidPath(dir) || dir == "." || fsys == nil {
		return layer.PathError("mount", dir, syscall.EINVAL)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	table := u.table()
	if _, ok := table.Get(dir); ok {
		return layer.PathError("mount", dir, syscall.EBUSY)
	}
	fi, err := u.Stat(dir)
	if err != nil {
		return layer.PathError("mount", dir, bare(err))
	}
	if !fi.IsDir() {
		return layer.PathError("mount", dir, syscall.ENOTDIR)
	}
	table = table.Set(dir, fsys)
	u.mounts.Store(&table)
	return nil
}

// Unmount removes the mount at dir; EINVAL if dir is not a mount point.
func (u *FS) Unmount(dir string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	table := u.table()
	if _, ok := table.Get(dir); !ok {
		return layer.PathError("unmount", dir, syscall.EINVAL)
	}
	table = table.Delete(dir)
	u.mounts.Store(&table)
	return nil
}

func (u *FS) table() mounts {
	if t := u.mounts.Load(); t != nil {
		return *t
	}
	return treap.NewOrdered[string, fs.FS]()
}

// mounted returns the file system mounted at the longest mount point that
// is name or one of its ancestors, and name's path inside it.
func (u *FS) mounted(name string) (fs.FS, string, bool) {
	t := u.mounts.Load()
	if t == nil || t.Len() == 0 || !fs.ValidPath(name) || name == "." {
		return nil, "", false
	}
	for p := name; ; {
		if m, ok := t.Get(p); ok {
			if p == name {
				return m, ".", true
			}
			return m, name[len(p)+1:], true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return nil, "", false
		}
		p = p[:i]
	}
}

// withMounts shows in the listing of dir the mounts directly below it as
// their mounted roots, as stat does, so that listing and stat agree.
func (u *FS) withMounts(dir string, list []fs.DirEntry) []fs.DirEntry {
	t := u.mounts.Load()
	if t == nil || t.Len() == 0 {
		return list
	}
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	copied := false
	for p, m := range t.From(prefix) {
		if !strings.HasPrefix(p, prefix) {
			break
		}
		base := p[len(prefix):]
		if strings.IndexByte(base, '/') >= 0 {
			continue // deeper
		}
		fi, err := fs.Stat(m, ".")
		if err != nil {
			continue
		}
		i, found := slices.BinarySearchFunc(list, base, func(e fs.DirEntry, name string) int {
			return strings.Compare(e.Name(), name)
		})
		if !copied {
			list, copied = slices.Clone(list), true
		}
		e := fs.FileInfoToDirEntry(named(fi, base))
		if found {
			list[i] = e
		} else {
			list = slices.Insert(list, i, e)
		}
	}
	return list
}

// mountPoint recovers the mount point from a name and its path inside.
func mountPoint(name, rest string) string {
	if rest == "." {
		return name
	}
	return name[:len(name)-len(rest)-1]
}

// busy reports whether name is a mount point or holds one, which rmdir
// and rename refuse with EBUSY as Linux does.
func (u *FS) busy(name string) bool {
	t := u.mounts.Load()
	if t == nil || t.Len() == 0 {
		return false
	}
	if _, ok := t.Get(name); ok {
		return true
	}
	for k := range t.From(name + "/") {
		return strings.HasPrefix(k, name+"/")
	}
	return false
}

// inMount names a mounted file system's errors after the union's path,
// keeping the Op of the mounted file system's *fs.PathError, which tells
// the step that failed (ReadFile: "open" or "read").
func inMount(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		op = pe.Op
	}
	if errors.Is(err, errors.ErrUnsupported) {
		err = errReadOnly // a mount without the capability is read-only
	} else {
		err = bareLink(err)
	}
	return layer.PathError(op, name, err)
}

// bareUnsupported is bareLink, with a missing capability read as EROFS.
func bareUnsupported(err error) error {
	if errors.Is(err, errors.ErrUnsupported) {
		return errReadOnly
	}
	return bareLink(err)
}

// mountFile presents a file of a mount under the union's name.
func mountFile(f layer.File, name, rest string) layer.File {
	return &file{f: f, name: name, path: rest}
}

// The operations of the union, delegated to a mount.

func (u *FS) mountOpenFile(m fs.FS, name, rest string, flag int, perm fs.FileMode) (layer.File, error) {
	f, err := layer.OpenFile(m, rest, flag, perm)
	if err != nil {
		return nil, inMount("open", name, err)
	}
	return mountFile(f, name, rest), nil
}

func mountStat(m fs.FS, op, name, rest string, follow bool) (fs.FileInfo, error) {
	var fi fs.FileInfo
	var err error
	if follow {
		fi, err = fs.Stat(m, rest)
	} else {
		fi, err = fs.Lstat(m, rest)
	}
	if err != nil {
		return nil, inMount(op, name, err)
	}
	return named(fi, name), nil
}
