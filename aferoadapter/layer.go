package aferoadapter

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
	"github.com/spf13/afero"
	aferomem "github.com/spf13/afero/mem"
)

// LayerFS is an afero.Fs presented as a PackFS layer: see [Layer].
type LayerFS struct {
	fs   afero.Fs
	root string // the prefix of the afero paths its errors report for "/"
}

var _ layer.FS = (*LayerFS)(nil)

// Layer presents a as a PackFS layer: io/fs paths ("a/b", ".") become the
// afero paths "/a/b" and "/", so a should be rooted where the layer's root
// is meant to be (afero.NewBasePathFs(afero.NewOsFs(), dir), a MemMapFs,
// an sftpfs...). LayerFS implements all of layer.FS with what afero
// offers:
//
//   - Lstat through afero.Lstater (else Stat), Symlink through
//     afero.Linker and Readlink and ReadLink through afero.LinkReader (else
//     errors wrapping errors.ErrUnsupported);
//   - Lchown as Chown on what is not a symlink, a no-op check for
//     uid = gid = -1 on a symlink, and errors.ErrUnsupported otherwise;
//   - Whiteout: errors.ErrUnsupported, so a LayerFS serves as a union's
//     lower layer, or as an upper one that cannot hide lower entries.
//
// Errors are *fs.PathError (rename and symlink: *os.LinkError) naming the
// io/fs paths given, with a's own paths (the base directory of a
// BasePathFs) removed. Remove and RemoveAll of the root fail with EINVAL,
// as os gives for "dir/.", rather than removing a's base directory; a
// zero modification time given to Chtimes keeps the current one, which a
// MemMapFs would otherwise set to year 1. Beyond that, LayerFS reports what
// a does: see the package documentation for where afero's backends differ
// from the OS.
func Layer(a afero.Fs) *LayerFS {
	l := &LayerFS{fs: a}
	if rp, ok := a.(interface {
		RealPath(name string) (string, error)
	}); ok {
		if root, err := rp.RealPath("/"); err == nil {
			l.root = strings.TrimSuffix(root, "/")
		}
	}
	return l
}

// aferoPath returns the afero path of the io/fs path name, or an error
// wrapping fs.ErrInvalid for an invalid one.
func aferoPath(op, name string) (string, error) {
	if !pathwalk.ValidPath(name) {
		return "", layer.PathError(op, name, fs.ErrInvalid)
	}
	if name == "." {
		return "/", nil
	}
	return "/" + name, nil
}

// rel turns a path an afero error reports back into an io/fs path.
func (l *LayerFS) rel(p string) string {
	if l.root != "" {
		if p == l.root {
			return "."
		}
		if rest, ok := strings.CutPrefix(p, l.root+"/"); ok {
			return rest
		}
		return p
	}
	if p == "/" {
		return "."
	}
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		return rest
	}
	return p
}

// fix makes err, from an operation op of a on name, an error of the layer
// contract: an *fs.PathError (or *os.LinkError) with io/fs paths, wrapping
// fs.ErrClosed where afero's in-memory files report their own "File is
// closed".
func (l *LayerFS) fix(err error, op, name string) error {
	if err == io.EOF {
		return err
	}
	switch e := err.(type) {
	case nil:
		return nil
	case *fs.PathError:
		return &fs.PathError{Op: e.Op, Path: l.rel(e.Path), Err: closed(e.Err)}
	case *os.LinkError:
		return &os.LinkError{Op: e.Op, Old: l.rel(e.Old), New: l.rel(e.New), Err: closed(e.Err)}
	}
	return layer.PathError(op, name, closed(err))
}

func closed(err error) error {
	if err == afero.ErrFileClosed || err == aferomem.ErrFileClosed {
		return closedError{err}
	}
	return err
}

// closedError is afero's "File is closed", matching fs.ErrClosed too.
type closedError struct{ error }

func (e closedError) Unwrap() error        { return e.error }
func (e closedError) Is(target error) bool { return target == fs.ErrClosed }

