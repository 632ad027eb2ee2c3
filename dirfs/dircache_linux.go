package dirfs

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirCache keeps O_PATH descriptors of directories beneath the root, so
// that an lstat of a/b/name is one fstatat on a/b's descriptor where it
// would otherwise be an openat2 of a/b, the fstatat and a close.
//
// A descriptor is where its path says only while no directory on the path
// is renamed, removed or replaced, and inotify tells of each of those: every
// directory on a cached path, the root included, is watched for the
// removal, renaming and replacing of its entries, and for changes of its
// own mode and owner (a descriptor would skip the search permission they
// decide). A path is cached only
// once its watches are in place and each of its directories is found again,
// by a fresh lookup in its parent, to be the inode watched; no element of it
// may be a symlink.
//
// An answer read through a cached descriptor is used only when, after the
// call, no event is queued and none was taken from the queue since before
// the call (gen below). The kernel queues the event of a rename before the
// rename returns, and a rename of a directory leaves its entries as they
// were, so an answer used describes the entry as it was while its directory
// was still at its path. Otherwise the call is made again the uncached way.
// A mount or unmount anywhere in the process's mount namespace forgets
// every cached directory (the poll of /proc/self/mountinfo that sees it
// does), and a path through a mount point is never cached.
type dirCache struct {
	root int      // the root's descriptor, owned by the atImpl
	dirs sync.Map // path -> *cachedDir, every prefix of a path cached too

	disabled atomic.Bool // never cache: no inotify, the root gone, or closed

	// Guarded by watcher.mu:
	started bool            // the root is watched
	n       int             // directories cached
	rootWd  int32           // the root's watch
	refused map[string]bool // directories that could not be cached, till an event
}

type cachedDir struct {
	fd   int
	wd   int32
	refs atomic.Int64 // 1 while cached, plus one per call using fd
}

// watcher is the one inotify instance of the process, shared by every FS:
// instances are few (128 a user by default) and others need them too.
var watcher struct {
	// gen grows each time cached directories are forgotten, and busy
	// counts those taking events (inotify's, or the mount table's) that
	// they have not yet acted on: an answer is used only if busy was 0
	// before and after it and gen the same.
	gen  atomic.Uint64
	busy atomic.Int64
	ifd  atomic.Int32 // the instance, once made
	// mfd is /proc/self/mountinfo, whose poll tells of a mount or unmount
	// anywhere in the process's namespace (and acknowledges it); efd is
	// an epoll instance of the two, whose empty ready list is cheaper to
	// ask about than a poll of both.
	mfd atomic.Int32
	efd atomic.Int32

	mu     sync.Mutex // serializes making, filling, draining and closing
	made   bool
	wds    map[int32][]watchRef
	caches map[*dirCache]bool // every started cache, for mount changes
	buf    []byte
}

// watchRef is a directory a watch stands for: path in c's tree.
type watchRef struct {
	c    *dirCache
	path string
}

// maxCachedDirs bounds the descriptors and watches one FS holds; past it the
// cache starts over.
const maxCachedDirs = 256

// watchMask: an entry removed, renamed or replaced, and (IN_ATTRIB) a
// directory's mode or owner changed, which decides who may search it.
const watchMask = unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

func newDirCache(root int) *dirCache {
	return &dirCache{root: root, refused: map[string]bool{}}
}

func (c *dirCache) get(dir string) *cachedDir {
	v, ok := c.dirs.Load(dir)
	if !ok {
		return nil
	}
	d := v.(*cachedDir)
	for {
		n := d.refs.Load()
		if n <= 0 {
			return nil
		}
		if d.refs.CompareAndSwap(n, n+1) {
			return d
		}
	}
}

func (d *cachedDir) put() {
	if d.refs.Add(-1) == 0 {
		unix.Close(d.fd)
	}
}

// lstat fstatats base in the cached directory dir. ok is false when the
// cache holds no answer that can be used; the caller then looks base up
// the uncached way.
func (c *dirCache) lstat(dir, base string, st *unix.Stat_t) (ok bool, err error) {
	g := watcher.gen.Load()
	if watcher.busy.Load() != 0 {
		return false, nil
	}
	d := c.get(dir)
	if d == nil {
		return false, nil
	}
	err = retry(func() error { return unix.Fstatat(d.fd, base, st, unix.AT_SYMLINK_NOFOLLOW) })
	d.put()
	if !quiet(false) || watcher.busy.Load() != 0 || watcher.gen.Load() != g {
		drain()
		return false, nil
	}
	return true, err
}

