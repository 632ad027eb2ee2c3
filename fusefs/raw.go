package fusefs

import (
	"errors"
	"io"
	"io/fs"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/packreader"
)

// rawFS serves an immutable tree through go-fuse's raw API: each request
// is answered by inode number from a table of the inodes the kernel
// holds, without go-fuse's node tree. Since nothing changes, a node's
// attributes, a directory's listing and a symlink's target are read once
// and kept while the kernel remembers the inode, and the kernel is told
// to open nothing (no OPEN, OPENDIR, RELEASE or RELEASEDIR requests) and
// to keep names, attributes, listings, targets and contents cached.
type rawFS struct {
	fuse.RawFileSystem // ENOSYS for what an immutable tree does not do

	fsys                      fs.FS
	pack                      bool // inode numbers and link counts come from the pack
	uid, gid                  uint32
	entryTTL, attrTTL, negTTL time.Duration

	srv *fuse.Server

	mu     sync.Mutex
	nodes  map[uint64]*rnode // by inode number: what the kernel holds
	byPath map[string]uint64 // a tree without inode numbers: the numbers handed out
	next   uint64            // the last number handed out
}

// rnode is one inode the kernel holds.
type rnode struct {
	ino     uint64
	path    string // "." for the root; one of its names for a hard link
	attr    fuse.Attr
	lookups uint64 // the kernel's count of references; under rawFS.mu

	// dir and idx place the node in its directory's listing (dir is
	// nil when it is not known), for readahead across files.
	dir *rnode
	idx int

	mu      sync.Mutex
	listing []rentry // a directory's entries, once listed
	listed  bool
	target  []byte  // a symlink's target, once read
	file    fs.File // a regular file's handle, opened at the first read

	ahead readahead // a directory's: its files pushed to the kernel
}

// rentry is one entry of a listing, with the attributes READDIRPLUS
// gives.
type rentry struct {
	name string
	attr fuse.Attr
}

func newRawFS(fsys fs.FS, uid, gid uint32, entry, attr, neg time.Duration) (*rawFS, error) {
	r := &rawFS{
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		fsys:          fsys,
		uid:           uid,
		gid:           gid,
		entryTTL:      entry,
		attrTTL:       attr,
		negTTL:        neg,
		nodes:         map[uint64]*rnode{},
		byPath:        map[string]uint64{},
		next:          fuse.FUSE_ROOT_ID,
	}
	if p, ok := fsys.(*packreader.Reader); ok && p.Version() >= 3 {
		r.pack = true
	}
	fi, err := fs.Lstat(fsys, ".")
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, syscall.ENOTDIR
	}
	root := &rnode{ino: fuse.FUSE_ROOT_ID, path: ".", lookups: 1}
	a, err := r.attrOf(".", fi)
	if err != nil {
		return nil, err
	}
	root.attr = a
	root.attr.Ino = fuse.FUSE_ROOT_ID
	r.nodes[root.ino] = root
	r.byPath["."] = root.ino
	return r, nil
}

func (r *rawFS) String() string { return "packfs" }

func (r *rawFS) Init(srv *fuse.Server) { r.srv = srv }

// inodeSys is what a pack's FileInfo.Sys gives: its inode number and
// link count.
type inodeSys interface{ Inode() (uint64, uint32) }

// attrOf describes the entry at p. Its inode number is the pack's, or 0
// for a tree without numbers, where acquire hands one out.
func (r *rawFS) attrOf(p string, fi fs.FileInfo) (fuse.Attr, error) {
	var out fuse.Attr
	out.Mode = unixMode(fi.Mode())
	size := max(fi.Size(), 0)
	out.Size = uint64(size)
	out.Blocks = (out.Size + 511) / 512
	out.Blksize = blockSize
	out.Owner = fuse.Owner{Uid: r.uid, Gid: r.gid}
	t := fi.ModTime()
	setTime(&out.Mtime, &out.Mtimensec, t)
	sys := fi.Sys()
	if st, ok := sys.(*syscall.Stat_t); ok {
		out.Owner = fuse.Owner{Uid: st.Uid, Gid: st.Gid}
		out.Rdev = uint32(st.Rdev)
		out.Blocks = uint64(st.Blocks)
		out.Nlink = uint32(st.Nlink)
		setTime(&out.Atime, &out.Atimensec, time.Unix(st.Atim.Unix()))
		setTime(&out.Mtime, &out.Mtimensec, time.Unix(st.Mtim.Unix()))
		setTime(&out.Ctime, &out.Ctimensec, time.Unix(st.Ctim.Unix()))
		if !fi.IsDir() {
			return out, nil
		}
	} else {
		out.Atime, out.Atimensec = out.Mtime, out.Mtimensec
		out.Ctime, out.Ctimensec = out.Mtime, out.Mtimensec
		if o, ok := sys.(layer.OwnerSys); ok {
			uid, gid := o.Owner()
			setOwner(&out.Owner, uid, gid)
		}
	}
	if r.pack {
		s, ok := sys.(inodeSys)
		if !ok {
			// Sys is nil once the pack is closed or its attribute
			// block is damaged.
			return out, syscall.EIO
		}
		out.Ino, out.Nlink = s.Inode()
		return out, nil
	}
	out.Nlink = 1
	if fi.IsDir() {
		// 2 and one per subdirectory, as on Linux.
		entries, err := fs.ReadDir(r.fsys, p)
		if err != nil {
			return out, err
		}
		out.Nlink = 2
		for _, e := range entries {
			if e.IsDir() {
				out.Nlink++
			}
		}
	}
	return out, nil
}

