package fusefs

import (
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/packfs/packfs/layer"
)

// node is one file the kernel knows. It holds no state of the file but
// its place in go-fuse's tree, from which its path follows: every call
// goes to the layer by path, so a rename through the mount moves the node
// and its subtree with it.
type node struct {
	gofs.Inode
	m *mount

	// links caches a directory's link count, 2 and one per subdirectory
	// (0: not known). A change through the mount that adds or removes a
	// subdirectory clears it; counting lists the directory.
	links atomic.Uint32

	// shared is the one handle an immutable mount reads a file through:
	// there the kernel opens nothing (see Open).
	shared atomic.Pointer[sharedFile]

	// open holds the handles open on the node, so that a change of a
	// removed file's owner or mode (fchown and fchmod, which the kernel
	// sends without a handle) reaches it through one.
	openMu sync.Mutex
	open   map[*file]struct{}
}

// opened registers h, a new handle of n, and returns it.
func (n *node) opened(h *file) *file {
	n.openMu.Lock()
	defer n.openMu.Unlock()
	if n.open == nil {
		n.open = map[*file]struct{}{}
	}
	h.n = n
	n.open[h] = struct{}{}
	return h
}

// anyOpen returns one of the handles open on n, or nil.
func (n *node) anyOpen() *file {
	n.openMu.Lock()
	defer n.openMu.Unlock()
	for h := range n.open {
		return h
	}
	return nil
}

type sharedFile struct{ f layer.File }

var (
	_ gofs.NodeLookuper       = (*node)(nil)
	_ gofs.NodeGetattrer      = (*node)(nil)
	_ gofs.NodeSetattrer      = (*node)(nil)
	_ gofs.NodeOpener         = (*node)(nil)
	_ gofs.NodeOpendirHandler = (*node)(nil)
	_ gofs.NodeReadlinker     = (*node)(nil)
	_ gofs.NodeStatfser       = (*node)(nil)
	_ gofs.NodeCreater        = (*node)(nil)
	_ gofs.NodeMkdirer        = (*node)(nil)
	_ gofs.NodeUnlinker       = (*node)(nil)
	_ gofs.NodeRmdirer        = (*node)(nil)
	_ gofs.NodeRenamer        = (*node)(nil)
	_ gofs.NodeSymlinker      = (*node)(nil)
	_ gofs.NodeLinker         = (*node)(nil)
	_ gofs.NodeFsyncer        = (*node)(nil)
	_ gofs.NodeReader         = (*node)(nil)
	_ gofs.NodeOnForgetter    = (*node)(nil)
)

// path returns n's path in the layer, "." for the root; ok is false once
// n has been removed.
func (n *node) path() (p string, ok bool) {
	var elems []string
	in := &n.Inode
	for !in.IsRoot() {
		name, parent := in.Parent()
		if parent == nil {
			return "", false
		}
		elems = append(elems, name)
		in = parent
	}
	if len(elems) == 0 {
		return ".", true
	}
	slices.Reverse(elems)
	return path.Join(elems...), true
}

// childPath returns the path of n's entry name.
func (n *node) childPath(name string) (string, syscall.Errno) {
	if len(name) > layer.NameMax {
		return "", syscall.ENAMETOOLONG
	}
	p, ok := n.path()
	if !ok {
		return "", syscall.ENOENT
	}
	if p == "." {
		return name, 0
	}
	return p + "/" + name, 0
}

// entry makes (or finds) the node of n's entry name, described by fi, and
// fills out. ino is the number a listing promised for it, or 0.
func (n *node) entry(ctx context.Context, name, p string, fi fs.FileInfo, ino uint64, out *fuse.EntryOut) *gofs.Inode {
	typ := unixMode(fi.Mode()) & syscall.S_IFMT
	child := n.GetChild(name)
	if child == nil || child.StableAttr().Mode != typ {
		if ino == 0 {
			ino = n.m.inos.Add(1)
		}
		child = n.NewInode(ctx, &node{m: n.m}, gofs.StableAttr{Mode: typ, Ino: ino})
	}
	c := child.Operations().(*node)
	n.m.fillAttr(fi, child.StableAttr().Ino, c.nlink(p, fi, true), &out.Attr)
	return child
}