// rootInfo names the root "." as io/fs layers do, where afero reports the
// name of its base directory or "/".
func rootInfo(fi fs.FileInfo, name string) fs.FileInfo {
	if name != "." {
		return fi
	}
	return namedInfo{fi, "."}
}

// namedInfo is a FileInfo under another name.
type namedInfo struct {
	fs.FileInfo
	name string
}

func (fi namedInfo) Name() string { return fi.name }

// Open opens name for reading.
func (l *LayerFS) Open(name string) (fs.File, error) {
	return l.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens name with flag and perm through a's OpenFile.
func (l *LayerFS) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	if err := layer.CheckOpenFlag(flag); err != nil {
		return nil, layer.PathError("open", name, err)
	}
	p, err := aferoPath("open", name)
	if err != nil {
		return nil, err
	}
	f, err := l.fs.OpenFile(p, flag, perm)
	if err != nil {
		return nil, l.fix(err, "open", name)
	}
	return &layerFile{f: f, l: l, name: name}, nil
}

// Create creates or truncates name, as os.Create does.
func (l *LayerFS) Create(name string) (layer.File, error) {
	return l.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// ReadFile reads the whole file name.
func (l *LayerFS) ReadFile(name string) ([]byte, error) {
	p, err := aferoPath("open", name)
	if err != nil {
		return nil, err
	}
	data, err := afero.ReadFile(l.fs, p)
	return data, l.fix(err, "read", name)
}

// WriteFile writes data to name, creating it with perm if needed and
// truncating it otherwise.
func (l *LayerFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := l.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadDir returns the entries of the directory name, sorted by name.
func (l *LayerFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := aferoPath("open", name)
	if err != nil {
		return nil, err
	}
	infos, err := afero.ReadDir(l.fs, p)
	if err != nil {
		err = l.fix(err, "open", name)
		if pe, ok := err.(*fs.PathError); ok && pe.Op == "readdirent" && errors.Is(pe.Err, syscall.ENOTDIR) {
			pe.Op = "open" // os.ReadDir fails at the open of a non-directory
		}
		return nil, err
	}
	list := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		list[i] = fs.FileInfoToDirEntry(fi)
	}
	return list, nil
}

// Stat returns a description of name, following symlinks.
func (l *LayerFS) Stat(name string) (fs.FileInfo, error) {
	p, err := aferoPath("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := l.fs.Stat(p)
	if err != nil {
		return nil, l.fix(err, "stat", name)
	}
	return rootInfo(fi, name), nil
}

// Lstat returns a description of name without following a final symlink
// when a is an afero.Lstater, and Stat's otherwise.
func (l *LayerFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := aferoPath("lstat", name)
	if err != nil {
		return nil, err
	}
	var fi fs.FileInfo
	if ls, ok := l.fs.(afero.Lstater); ok {
		fi, _, err = ls.LstatIfPossible(p)
	} else {
		fi, err = l.fs.Stat(p)
	}
	if err != nil {
		return nil, l.fix(err, "lstat", name)
	}
	return rootInfo(fi, name), nil
}

// ReadLink returns the target of the symbolic link name, through
// afero.LinkReader. A target a reports under its own root (a BasePathFs
// makes every target absolute under its base directory) is given back as
// an absolute path from the layer's root.
func (l *LayerFS) ReadLink(name string) (string, error) {
	p, err := aferoPath("readlink", name)
	if err != nil {
		return "", err
	}
	lr, ok := l.fs.(afero.LinkReader)
	if !ok {
		return "", layer.Unsupported("readlink", name)
	}
	target, err := lr.ReadlinkIfPossible(p)
	if err != nil {
		return "", l.fix(err, "readlink", name)
	}
	if l.root != "" {
		if target == l.root {
			return "/", nil
		}
		if rest, ok := strings.CutPrefix(target, l.root+"/"); ok {
			return "/" + rest, nil
		}
	}
	return target, nil
}

// Readlink is ReadLink with os.Root's spelling.
func (l *LayerFS) Readlink(name string) (string, error) { return l.ReadLink(name) }

// Mkdir creates the directory name.
func (l *LayerFS) Mkdir(name string, perm fs.FileMode) error {
	p, err := aferoPath("mkdir", name)
	if err != nil {
		return err
	}
	return l.fix(l.fs.Mkdir(p, perm), "mkdir", name)
}

// MkdirAll creates name and any missing parents.
func (l *LayerFS) MkdirAll(name string, perm fs.FileMode) error {
	p, err := aferoPath("mkdir", name)
	if err != nil {
		return err
	}
	return l.fix(l.fs.MkdirAll(p, perm), "mkdir", name)
}

// Remove removes the file or empty directory name.
func (l *LayerFS) Remove(name string) error {
	p, err := aferoPath("remove", name)
	if err != nil {
		return err
	}
	if p == "/" {
		return layer.PathError("remove", name, syscall.EINVAL)
	}
	return l.fix(l.fs.Remove(p), "remove", name)
}

// RemoveAll removes name and everything it contains.
func (l *LayerFS) RemoveAll(name string) error {
	p, err := aferoPath("RemoveAll", name)
	if err != nil {
		return err
	}
	if p == "/" {
		return layer.PathError("RemoveAll", name, syscall.EINVAL)
	}
	return l.fix(l.fs.RemoveAll(p), "RemoveAll", name)
}

// Rename renames oldname to newname.
func (l *LayerFS) Rename(oldname, newname string) error {
	p1, err1 := aferoPath("rename", oldname)
	p2, err2 := aferoPath("rename", newname)
	if err1 != nil || err2 != nil {
		return layer.LinkError("rename", oldname, newname, fs.ErrInvalid)
	}
	err := l.fs.Rename(p1, p2)
	if p1 == "/" && errors.Is(err, syscall.EINVAL) {
		// a renames its base directory into itself; os renaming "dir/."
		// refuses sooner.
		return layer.LinkError("rename", oldname, newname, syscall.EBUSY)
	}
	if pe, ok := err.(*fs.PathError); ok {
		// afero's own checks (BasePathFs, MemMapFs) report one path.
		err = &os.LinkError{Op: "rename", Old: p1, New: p2, Err: pe.Err}
	}
	if err != nil && !isLinkError(err) {
		return layer.LinkError("rename", oldname, newname, closed(err))
	}
	return l.fix(err, "rename", oldname)
}

func isLinkError(err error) bool {
	_, ok := err.(*os.LinkError)
	return ok
}

// Chmod changes the mode of name.
func (l *LayerFS) Chmod(name string, mode fs.FileMode) error {
	p, err := aferoPath("chmod", name)
	if err != nil {
		return err
	}
	return l.fix(l.fs.Chmod(p, mode), "chmod", name)
}

// Chown changes the owner of name.
func (l *LayerFS) Chown(name string, uid, gid int) error {
	p, err := aferoPath("chown", name)
	if err != nil {
		return err
	}
	return l.fix(l.fs.Chown(p, uid, gid), "chown", name)
}

// Lchown changes the owner of name without following a final symlink:
// afero has no Lchown, so it is Chown for anything but a symlink, a check
// that the link exists for uid = gid = -1 (which changes nothing), and an
// error wrapping errors.ErrUnsupported for other owners of a symlink.
func (l *LayerFS) Lchown(name string, uid, gid int) error {
	fi, err := l.Lstat(name)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			pe.Op = "lchown"
		}
		return err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		err := l.Chown(name, uid, gid)
		if pe, ok := err.(*fs.PathError); ok {
			pe.Op = "lchown"
		}
		return err
	}
	if uid == -1 && gid == -1 {
		return nil
	}
	return layer.Unsupported("lchown", name)
}

