package fusefs

import (
	"errors"
	"io"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Readahead across files. Programs that read a tree (grep -r, tar, a
// build) read a directory's files one after the other, and each first
// read of a file costs a round trip to the server, which on a busy
// machine is mostly the wait for two wakeups. An immutable tree never
// changes, so the server may put files into the kernel's page cache
// before they are asked for (FUSE_NOTIFY_STORE): at a file's first read,
// the next few small files of its directory are pushed, in listing order,
// by up to two goroutines per directory, and their reads are answered from the
// page cache without a request. A directory listed below one being read
// so starts pushing its first files once the kernel holds its entries,
// so that a walk into it waits for none of them either. A listing alone
// pushes nothing, so find and ls cost no more.

const (
	aheadFiles   = 32      // files pushed beyond the one being read
	aheadMax     = 1 << 20 // larger files are left to the kernel's readahead
	aheadPushers = 2       // goroutines pushing one directory's files
)

// readahead is a directory's state of pushing: entries before next have
// been pushed (or skipped, or are being pushed), and pushers run while
// next <= target.
type readahead struct {
	mu      sync.Mutex
	next    int
	target  int
	running int // pushers at work
}

// reading reports whether the directory's files are being read or
// pushed.
func (ra *readahead) reading() bool {
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return ra.target > 0
}

var aheadBufs = sync.Pool{New: func() any { b := make([]byte, aheadMax); return &b }}

// readAhead notes the first read of entry i of dir's listing and starts
// pushing the files after it.
func (r *rawFS) readAhead(dir *rnode, i int) {
	if r.srv == nil {
		return
	}
	ra := &dir.ahead
	ra.mu.Lock()
	defer ra.mu.Unlock()
	ra.next = max(ra.next, i+1)
	ra.target = max(ra.target, i+aheadFiles)
	for ra.running < aheadPushers && ra.next+ra.running <= ra.target {
		ra.running++
		go r.push(dir)
	}
}

// push pushes dir's files up to its target.
func (r *rawFS) push(dir *rnode) {
	ra := &dir.ahead
	for {
		dir.mu.Lock()
		listing := dir.listing
		dir.mu.Unlock()
		ra.mu.Lock()
		if ra.next > ra.target || ra.next >= len(listing) {
			ra.running--
			ra.mu.Unlock()
			return
		}
		j := ra.next
		ra.next++
		ra.mu.Unlock()
		if !r.pushFile(dir, listing[j]) {
			// The kernel refused (the mount is going away): stop.
			ra.mu.Lock()
			ra.running--
			ra.next = len(listing)
			ra.mu.Unlock()
			return
		}
	}
}

// pushFile puts the content of dir's entry e into the kernel's page
// cache, if it is a small regular file the kernel holds. It reports
// false when the kernel no longer takes notifications.
func (r *rawFS) pushFile(dir *rnode, e rentry) bool {
	if e.attr.Mode&syscall.S_IFMT != syscall.S_IFREG || e.attr.Size == 0 || e.attr.Size > aheadMax {
		return true
	}
	p := childPath(dir, e.name)
	ino := e.attr.Ino
	r.mu.Lock()
	if ino == 0 {
		ino = r.byPath[p]
	}
	n := r.nodes[ino]
	r.mu.Unlock()
	if n == nil {
		return true // the kernel does not hold it: nothing to put it in
	}
	// A handle of its own: the node may be forgotten meanwhile, and a
	// file pushed is seldom read through the server.
	f, err := r.fsys.Open(p)
	if err != nil {
		return true
	}
	defer f.Close()
	rat, ok := f.(io.ReaderAt)
	if !ok {
		return true
	}
	bp := aheadBufs.Get().(*[]byte)
	defer aheadBufs.Put(bp)
	buf := (*bp)[:e.attr.Size]
	k, err := rat.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return true // the read itself will report it
	}
	switch st := r.srv.InodeNotifyStoreCache(ino, 0, buf[:k]); st {
	case fuse.OK, fuse.ENOENT:
		return true
	default:
		return false
	}
}
