package fusefs

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/packfs/packfs/layer"
)

// Options configures a mount. The zero Options (or nil) serves fsys
// read-write when it implements [layer.OpenFileFS] and read-only,
// immutable otherwise.
type Options struct {
	// ReadOnly refuses every change with EROFS and mounts read-only.
	ReadOnly bool

	// Immutable promises that fsys never changes (a pack, a union of
	// packs): the kernel then keeps names, attributes and file contents
	// cached for as long as it likes (FOPEN_KEEP_CACHE). It implies
	// ReadOnly. A file system without write capabilities is immutable.
	Immutable bool

	// EntryTimeout and AttrTimeout are how long the kernel may trust a
	// name it looked up and the attributes it read; NegativeTimeout, a
	// name it found missing. Zero means the default: an hour for an
	// immutable tree, a second otherwise. A negative value means none.
	EntryTimeout, AttrTimeout, NegativeTimeout time.Duration

	// FsName is the source shown in /proc/mounts (default "packfs").
	FsName string

	// NodeAPI serves an immutable tree through go-fuse's node API, as a
	// tree that may change is, instead of the raw API: for comparing the
	// two (bench/fusebench), and as a fallback.
	NodeAPI bool

	// AllowOther lets users other than the mounting one in (allow_other).
	AllowOther bool

	// NoWatch leaves the mount blind to the changes a tree that reports
	// them ([layer.WatchFS]) makes beside it: they show once the kernel's
	// timeouts pass, and no goroutine follows the tree's change feed.
	NoWatch bool

	// Debug logs every FUSE request and reply.
	Debug bool
}

// Server is a mounted file system, served until it is unmounted.
type Server struct {
	srv *fuse.Server
	m   *mount // a tree that may change: go-fuse's node API
	raw *rawFS // an immutable tree: the raw API
	dir string
}

// mount is what every node of one mount shares.
type mount struct {
	fsys      fs.FS
	readOnly  bool
	immutable bool
	uid, gid  uint32
	inos      atomic.Uint64 // the last inode number handed out
	root      *node

	// watch, when the tree reports its changes, gets those made beside
	// the mount; self names the changes being made through it (see
	// notify.go).
	watch *layer.Watcher
	self  selfNames

	// rename serializes RENAME_NOREPLACE, which the layer contract cannot
	// express in one call, against the changes made through the mount:
	// every other change holds it shared.
	rename sync.RWMutex

	// direct is set once the kernel keeps shared mmap of a file opened
	// with FOPEN_DIRECT_IO (FUSE_DIRECT_IO_ALLOW_MMAP): writes to an
	// empty file then bypass the kernel's page cache (see directOpen).
	direct atomic.Bool
}

// Mount serves fsys at the directory dir through FUSE and returns once the
// kernel answers requests there. Call [Server.Wait] to wait for the
// unmount and [Server.Unmount] to end it.
func Mount(dir string, fsys fs.FS, opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := *opts
	if _, ok := fsys.(layer.OpenFileFS); !ok {
		o.ReadOnly, o.Immutable = true, true
	}
	if o.Immutable {
		o.ReadOnly = true
	}
	m := &mount{
		fsys:      fsys,
		readOnly:  o.ReadOnly,
		immutable: o.Immutable,
		uid:       uint32(os.Getuid()),
		gid:       uint32(os.Getgid()),
	}
	m.inos.Store(1) // the root's
	m.root = &node{m: m}
	if _, err := fs.Stat(fsys, "."); err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}

	def := time.Second
	if o.Immutable {
		def = time.Hour
	}
	timeout := func(d time.Duration) *time.Duration {
		switch {
		case d == 0:
			d = def
		case d < 0:
			d = 0
		}
		return &d
	}
	name := o.FsName
	if name == "" {
		name = "packfs"
	}
	mo := fuse.MountOptions{
		FsName:        name,
		Name:          "packfs",
		AllowOther:    o.AllowOther,
		Debug:         o.Debug,
		DisableXAttrs: true, // no layer keeps them; spares a getxattr per write
		MaxWrite:      1 << 20,
		MaxReadAhead:  1 << 20,
		// Readahead of many files at once, as grep -r or a build
		// does, keeps more requests in flight than go-fuse's 12.
		MaxBackground: 64,
		DirectMount:   true, // as root, without fusermount; falls back to it
		Options:       []string{"default_permissions"},
	}
	if o.ReadOnly {
		mo.Options = append(mo.Options, "ro")
	} else {
		mo.ExtraCapabilities |= fuse.CAP_DIRECT_IO_ALLOW_MMAP
	}
	if o.Immutable && !o.NodeAPI {
		return mountRaw(dir, fsys, m, mo, *timeout(o.EntryTimeout), *timeout(o.AttrTimeout), *timeout(o.NegativeTimeout))
	}
	gopts := &gofs.Options{
		MountOptions:    mo,
		EntryTimeout:    timeout(o.EntryTimeout),
		AttrTimeout:     timeout(o.AttrTimeout),
		NegativeTimeout: timeout(o.NegativeTimeout),
		RootStableAttr:  &gofs.StableAttr{Ino: 1},
		NullPermissions: true, // mode 0 is a mode, not "unset"
	}
	watching := !o.NoWatch && m.watchTree()
	srv, err := gofs.Mount(dir, m.root, gopts)
	if err != nil {
		if watching {
			m.watch.Close()
		}
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	m.direct.Store(!o.ReadOnly && srv.KernelSettings().Flags64()&fuse.CAP_DIRECT_IO_ALLOW_MMAP != 0)
	if watching {
		done := make(chan struct{})
		go func() {
			srv.Wait()
			close(done)
		}()
		go m.notifyLoop(done)
	}
	return &Server{srv: srv, m: m, dir: dir}, nil
}