// quiet reports whether no inotify event is queued and the mount table
// has not changed. A change of the mount table is acknowledged by the poll
// that sees it, so that poll forgets every cached directory itself (locked
// says the caller holds watcher.mu).
func quiet(locked bool) bool {
	var evs [2]unix.EpollEvent
	n, err := unix.EpollWait(int(watcher.efd.Load()), evs[:], 0)
	if err != nil {
		return false
	}
	mfd := watcher.mfd.Load()
	for _, ev := range evs[:n] {
		if ev.Fd == mfd && ev.Events&(unix.EPOLLPRI|unix.EPOLLERR) != 0 {
			watcher.busy.Add(1)
			if !locked {
				watcher.mu.Lock()
			}
			for c := range watcher.caches {
				c.forget("")
			}
			watcher.gen.Add(1)
			if !locked {
				watcher.mu.Unlock()
			}
			watcher.busy.Add(-1)
		}
	}
	return n == 0
}

// drain takes every queued event and forgets the directories they concern.
func drain() {
	watcher.mu.Lock()
	defer watcher.mu.Unlock()
	drainLocked()
}

func drainLocked() {
	if !watcher.made {
		return
	}
	ifd := int(watcher.ifd.Load())
	watcher.busy.Add(1)
	defer watcher.busy.Add(-1)
	for {
		n, err := unix.Read(ifd, watcher.buf)
		if err == unix.EINTR {
			continue
		}
		if n <= 0 {
			return
		}
		events(watcher.buf[:n])
		watcher.gen.Add(1)
	}
}

// events forgets what each event in b may have moved.
func events(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return
		}
		name := string(b[unix.SizeofInotifyEvent:end])
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[end:]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			for _, refs := range watcher.wds {
				for _, r := range refs {
					r.c.forget("")
				}
			}
			continue
		}
		self := ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 ||
			ev.Mask&unix.IN_ATTRIB != 0 && name == ""
		// forget changes the list: go through a copy.
		for _, r := range slices.Clone(watcher.wds[ev.Wd]) {
			clear(r.c.refused)
			switch {
			case self && r.path == "":
				// The root moving moves nothing beneath it; its
				// watch going (the root removed) ends the cache; a
				// change of its mode or owner decides who may
				// search it.
				if ev.Mask&unix.IN_IGNORED != 0 && r.c.rootWd == ev.Wd {
					r.c.stop()
				} else if ev.Mask&unix.IN_ATTRIB != 0 {
					r.c.forget("")
				}
			case self:
				r.c.forget(r.path)
			case name != "":
				r.c.forget(join(r.path, name))
			}
		}
	}
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// forget drops the cached directory p and every one beneath it; "" drops
// them all.
func (c *dirCache) forget(p string) {
	c.dirs.Range(func(k, v any) bool {
		key := k.(string)
		if p == "" || key == p || strings.HasPrefix(key, p) && key[len(p)] == '/' {
			c.dirs.Delete(key)
			c.n--
			d := v.(*cachedDir)
			unwatch(d.wd, c, key)
			d.put()
		}
		return true
	})
}

// unwatch removes c's path from the watch wd, and the watch when it stands
// for nothing else.
func unwatch(wd int32, c *dirCache, p string) {
	refs := watcher.wds[wd]
	for i, r := range refs {
		if r.c == c && r.path == p {
			refs = slices.Delete(refs, i, i+1)
			break
		}
	}
	if len(refs) == 0 {
		delete(watcher.wds, wd)
		unix.InotifyRmWatch(int(watcher.ifd.Load()), uint32(wd))
	} else {
		watcher.wds[wd] = refs
	}
}

