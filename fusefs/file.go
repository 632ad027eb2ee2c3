package fusefs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/packfs/packfs/layer"
)

// file is an open file: the layer's handle, read and written at the
// kernel's offsets.
type file struct {
	f layer.File
	n *node // the node it is open on (see node.opened)
}

var (
	_ gofs.FileReader   = (*file)(nil)
	_ gofs.FileWriter   = (*file)(nil)
	_ gofs.FileFlusher  = (*file)(nil)
	_ gofs.FileFsyncer  = (*file)(nil)
	_ gofs.FileReleaser = (*file)(nil)
	_ gofs.FileLseeker  = (*file)(nil)
)

// Lseek answers SEEK_DATA and SEEK_HOLE, the only whences the kernel
// asks the server, from the layer's file where it takes them
// (layer.HoleSeeker), so that a program copying a sparse file out of the
// mount (cp, tar -S) finds its holes; elsewhere the whole file is data.
func (h *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return lseek(h.f, off, whence)
}

// lseek is Lseek on f, an open regular file, with lseek(2)'s errors:
// ENXIO at or past the end.
func lseek(f fs.File, off uint64, whence uint32) (uint64, syscall.Errno) {
	if hs, ok := f.(layer.HoleSeeker); ok && hs.SeeksHoles() && off <= math.MaxInt64 {
		pos, err := hs.Seek(int64(off), int(whence))
		if err != nil {
			return 0, errno(err)
		}
		return uint64(pos), 0
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, errno(err)
	}
	switch size := uint64(fi.Size()); {
	case off >= size:
		return 0, syscall.ENXIO
	case whence == layer.SeekData:
		return off, 0
	case whence == layer.SeekHole:
		return size, 0
	}
	return 0, syscall.EINVAL
}

func (h *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if h.n != nil && h.n.m.watch != nil {
		if p, ok := h.n.path(); ok {
			defer h.n.m.mine(p)()
		}
	}
	n, err := h.f.WriteAt(data, off)
	if err != nil {
		return uint32(n), errno(err)
	}
	return uint32(n), 0
}

// Flush would run at each close(2) of a descriptor, but the layer's
// handle keeps nothing back that a close must push: ENOSYS tells the
// kernel so, and it sends no more, which spares a round trip per close.
func (h *file) Flush(ctx context.Context) syscall.Errno { return syscall.ENOSYS }

// Fsync calls the file's Sync: on a store, a durable commit.
func (h *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return errno(h.f.Sync())
}

func (h *file) Release(ctx context.Context) syscall.Errno {
	if h.n != nil {
		h.n.openMu.Lock()
		delete(h.n.open, h)
		h.n.openMu.Unlock()
	}
	return errno(h.f.Close())
}

// dir is an open directory. It lists the directory at the first read, as
// a layer's handle does, and pages through the listing, "." and ".."
// first.
type dir struct {
	n  *node
	mu sync.Mutex
	f  fs.File // the layer's handle on the directory
	// listing holds the entries and the inode numbers promised for them;
	// nil until the first read.
	listing []dirent
	listed  bool
	pos     int // the next entry: 0 ".", 1 "..", then listing[pos-2]
}

type dirent struct {
	e   fs.DirEntry
	ino uint64
}

var (
	_ gofs.FileReaddirenter = (*dir)(nil)
	_ gofs.FileSeekdirer    = (*dir)(nil)
	_ gofs.FileLookuper     = (*dir)(nil)
	_ gofs.FileReleasedirer = (*dir)(nil)
	_ gofs.FileFsyncdirer   = (*dir)(nil)
)

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	p, ok := n.path()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	f, err := n.m.fsys.Open(p)
	if err != nil {
		return nil, 0, errno(err)
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		if err != nil {
			return nil, 0, errno(err)
		}
		return nil, 0, syscall.ENOTDIR
	}
	var fuseFlags uint32
	if n.m.immutable {
		fuseFlags = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_CACHE_DIR
	}
	return &dir{n: n, f: f}, fuseFlags, 0
}

func (d *dir) stat() (fs.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.f.Stat()
}

// list reads the listing, once.
func (d *dir) list() syscall.Errno {
	if d.listed {
		return 0
	}
	rd, ok := d.f.(fs.ReadDirFile)
	if !ok {
		return syscall.ENOTDIR
	}
	entries, err := rd.ReadDir(-1)
	if err != nil {
		return errno(err)
	}
	d.listing = make([]dirent, len(entries))
	for i, e := range entries {
		d.listing[i].e = e
		// A name the kernel knows keeps its number; another gets the
		// number its lookup will use.
		typ := unixMode(e.Type()) & syscall.S_IFMT
		if c := d.n.GetChild(e.Name()); c != nil && c.StableAttr().Mode == typ {
			d.listing[i].ino = c.StableAttr().Ino
		} else {
			d.listing[i].ino = d.n.m.inos.Add(1)
		}
	}
	d.listed = true
	return 0
}

func (d *dir) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.list(); e != 0 {
		return nil, e
	}
	pos := d.pos
	switch {
	case pos == 0:
		d.pos++
		return &fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: d.n.StableAttr().Ino, Off: 1}, 0
	case pos == 1:
		d.pos++
		ino := uint64(1)
		if _, parent := d.n.Parent(); parent != nil {
			ino = parent.StableAttr().Ino
		}
		return &fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: ino, Off: 2}, 0
	case pos-2 >= len(d.listing):
		return nil, 0
	}
	de := d.listing[pos-2]
	d.pos++
	return &fuse.DirEntry{
		Name: de.e.Name(),
		Mode: unixMode(de.e.Type()) & syscall.S_IFMT,
		Ino:  de.ino,
		Off:  uint64(pos + 1),
	}, 0
}

// Seekdir moves to the entry after the one at offset off; 0 rewinds and
// lists the directory again, as rewinddir(3) does.
func (d *dir) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off == 0 {
		if s, ok := d.f.(io.Seeker); ok {
			if _, err := s.Seek(0, io.SeekStart); err != nil {
				return errno(err)
			}
		} else {
			p, ok := d.n.path()
			if !ok {
				return syscall.ENOENT
			}
			f, err := d.n.m.fsys.Open(p)
			if err != nil {
				return errno(err)
			}
			d.f.Close()
			d.f = f
		}
		d.listed, d.listing = false, nil
	}
	d.pos = int(min(off, 1<<31))
	return 0
}

// Lookup answers READDIRPLUS's lookup of the entry just listed: from the
// listing on an immutable mount, afresh otherwise, since the listing may
// be older than a change made since.
func (d *dir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	d.mu.Lock()
	var de *dirent
	if i := d.pos - 3; i >= 0 && i < len(d.listing) && d.listing[i].e.Name() == name {
		de = &d.listing[i]
	}
	d.mu.Unlock()
	if de == nil {
		return d.n.Lookup(ctx, name, out)
	}
	p, e := d.n.childPath(name)
	if e != 0 {
		return nil, e
	}
	var fi fs.FileInfo
	var err error
	if d.n.m.immutable {
		fi, err = de.e.Info()
	} else {
		fi, err = fs.Lstat(d.n.m.fsys, p)
	}
	if err != nil {
		return nil, errno(err)
	}
	return d.n.entry(ctx, name, p, fi, de.ino, out), 0
}

func (d *dir) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return d.n.Fsync(ctx, nil, flags)
}

func (d *dir) Releasedir(ctx context.Context, releaseFlags uint32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.f.Close()
}