// mountRaw serves an immutable tree through the raw API (raw.go).
func mountRaw(dir string, fsys fs.FS, m *mount, mo fuse.MountOptions, entry, attr, neg time.Duration) (*Server, error) {
	raw, err := newRawFS(fsys, m.uid, m.gid, entry, attr, neg)
	if err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	// The kernel may then keep symlink targets, and may open nothing
	// (see rawFS.Open and OpenDir).
	mo.EnableSymlinkCaching = true
	mo.ExtraCapabilities |= fuse.CAP_NO_OPENDIR_SUPPORT
	srv, err := fuse.NewServer(raw, dir, &mo)
	if err != nil {
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		srv.Unmount()
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	return &Server{srv: srv, raw: raw, dir: dir}, nil
}

// Wait returns when the file system has been unmounted.
func (s *Server) Wait() { s.srv.Wait() }

// Unmount unmounts the file system. It fails with EBUSY while a process
// has a file or its working directory there.
func (s *Server) Unmount() error { return s.srv.Unmount() }

// Dir returns the mountpoint.
func (s *Server) Dir() string { return s.dir }

// Invalidate tells the kernel to forget what it cached of name and its
// contents: call it after changing the served tree other than through the
// mount, when the tree does not report its changes ([layer.WatchFS]; one
// that does is watched, see the package doc). The kernel trusts its
// cache for the mount's timeouts, so without it such a change may stay
// unseen that long (forever, for an immutable mount).
func (s *Server) Invalidate(name string) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: "invalidate", Path: name, Err: fs.ErrInvalid}
	}
	if s.raw != nil {
		return s.raw.invalidate(name)
	}
	n := &s.m.root.Inode
	s.m.root.links.Store(0)
	if name == "." {
		return errOf("invalidate", name, n.NotifyContent(0, 0))
	}
	elems := strings.Split(name, "/")
	for i, e := range elems {
		child := n.GetChild(e)
		if child == nil || i == len(elems)-1 {
			// The kernel drops the name, with what hangs below, and the
			// parent's attributes: its times and link count may change.
			err := errOf("invalidate", name, n.NotifyEntry(e))
			if perr := errOf("invalidate", name, n.NotifyContent(0, 0)); err == nil {
				err = perr
			}
			if child != nil {
				child.Operations().(*node).links.Store(0)
				if cerr := errOf("invalidate", name, child.NotifyContent(0, 0)); err == nil {
					err = cerr
				}
			}
			return err
		}
		n = child
		n.Operations().(*node).links.Store(0)
	}
	return nil
}

// errOf turns a notification's errno into an error; ENOENT means the
// kernel had nothing cached, which is no error.
func errOf(op, name string, e syscall.Errno) error {
	if e == 0 || e == syscall.ENOENT {
		return nil
	}
	return &fs.PathError{Op: op, Path: name, Err: e}
}