// nlink is the link count of the file at p: 1, or 0 once removed, for a
// file; 2 and one for each subdirectory for a directory, as on Linux.
func (n *node) nlink(p string, fi fs.FileInfo, linked bool) uint32 {
	if !linked {
		return 0
	}
	if !fi.IsDir() {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return uint32(st.Nlink)
		}
		return 1
	}
	if k := n.links.Load(); k != 0 {
		return k
	}
	k := uint32(2)
	entries, err := fs.ReadDir(n.m.fsys, p)
	if err == nil {
		for _, e := range entries {
			if e.IsDir() {
				k++
			}
		}
	}
	if err == nil {
		n.links.Store(k)
	}
	return k
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, e := n.childPath(name)
	if e != 0 {
		return nil, e
	}
	fi, err := fs.Lstat(n.m.fsys, p)
	if err != nil {
		return nil, errno(err)
	}
	return n.entry(ctx, name, p, fi, 0, out), 0
}

func (n *node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	p, linked := n.path()
	var fi fs.FileInfo
	var err error
	switch h := f.(type) {
	case *file:
		fi, err = h.f.Stat()
	case *dir:
		fi, err = h.stat()
	default:
		if !linked {
			return syscall.ENOENT
		}
		fi, err = fs.Lstat(n.m.fsys, p)
	}
	if err != nil {
		return errno(err)
	}
	n.m.fillAttr(fi, n.StableAttr().Ino, n.nlink(p, fi, linked), &out.Attr)
	return 0
}

func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.m.readOnly {
		return syscall.EROFS
	}
	n.m.rename.RLock()
	defer n.m.rename.RUnlock()
	p, ok := n.path()
	if ok {
		defer n.m.mine(p)()
	}
	h, _ := f.(*file)
	if !ok && h == nil {
		if h = n.anyOpen(); h != nil {
			f = h // for the attributes returned
		}
	}
	if !ok && h == nil {
		return syscall.ENOENT
	}
	fsys := n.m.fsys
	if size, ok := in.GetSize(); ok {
		var err error
		if h != nil {
			err = h.f.Truncate(int64(size))
		} else {
			var lf layer.File
			if lf, err = layer.OpenFile(fsys, p, os.O_WRONLY, 0); err == nil {
				err = lf.Truncate(int64(size))
				if cerr := lf.Close(); err == nil {
					err = cerr
				}
			}
		}
		if err != nil {
			return errno(err)
		}
	}
	// A removed file open here has no name: its owner and mode change
	// through the handle, as fchown(2) and fchmod(2) reach it on Linux.
	var byHandle layer.File
	if !ok {
		byHandle = h.f
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		u, g := -1, -1
		if uok {
			u = int(uid)
		}
		if gok {
			g = int(gid)
		}
		var err error
		if c, can := byHandle.(layer.ChownFile); can {
			err = c.Chown(u, g)
		} else {
			err = layer.Lchown(fsys, p, u, g)
		}
		if err != nil {
			return errno(err)
		}
	}
	// The mode after the owner: the kernel sends the mode a chown leaves
	// (setuid dropped) with the new owner.
	if mode, ok := in.GetMode(); ok {
		var err error
		if c, can := byHandle.(layer.ChmodFile); can {
			err = c.Chmod(fileMode(mode))
		} else {
			err = layer.Chmod(fsys, p, fileMode(mode))
		}
		if err != nil {
			return errno(err)
		}
	}
	atime, aok := in.GetATime()
	mtime, mok := in.GetMTime()
	if aok || mok {
		// A zero time leaves that time as it was.
		if !mok {
			mtime = time.Time{}
		}
		if !aok {
			atime = time.Time{}
		}
		if err := n.chtimes(fsys, p, atime, mtime); err != nil {
			return errno(err)
		}
	}
	return n.Getattr(ctx, f, out)
}