// Chtimes changes the access and modification times of name; a zero time
// leaves that time as it was.
func (l *LayerFS) Chtimes(name string, atime, mtime time.Time) error {
	p, err := aferoPath("chtimes", name)
	if err != nil {
		return err
	}
	if mtime.IsZero() {
		fi, err := l.fs.Stat(p)
		if err != nil {
			err = l.fix(err, "chtimes", name)
			if pe, ok := err.(*fs.PathError); ok {
				pe.Op = "chtimes"
			}
			return err
		}
		mtime = fi.ModTime()
	}
	return l.fix(l.fs.Chtimes(p, atime, mtime), "chtimes", name)
}

// Symlink creates newname as a symbolic link to oldname through
// afero.Linker.
func (l *LayerFS) Symlink(oldname, newname string) error {
	p, err := aferoPath("symlink", newname)
	if err != nil {
		return layer.LinkError("symlink", oldname, newname, fs.ErrInvalid)
	}
	// The target's checks come first, as in symlink(2).
	if err := layer.CheckSymlink(oldname, newname); err != nil {
		return layer.LinkError("symlink", oldname, newname, err)
	}
	ln, ok := l.fs.(afero.Linker)
	if !ok {
		return layer.LinkError("symlink", oldname, newname, errNoSymlink{afero.ErrNoSymlink})
	}
	err = ln.SymlinkIfPossible(oldname, p)
	switch e := err.(type) {
	case nil:
		return nil
	case *os.LinkError:
		return &os.LinkError{Op: e.Op, Old: oldname, New: newname, Err: e.Err}
	case *fs.PathError:
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: e.Err}
	}
	if err == afero.ErrNoSymlink {
		err = errNoSymlink{afero.ErrNoSymlink}
	}
	return layer.LinkError("symlink", oldname, newname, err)
}

