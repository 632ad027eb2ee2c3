package packfs_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// The conformance suite over a union with mounts.
//
// The differential test compares a file system with a plain directory of
// the host, whose root it names ".". Where it to run at the root of a
// union with a mount at one of the names its operations use, the
// operations that cross the mount point would rightly differ: rename(2)
// between a mount and its parent is EXDEV, and rmdir or rename of a mount
// point is EBUSY, on Linux as in the union, while the host's directory
// has no mount there. So the suite runs below the mount point instead,
// through mountView, which joins each name to the mount point: every
// operation resolves through the union's mount table to the mounted layer
// and back, with the union's names in its errors and handles, and nothing
// crosses a mount. The union around it has a mount at a whole-element
// prefix of the mount point ("srv") and one at a name that shares its
// prefix ("srv/app-secret"), and its own layers hold entries under the
// mount point that the mount must cover.
//
// The mounted layer is itself a union (mem over a stack of delta packs),
// and Settle remounts it: it unmounts it, packs its upper layer into a new
// delta pack, and mounts the new stack at the same point.
//
// Names are io/fs paths, which cannot say "srv/app/.": on Linux that name
// resolves to the root of the mounted file system under the name ".",
// which rmdir refuses with EINVAL and rename with EBUSY, where the name
// "srv/app" is the mount point, which both refuse with EBUSY. The view
// therefore sends Remove, RemoveAll and Rename of its own root "." to the
// mounted layer as ".", as Linux does, and every other operation on "."
// through the union under the mount point's name.

const mountAt = "srv/app"

// mountView is the union seen from below the mount point mountAt.
type mountView struct {
	t     *testing.T
	u     *packfs.FS
	upper *mem.FS // the mounted union's upper layer
	packs []fs.FS // its delta packs, newest first
	inner *packfs.FS
}

// remounts counts Settle calls, to show the suite made some.
var remounts atomic.Int64

// newMountView builds the union and mounts an empty stack at mountAt.
func newMountView(t *testing.T) *mountView {
	base := mem.New()
	must(t, base.MkdirAll("srv/app", 0o755))
	must(t, base.MkdirAll("srv/app-secret", 0o700))
	must(t, base.WriteFile("srv/app/hidden", []byte("under the mount"), 0o644))
	must(t, base.WriteFile("srv/app-secret/key", []byte("under the mount"), 0o600))
	u := packfs.New(mem.New(), packOf(t, base.Snapshot()))

	srv := mem.New()
	must(t, srv.Mkdir("app", 0o755))
	must(t, srv.Mkdir("app-secret", 0o700))
	must(t, srv.WriteFile("app/shadowed", []byte("under the inner mount"), 0o644))
	must(t, u.Mount("srv", srv))
	secret := mem.New()
	must(t, secret.WriteFile("key", []byte("secret"), 0o600))
	must(t, u.Mount("srv/app-secret", secret.Snapshot()))

	v := &mountView{t: t, u: u, upper: mem.New()}
	v.inner = packfs.New(v.upper)
	must(t, u.Mount(mountAt, v.inner))
	return v
}

// Settle packs the mounted union's upper layer into a delta pack and
// mounts the new stack in place of the old.
func (v *mountView) Settle() error {
	pack, err := packBytes(v.upper.Snapshot())
	if err != nil {
		return err
	}
	upper, err := upperOver(v.upper)
	if err != nil {
		return err
	}
	if err := v.u.Unmount(mountAt); err != nil {
		return err
	}
	v.upper, v.packs = upper, append([]fs.FS{pack}, v.packs...)
	v.inner = packfs.New(v.upper, v.packs...)
	if err := v.u.Mount(mountAt, v.inner); err != nil {
		return err
	}
	remounts.Add(1)
	return nil
}

// full is the union's name for name.
func full(name string) string {
	if name == "." {
		return mountAt
	}
	return mountAt + "/" + name
}

// short is the view's name for a name of the union.
func short(p string) string {
	if p == mountAt {
		return "."
	}
	if rest, ok := strings.CutPrefix(p, mountAt+"/"); ok {
		return rest
	}
	return p
}

// fix gives err the view's names.
func fix(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return &fs.PathError{Op: pe.Op, Path: short(pe.Path), Err: pe.Err}
	case errors.As(err, &le):
		return &os.LinkError{Op: le.Op, Old: short(le.Old), New: short(le.New), Err: le.Err}
	}
	return err
}

// info gives fi, described under name, the view's name for it.
func info(fi fs.FileInfo, name string) fs.FileInfo {
	if fi != nil && name == "." {
		return dotInfo{fi}
	}
	return fi
}

type dotInfo struct{ fs.FileInfo }

func (dotInfo) Name() string { return "." }

var _ layer.FS = (*mountView)(nil)

func (v *mountView) Open(name string) (fs.File, error) { return v.OpenFile(name, os.O_RDONLY, 0) }

func (v *mountView) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	f, err := v.u.OpenFile(full(name), flag, perm)
	if err != nil {
		return nil, fix(err)
	}
	return &viewFile{f: f, name: name}, nil
}