// number returns the inode number of the entry at p: the pack's, or in a
// tree without numbers the one handed out for p, kept while the kernel
// holds the node.
func (r *rawFS) number(p string, a *fuse.Attr) uint64 {
	if a.Ino != 0 {
		return a.Ino
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ino, ok := r.byPath[p]
	if !ok {
		r.next++
		ino = r.next
		r.byPath[p] = ino
	}
	return ino
}

// acquire counts one more reference by the kernel to the node of the
// entry at p described by a, numbered ino, entry idx of dir's listing
// (dir nil: not known), and fills out.
func (r *rawFS) acquire(p string, ino uint64, a *fuse.Attr, dir *rnode, idx int, out *fuse.EntryOut) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.nodes[ino]
	if n == nil {
		n = &rnode{ino: ino, path: p, attr: *a, dir: dir, idx: idx}
		n.attr.Ino = ino
		r.nodes[ino] = n
		if _, ok := r.byPath[p]; !ok && !r.pack {
			r.byPath[p] = ino
		}
	}
	n.lookups++
	out.NodeId = ino
	out.Attr = n.attr
	out.SetEntryTimeout(r.entryTTL)
	out.SetAttrTimeout(r.attrTTL)
}

// node returns the node the kernel holds as ino, and its attributes.
func (r *rawFS) node(ino uint64) (*rnode, fuse.Attr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.nodes[ino]
	if n == nil {
		return nil, fuse.Attr{}
	}
	return n, n.attr
}

func (r *rawFS) Forget(ino, nlookup uint64) {
	r.mu.Lock()
	n := r.nodes[ino]
	if n == nil || ino == fuse.FUSE_ROOT_ID {
		r.mu.Unlock()
		return
	}
	n.lookups -= min(nlookup, n.lookups)
	if n.lookups > 0 {
		r.mu.Unlock()
		return
	}
	delete(r.nodes, ino)
	if r.byPath[n.path] == ino {
		delete(r.byPath, n.path)
	}
	r.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.file != nil {
		n.file.Close()
		n.file = nil
	}
}

// childPath returns the path of parent's entry name.
func childPath(parent *rnode, name string) string {
	if parent.path == "." {
		return name
	}
	return parent.path + "/" + name
}

func (r *rawFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	parent, pa := r.node(h.NodeId)
	if parent == nil {
		return fuse.ENOENT
	}
	if len(name) > layer.NameMax {
		return fuse.Status(syscall.ENAMETOOLONG)
	}
	if pa.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fuse.Status(syscall.ENOTDIR)
	}
	p := childPath(parent, name)
	var a fuse.Attr
	var err error
	dir, idx := (*rnode)(nil), -1
	if e, i, ok := parent.cached(name); ok {
		a, dir, idx = e.attr, parent, i
	} else {
		var fi fs.FileInfo
		if fi, err = fs.Lstat(r.fsys, p); err == nil {
			a, err = r.attrOf(p, fi)
		}
	}
	if err != nil {
		st := fuse.Status(errno(err))
		if st == fuse.ENOENT && r.negTTL > 0 {
			// A negative entry: the kernel remembers the name is
			// missing for the timeout.
			*out = fuse.EntryOut{}
			out.SetEntryTimeout(r.negTTL)
			return fuse.OK
		}
		return st
	}
	r.acquire(p, r.number(p, &a), &a, dir, idx, out)
	return fuse.OK
}