// chtimes sets the times of the node's own inode, as SETATTR asks: for a
// symlink (utimensat with AT_SYMLINK_NOFOLLOW) the link's, never its
// target's. A layer that cannot set a link's times leaves them as they
// are, as it does for a link it makes.
func (n *node) chtimes(fsys fs.FS, p string, atime, mtime time.Time) error {
	if n.StableAttr().Mode != syscall.S_IFLNK {
		return layer.Chtimes(fsys, p, atime, mtime)
	}
	if _, ok := fsys.(layer.LchtimesFS); ok {
		return layer.Lchtimes(fsys, p, atime, mtime)
	}
	return nil
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return nil, syscall.ENOENT
	}
	target, err := layer.Readlink(n.m.fsys, p)
	if err != nil {
		return nil, errno(err)
	}
	return []byte(target), 0
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	out.Bsize = blockSize
	out.Frsize = blockSize
	out.NameLen = layer.NameMax
	if !n.m.readOnly {
		// The layers keep no count of space; say there is plenty.
		out.Blocks = 1 << 30
		out.Bfree = 1 << 30
		out.Bavail = 1 << 30
		out.Files = 1 << 30
		out.Ffree = 1 << 30
	}
	return 0
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	acc := int(flags) & syscall.O_ACCMODE
	lflags := acc | int(flags)&(os.O_TRUNC|os.O_SYNC)
	if n.m.readOnly && lflags != os.O_RDONLY {
		return nil, 0, syscall.EROFS
	}
	if n.m.immutable {
		// ENOSYS tells the kernel that opens need no answer: from now
		// on it sends no OPEN or RELEASE for files, and reads arrive
		// without a handle (see Read). It keeps the page cache, as
		// FOPEN_KEEP_CACHE does.
		return nil, 0, syscall.ENOSYS
	}
	p, ok := n.path()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	if lflags != os.O_RDONLY {
		n.m.rename.RLock()
		defer n.m.rename.RUnlock()
		defer n.m.mine(p)()
	}
	f, err := layer.OpenFile(n.m.fsys, p, lflags, 0)
	if err != nil {
		return nil, 0, errno(err)
	}
	var fuseFlags uint32
	if n.m.immutable {
		fuseFlags = fuse.FOPEN_KEEP_CACHE
	}
	if acc != os.O_RDONLY {
		if fi, err := f.Stat(); err == nil {
			fuseFlags |= n.m.directOpen(fi)
		}
	}
	return n.opened(&file{f: f}), fuseFlags, 0
}

// directOpen returns FOPEN_DIRECT_IO for a handle opened for writing on
// a file that is empty once open (created, truncated, or empty before),
// when the kernel lets such a handle be mapped shared; 0 otherwise.
//
// Through the page cache, each write(2) is copied twice before the
// layer sees it: into the kernel's pages of the file, and from them into
// the request the server reads. With FOPEN_DIRECT_IO the request is read
// straight from the program's buffer. The page cache of an empty file
// holds nothing worth keeping, and the mount keeps none across opens
// anyway (no FOPEN_KEEP_CACHE): what is lost is only that reads through
// this handle, of what it wrote, each reach the server. Coherence stays
// the kernel's: a direct write first writes back and drops the cached
// pages it covers, those of other handles and of mappings included, and
// a shared mapping of the handle goes through the page cache as ever
// (FUSE_DIRECT_IO_ALLOW_MMAP; a kernel without it gets no direct
// handles, since it refuses to map them shared). Measured with
// bench/fusebench (one 64 MiB file in 1 MiB writes into a mounted
// store), the copy skipped is about a quarter of the CPU time the write
// costs.
func (m *mount) directOpen(fi fs.FileInfo) uint32 {
	if m.direct.Load() && fi.Mode().IsRegular() && fi.Size() == 0 {
		return fuse.FOPEN_DIRECT_IO
	}
	return 0
}

// Read reads through the handle Open made or, on an immutable mount,
// through the node's shared handle, opened at the first read.
func (n *node) Read(ctx context.Context, f gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h, ok := f.(*file); ok {
		return h.Read(ctx, dest, off)
	}
	sf := n.shared.Load()
	if sf == nil {
		p, ok := n.path()
		if !ok {
			return nil, syscall.ENOENT
		}
		lf, err := layer.OpenFile(n.m.fsys, p, os.O_RDONLY, 0)
		if err != nil {
			return nil, errno(err)
		}
		sf = &sharedFile{f: lf}
		if !n.shared.CompareAndSwap(nil, sf) {
			lf.Close()
			sf = n.shared.Load()
		}
	}
	return (&file{f: sf.f}).Read(ctx, dest, off)
}

// OnForget closes the shared handle once the kernel forgets the node.
func (n *node) OnForget() {
	if sf := n.shared.Swap(nil); sf != nil {
		sf.f.Close()
	}
}