func (v *mountView) Create(name string) (layer.File, error) {
	return v.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (v *mountView) ReadFile(name string) ([]byte, error) {
	b, err := v.u.ReadFile(full(name))
	return b, fix(err)
}

func (v *mountView) ReadDir(name string) ([]fs.DirEntry, error) {
	list, err := v.u.ReadDir(full(name))
	return list, fix(err)
}

func (v *mountView) Stat(name string) (fs.FileInfo, error) {
	fi, err := v.u.Stat(full(name))
	return info(fi, name), fix(err)
}

func (v *mountView) Lstat(name string) (fs.FileInfo, error) {
	fi, err := v.u.Lstat(full(name))
	return info(fi, name), fix(err)
}

func (v *mountView) ReadLink(name string) (string, error) {
	target, err := v.u.ReadLink(full(name))
	return target, fix(err)
}

func (v *mountView) Readlink(name string) (string, error) { return v.ReadLink(name) }

func (v *mountView) Mkdir(name string, perm fs.FileMode) error {
	return fix(v.u.Mkdir(full(name), perm))
}

func (v *mountView) MkdirAll(name string, perm fs.FileMode) error {
	return fix(v.u.MkdirAll(full(name), perm))
}

func (v *mountView) Remove(name string) error {
	if name == "." {
		return v.inner.Remove(".")
	}
	return fix(v.u.Remove(full(name)))
}

func (v *mountView) RemoveAll(name string) error {
	if name == "." {
		return v.inner.RemoveAll(".")
	}
	return fix(v.u.RemoveAll(full(name)))
}

func (v *mountView) Rename(oldname, newname string) error {
	if oldname == "." || newname == "." {
		return v.inner.Rename(oldname, newname)
	}
	return fix(v.u.Rename(full(oldname), full(newname)))
}

func (v *mountView) Chmod(name string, mode fs.FileMode) error {
	return fix(v.u.Chmod(full(name), mode))
}

func (v *mountView) Chown(name string, uid, gid int) error {
	return fix(v.u.Chown(full(name), uid, gid))
}

func (v *mountView) Lchown(name string, uid, gid int) error {
	return fix(v.u.Lchown(full(name), uid, gid))
}

func (v *mountView) Chtimes(name string, atime, mtime time.Time) error {
	return fix(v.u.Chtimes(full(name), atime, mtime))
}

func (v *mountView) Lchtimes(name string, atime, mtime time.Time) error {
	return fix(v.u.Lchtimes(full(name), atime, mtime))
}

func (v *mountView) Symlink(oldname, newname string) error {
	err := v.u.Symlink(oldname, full(newname))
	var le *os.LinkError
	if errors.As(err, &le) {
		// The target is a string, not a name of the union.
		return &os.LinkError{Op: le.Op, Old: oldname, New: short(le.New), Err: le.Err}
	}
	return err
}

func (v *mountView) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return fix(v.u.WriteFile(full(name), data, perm))
}

func (v *mountView) Whiteout(name string) error {
	return fix(v.u.Whiteout(full(name)))
}

// viewFile is a handle of the union under the view's name.
type viewFile struct {
	f    layer.File
	name string
}

func (f *viewFile) Name() string { return f.name }

func (f *viewFile) Stat() (fs.FileInfo, error) {
	fi, err := f.f.Stat()
	return info(fi, f.name), fix(err)
}

func (f *viewFile) Read(p []byte) (int, error) {
	n, err := f.f.Read(p)
	return n, fix(err)
}

func (f *viewFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, fix(err)
}

func (f *viewFile) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, fix(err)
}

func (f *viewFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	return n, fix(err)
}

func (f *viewFile) WriteString(s string) (int, error) {
	n, err := f.f.WriteString(s)
	return n, fix(err)
}

func (f *viewFile) Seek(offset int64, whence int) (int64, error) {
	n, err := f.f.Seek(offset, whence)
	return n, fix(err)
}

func (f *viewFile) ReadDir(n int) ([]fs.DirEntry, error) {
	list, err := f.f.ReadDir(n)
	return list, fix(err)
}

func (f *viewFile) Truncate(size int64) error { return fix(f.f.Truncate(size)) }
func (f *viewFile) Sync() error               { return fix(f.f.Sync()) }
func (f *viewFile) Close() error              { return fix(f.f.Close()) }

// TestConformanceMounted runs the suite below a mount point of a union
// with several mounts; see mountView.
func TestConformanceMounted(t *testing.T) {
	opts := []conformance.Option{conformance.WithOwners()}
	if raceEnabled {
		opts = append(opts, conformance.WithSeeds(100), conformance.WithQuickTrees())
	}
	before := remounts.Load()
	conformance.Run(t, func(t *testing.T) layer.FS { return newMountView(t) }, opts...)
	if remounts.Load() == before && !testsize.Short() {
		t.Error("the differential test never remounted")
	}
}

// TestMountViewSurroundings checks what the view does not reach: the
// union around the mount point still shows its other mounts and hides
// what its layers hold under the mount points.
func TestMountViewSurroundings(t *testing.T) {
	v := newMountView(t)
	must(t, v.WriteFile("a", []byte("in the mount"), 0o644))
	wantContent(t, v.u, "srv/app/a", "in the mount")
	wantContent(t, v.inner, "a", "in the mount")
	wantContent(t, v.u, "srv/app-secret/key", "secret")
	wantMissing(t, v.u, "srv/app/hidden")   // the outer union's lower, under "srv"
	wantMissing(t, v.u, "srv/app/shadowed") // the "srv" mount's, under "srv/app"
	if got := names(t, v.u, "srv"); strings.Join(got, " ") != "app app-secret" {
		t.Errorf("ReadDir(srv) = %q", got)
	}
	must(t, v.Settle())
	wantContent(t, v.u, "srv/app/a", "in the mount")
	must(t, v.u.Unmount(mountAt))
	wantContent(t, v.u, "srv/app/shadowed", "under the inner mount")
	must(t, v.u.Unmount("srv"))
	wantContent(t, v.u, "srv/app/hidden", "under the mount")
}