// cached finds name in n's listing, if it has been read: the listing,
// once read, never changes.
func (n *rnode) cached(name string) (rentry, int, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.listed {
		return rentry{}, 0, false
	}
	i := sort.Search(len(n.listing), func(i int) bool { return n.listing[i].name >= name })
	if i < len(n.listing) && n.listing[i].name == name {
		return n.listing[i], i, true
	}
	return rentry{}, 0, false
}

func (r *rawFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	n, a := r.node(in.NodeId)
	if n == nil {
		return fuse.ENOENT
	}
	out.Attr = a
	out.SetTimeout(r.attrTTL)
	return fuse.OK
}

// Open answers ENOSYS, after which the kernel sends no OPEN or RELEASE
// for files and reads through handle 0 with its page cache kept, as
// FOPEN_KEEP_CACHE asks. A write is refused first.
func (r *rawFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.Flags&syscall.O_ACCMODE != syscall.O_RDONLY || in.Flags&syscall.O_TRUNC != 0 {
		return fuse.EROFS
	}
	if r.noOpen(fuse.CAP_NO_OPEN_SUPPORT) {
		return fuse.ENOSYS
	}
	out.OpenFlags = fuse.FOPEN_KEEP_CACHE
	return fuse.OK
}

// OpenDir answers ENOSYS as Open does: no OPENDIR or RELEASEDIR, and
// listings kept in the kernel's cache (FOPEN_CACHE_DIR).
func (r *rawFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if r.noOpen(fuse.CAP_NO_OPENDIR_SUPPORT) {
		return fuse.ENOSYS
	}
	out.OpenFlags = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_CACHE_DIR
	return fuse.OK
}

// noOpen reports whether the kernel offered to do without the open
// requests of capability c: otherwise ENOSYS would be an error.
func (r *rawFS) noOpen(c uint64) bool {
	return r.srv != nil && r.srv.KernelSettings().Flags64()&c != 0
}

func (r *rawFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {}
func (r *rawFS) ReleaseDir(in *fuse.ReleaseIn)                      {}

func (r *rawFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	n, a := r.node(in.NodeId)
	if n == nil {
		return nil, fuse.ENOENT
	}
	if a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return nil, fuse.Status(syscall.EISDIR)
	}
	f, err := n.open(r.fsys)
	if err != nil {
		return nil, fuse.Status(errno(err))
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, fuse.EIO
	}
	if in.Offset == 0 && n.dir != nil {
		r.readAhead(n.dir, n.idx)
	}
	size := min(int(in.Size), len(buf))
	k, err := ra.ReadAt(buf[:size], int64(in.Offset))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fuse.Status(errno(err))
	}
	return fuse.ReadResultData(buf[:k]), fuse.OK
}

// Lseek answers SEEK_DATA and SEEK_HOLE from the pack's file, whose
// holes a program copying it out of the mount then finds.
func (r *rawFS) Lseek(cancel <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	n, a := r.node(in.NodeId)
	if n == nil {
		return fuse.ENOENT
	}
	if a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fuse.EINVAL
	}
	f, err := n.open(r.fsys)
	if err != nil {
		return fuse.Status(errno(err))
	}
	off, e := lseek(f, in.Offset, in.Whence)
	out.Offset = off
	return fuse.Status(e)
}

// open returns the node's shared handle, opened at its first read and
// closed when the kernel forgets the node.
func (n *rnode) open(fsys fs.FS) (fs.File, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.file == nil {
		f, err := fsys.Open(n.path)
		if err != nil {
			return nil, err
		}
		n.file = f
	}
	return n.file, nil
}

func (r *rawFS) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	n, _ := r.node(h.NodeId)
	if n == nil {
		return nil, fuse.ENOENT
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.target == nil {
		t, err := layer.Readlink(r.fsys, n.path)
		if err != nil {
			return nil, fuse.Status(errno(err))
		}
		n.target = []byte(t)
	}
	return n.target, fuse.OK
}

// list reads n's listing, once, with each entry's attributes.
func (r *rawFS) list(n *rnode) ([]rentry, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.listed {
		return n.listing, 0
	}
	entries, err := fs.ReadDir(r.fsys, n.path)
	if err != nil {
		return nil, errno(err)
	}
	listing := make([]rentry, len(entries))
	for i, e := range entries {
		p := childPath(n, e.Name())
		fi, err := e.Info()
		if err != nil {
			return nil, errno(err)
		}
		a, err := r.attrOf(p, fi)
		if err != nil {
			return nil, errno(err)
		}
		listing[i] = rentry{name: e.Name(), attr: a}
	}
	n.listing, n.listed = listing, true
	return listing, 0
}