// fill caches dir and its parents, and reports whether dir is cached. It
// gives up, caching nothing more, on any doubt.
func (c *dirCache) fill(dir string) bool {
	if c.disabled.Load() {
		return false
	}
	watcher.mu.Lock()
	defer watcher.mu.Unlock()
	if c.disabled.Load() || !c.start() {
		return false
	}
	drainLocked()
	depth := strings.Count(dir, "/") + 1
	if c.refused[dir] || depth > maxCachedDirs {
		return false
	}
	if c.n+depth > maxCachedDirs {
		c.forget("")
	}
	pfd := c.root
	for i := 0; ; {
		end := len(dir)
		if j := strings.IndexByte(dir[i:], '/'); j >= 0 {
			end = i + j
		}
		p := dir[:end]
		if v, ok := c.dirs.Load(p); ok {
			pfd = v.(*cachedDir).fd
		} else if d, err := c.open(pfd, dir[i:end], p); d != nil {
			pfd = d.fd
		} else {
			// A directory missing now may be made without an event
			// (creations are not watched): only other failures,
			// such as a symlink or a mount point on the path, are
			// remembered.
			if err != unix.ENOENT {
				if len(c.refused) >= maxCachedDirs {
					clear(c.refused)
				}
				c.refused[dir] = true
			}
			return false
		}
		if end == len(dir) {
			return true
		}
		i = end + 1
	}
}

// open opens the directory name in the cached directory pfd, watches it,
// checks that name in pfd is still the inode watched, and caches it as p.
func (c *dirCache) open(pfd int, name, p string) (*cachedDir, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: resolveFlags | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV,
	}
	fd, err := unix.Openat2(pfd, name, &how)
	if err != nil {
		return nil, err
	}
	ifd := int(watcher.ifd.Load())
	w, err := unix.InotifyAddWatch(ifd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	wd := int32(w)
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Fstatat(pfd, name, &b, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		a.Dev != b.Dev || a.Ino != b.Ino || !quiet(true) {
		// Moved between the open and the watch, or something else
		// changed: the events, if any, are taken by the next drain.
		if len(watcher.wds[wd]) == 0 {
			unix.InotifyRmWatch(ifd, uint32(wd))
		}
		unix.Close(fd)
		return nil, unix.EAGAIN
	}
	d := &cachedDir{fd: fd, wd: wd}
	d.refs.Store(1)
	c.dirs.Store(p, d)
	watcher.wds[wd] = append(watcher.wds[wd], watchRef{c, p})
	c.n++
	return d, nil
}

// start makes the process's inotify instance if there is none, and
// watches the root.
func (c *dirCache) start() bool {
	if c.started {
		return true
	}
	if !watcher.made {
		ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			// This FS goes without; the next may find an instance freed.
			c.disabled.Store(true)
			return false
		}
		mfd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(ifd)
			c.disabled.Store(true)
			return false
		}
		efd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err == nil {
			err = unix.EpollCtl(efd, unix.EPOLL_CTL_ADD, ifd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(ifd)})
		}
		if err == nil {
			err = unix.EpollCtl(efd, unix.EPOLL_CTL_ADD, mfd, &unix.EpollEvent{Events: unix.EPOLLPRI, Fd: int32(mfd)})
		}
		if err != nil {
			unix.Close(ifd)
			unix.Close(mfd)
			if efd >= 0 {
				unix.Close(efd)
			}
			c.disabled.Store(true)
			return false
		}
		watcher.wds = map[int32][]watchRef{}
		watcher.caches = map[*dirCache]bool{}
		watcher.buf = make([]byte, 16<<10)
		watcher.ifd.Store(int32(ifd))
		watcher.mfd.Store(int32(mfd))
		watcher.efd.Store(int32(efd))
		watcher.made = true
	}
	w, err := unix.InotifyAddWatch(int(watcher.ifd.Load()), "/proc/self/fd/"+strconv.Itoa(c.root), watchMask)
	if err != nil {
		c.disabled.Store(true)
		return false
	}
	c.rootWd = int32(w)
	watcher.wds[c.rootWd] = append(watcher.wds[c.rootWd], watchRef{c, ""})
	watcher.caches[c] = true
	c.started = true
	return true
}

// stop drops every cached directory and the root's watch; the cache is not
// used again.
func (c *dirCache) stop() {
	c.forget("")
	if c.started {
		unwatch(c.rootWd, c, "")
		delete(watcher.caches, c)
		c.started = false
	}
	c.disabled.Store(true)
}

// close stops the cache; no call may use it after.
func (c *dirCache) close() {
	watcher.mu.Lock()
	defer watcher.mu.Unlock()
	c.stop()
}