// Whiteout returns an error wrapping errors.ErrUnsupported: afero has no
// way to store a whiteout.
func (l *LayerFS) Whiteout(name string) error {
	return layer.Unsupported("whiteout", name)
}

// layerFile is an afero.File presented as a layer.File.
type layerFile struct {
	f    afero.File
	l    *LayerFS
	name string // the io/fs name given to OpenFile
	// dir holds a directory's entries not yet returned, sorted, from the
	// first ReadDir until a rewind; listed says the listing was taken.
	dir    []fs.DirEntry
	listed bool
}

var _ layer.File = (*layerFile)(nil)

func (f *layerFile) fix(err error, op string) error { return f.l.fix(err, op, f.name) }

func (f *layerFile) Name() string { return f.name }

func (f *layerFile) Stat() (fs.FileInfo, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return nil, f.fix(err, "stat")
	}
	return rootInfo(fi, f.name), nil
}

func (f *layerFile) Read(p []byte) (int, error) {
	n, err := f.f.Read(p)
	return n, f.fix(err, "read")
}

func (f *layerFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	return n, f.fix(err, "read")
}

func (f *layerFile) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, f.fix(err, "write")
}

func (f *layerFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	return n, f.fix(err, "write")
}

func (f *layerFile) WriteString(s string) (int, error) {
	n, err := f.f.WriteString(s)
	return n, f.fix(err, "write")
}

func (f *layerFile) Seek(off int64, whence int) (int64, error) {
	n, err := f.f.Seek(off, whence)
	if err == nil && n == 0 {
		f.dir, f.listed = nil, false // a rewound directory lists anew
	}
	return n, f.fix(err, "seek")
}

func (f *layerFile) Truncate(size int64) error { return f.fix(f.f.Truncate(size), "truncate") }
func (f *layerFile) Sync() error               { return f.fix(f.f.Sync(), "sync") }

// Close closes the file; a later ReadDir asks the closed afero file again,
// and gets its error, rather than the listing's rest.
func (f *layerFile) Close() error {
	f.dir, f.listed = nil, false
	return f.fix(f.f.Close(), "close")
}

// ReadDir reads the directory's next n entries sorted by name, the rule
// of every PackFS backend: the first call lists the whole directory
// through the afero file's Readdir, whose infos (on the OS: lstat relative
// to the open directory) survive a rename of the directory, and sorts it.
func (f *layerFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if !f.listed {
		infos, err := f.f.Readdir(-1)
		if err != nil {
			return nil, f.fix(err, "readdirent")
		}
		f.dir, f.listed = layer.SortedEntries(infos), true
	}
	return layer.NextBatch(&f.dir, n)
}