// The offsets of a listing: 1 after ".", 2 after "..", and i+3 after
// entry i.

func (r *rawFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.readDir(in, out, false)
}

func (r *rawFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.readDir(in, out, true)
}

func (r *rawFS) readDir(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	n, _ := r.node(in.NodeId)
	if n == nil {
		return fuse.ENOENT
	}
	listing, e := r.list(n)
	if e != 0 {
		return fuse.Status(e)
	}
	parent := n.ino
	if n.dir != nil {
		parent = n.dir.ino
	} else if n.path != "." {
		if pn := r.parentOf(n); pn != 0 {
			parent = pn
		}
	}
	if plus && in.Offset > 0 && n.dir != nil && n.dir.ahead.reading() {
		// Files are being read above: the kernel holds the entries
		// the first reply gave, so their contents may go ahead.
		r.readAhead(n, -1)
	}
	for off := in.Offset; off < uint64(len(listing))+2; off++ {
		de := fuse.DirEntry{Off: off + 1, Mode: syscall.S_IFDIR}
		var re *rentry
		switch off {
		case 0:
			de.Name, de.Ino = ".", n.ino
		case 1:
			de.Name, de.Ino = "..", parent
		default:
			re = &listing[off-2]
			de.Name, de.Ino, de.Mode = re.name, r.number(childPath(n, re.name), &re.attr), re.attr.Mode&syscall.S_IFMT
		}
		if !plus {
			if !out.AddDirEntry(de) {
				break
			}
			continue
		}
		eo := out.AddDirLookupEntry(de)
		if eo == nil {
			break
		}
		if re == nil {
			// The kernel looks nothing up for "." and "..": a zero
			// node id keeps its count of references right.
			continue
		}
		r.acquire(childPath(n, re.name), de.Ino, &re.attr, n, int(off-2), eo)
	}
	return fuse.OK
}

// parentOf returns the inode number of n's parent directory, 0 if the
// kernel holds none.
func (r *rawFS) parentOf(n *rnode) uint64 {
	dir := "."
	for i := len(n.path) - 1; i >= 0; i-- {
		if n.path[i] == '/' {
			dir = n.path[:i]
			break
		}
	}
	if r.pack {
		fi, err := fs.Lstat(r.fsys, dir)
		if err != nil {
			return 0
		}
		if s, ok := fi.Sys().(inodeSys); ok {
			ino, _ := s.Inode()
			return ino
		}
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byPath[dir]
}

func (r *rawFS) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	out.Bsize = blockSize
	out.Frsize = blockSize
	out.NameLen = layer.NameMax
	return fuse.OK
}

// Every change is EROFS: the tree is immutable (the mount is read-only
// too, so the kernel refuses most of them before they come here).

func (r *rawFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	return fuse.EROFS
}
func (r *rawFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	return 0, fuse.EROFS
}
func (r *rawFS) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status    { return fuse.OK }
func (r *rawFS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status { return fuse.OK }
func (r *rawFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status    { return fuse.ENOSYS }

// invalidate forgets what is cached of name, here and in the kernel.
func (r *rawFS) invalidate(name string) error {
	dir, base := ".", name
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			dir, base = name[:i], name[i+1:]
			break
		}
	}
	var parent, child *rnode
	r.mu.Lock()
	for _, n := range r.nodes {
		switch n.path {
		case dir:
			parent = n
		case name:
			child = n
		}
	}
	r.mu.Unlock()
	var err error
	for _, n := range []*rnode{parent, child} {
		if n == nil {
			continue
		}
		n.mu.Lock()
		n.listing, n.listed, n.target = nil, false, nil
		if n.file != nil {
			n.file.Close()
			n.file = nil
		}
		n.mu.Unlock()
		if fi, lerr := fs.Lstat(r.fsys, n.path); lerr == nil {
			if a, aerr := r.attrOf(n.path, fi); aerr == nil {
				r.mu.Lock()
				a.Ino = n.ino
				n.attr = a
				r.mu.Unlock()
			}
		}
		if r.srv != nil {
			if e := errOf("invalidate", name, syscall.Errno(r.srv.InodeNotify(n.ino, 0, 0))); err == nil {
				err = e
			}
		}
	}
	if parent != nil && name != "." && r.srv != nil {
		if e := errOf("invalidate", name, syscall.Errno(r.srv.EntryNotify(parent.ino, base))); err == nil {
			err = e
		}
	}
	return err
}