func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if h, ok := f.(*file); ok {
		return h.Fsync(ctx, flags)
	}
	// A directory: make what the tree holds durable, renames included.
	if s, ok := n.m.fsys.(interface{ Sync() error }); ok && !n.m.readOnly {
		return errno(s.Sync())
	}
	return 0
}

// change runs one change of the tree under the shared rename lock.
func (n *node) change(name string, do func(p string) error) (string, syscall.Errno) {
	if n.m.readOnly {
		return "", syscall.EROFS
	}
	p, e := n.childPath(name)
	if e != 0 {
		return "", e
	}
	n.m.rename.RLock()
	defer n.m.rename.RUnlock()
	defer n.m.mine(p)()
	return p, errno(do(p))
}

// added looks up the entry a change made and fills out.
func (n *node) added(ctx context.Context, name, p string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	fi, err := fs.Lstat(n.m.fsys, p)
	if err != nil {
		return nil, errno(err)
	}
	return n.entry(ctx, name, p, fi, 0, out), 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	var f layer.File
	lflags := int(flags)&(syscall.O_ACCMODE|os.O_EXCL|os.O_TRUNC|os.O_SYNC) | os.O_CREATE
	p, e := n.change(name, func(p string) (err error) {
		f, err = layer.OpenFile(n.m.fsys, p, lflags, fileMode(mode))
		return err
	})
	if e != 0 {
		return nil, nil, 0, e
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, 0, errno(err)
	}
	child := n.entry(ctx, name, p, fi, 0, out)
	var fuseFlags uint32
	if lflags&syscall.O_ACCMODE != os.O_RDONLY {
		fuseFlags = n.m.directOpen(fi)
	}
	return child, child.Operations().(*node).opened(&file{f: f}), fuseFlags, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, e := n.change(name, func(p string) error { return layer.Mkdir(n.m.fsys, p, fileMode(mode)) })
	if e != 0 {
		return nil, e
	}
	n.links.Store(0)
	return n.added(ctx, name, p, out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p, e := n.change(name, func(p string) error { return layer.Symlink(n.m.fsys, target, p) })
	if e != 0 {
		return nil, e
	}
	return n.added(ctx, name, p, out)
}

// Link fails: no layer keeps hard links. EPERM is what Linux gives on a
// file system without them; programs such as git then fall back to
// rename.
func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.m.readOnly {
		return nil, syscall.EROFS
	}
	return nil, syscall.EPERM
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	_, e := n.change(name, func(p string) error {
		// Remove takes empty directories too; unlink(2) does not.
		if fi, err := fs.Lstat(n.m.fsys, p); err == nil && fi.IsDir() {
			return syscall.EISDIR
		}
		return layer.Remove(n.m.fsys, p)
	})
	return e
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	_, e := n.change(name, func(p string) error {
		fi, err := fs.Lstat(n.m.fsys, p)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return syscall.ENOTDIR
		}
		return layer.Remove(n.m.fsys, p)
	})
	if e == 0 {
		n.links.Store(0)
	}
	return e
}

// The rename(2) flags.
const (
	renameNoreplace = 1 << 0
	renameExchange  = 1 << 1
)

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if n.m.readOnly {
		return syscall.EROFS
	}
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^renameNoreplace != 0 {
		// RENAME_EXCHANGE (and RENAME_WHITEOUT) have no layer call to
		// do them in one step.
		return syscall.EINVAL
	}
	oldp, e := n.childPath(name)
	if e != 0 {
		return e
	}
	newp, e := np.childPath(newName)
	if e != 0 {
		return e
	}
	if flags&renameNoreplace != 0 {
		n.m.rename.Lock()
		defer n.m.rename.Unlock()
		if _, err := fs.Lstat(n.m.fsys, oldp); err != nil {
			return errno(err)
		}
		if _, err := fs.Lstat(n.m.fsys, newp); err == nil {
			return syscall.EEXIST
		}
	} else {
		n.m.rename.RLock()
		defer n.m.rename.RUnlock()
	}
	defer n.m.mine(oldp, newp)()
	if err := layer.Rename(n.m.fsys, oldp, newp); err != nil {
		return errno(err)
	}
	if fi, err := fs.Lstat(n.m.fsys, newp); err != nil || fi.IsDir() {
		// A directory moved: both parents count their subdirectories
		// again (a file replaced by a directory changes the count too).
		n.links.Store(0)
		np.links.Store(0)
	}
	return 0
}
