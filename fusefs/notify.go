package fusefs

import (
	"io/fs"
	"strings"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/packfs/packfs/layer"
)

// A tree that reports its changes ([layer.WatchFS]) is watched, and the
// kernel is told at once of each change made beside the mount: its
// cached names, attributes and pages of what changed are dropped
// (FUSE_NOTIFY_INVAL_ENTRY, FUSE_NOTIFY_DELETE, FUSE_NOTIFY_INVAL_INODE),
// and go-fuse's tree of names follows a removal or a rename, so that an
// open file and the names below a moved directory reach the layer by
// their new names.
//
// The kernel already knows what a change through the mount did: such a
// change is made with its names in m.self, and the watcher's filter,
// which runs on the goroutine making a change, drops the changes of
// names in it. The notifications go out from a goroutine of their own,
// never from a request's: the kernel takes the locks of the inodes a
// notification names, which a request waiting for its answer may hold.

// selfNames counts, by name, the changes being made through the mount.
type selfNames struct {
	mu    sync.Mutex
	names map[string]int
}

// begin records that the mount is changing names; end, that it is done.
func (s *selfNames) begin(names ...string) {
	s.mu.Lock()
	if s.names == nil {
		s.names = map[string]int{}
	}
	for _, n := range names {
		s.names[n]++
	}
	s.mu.Unlock()
}

func (s *selfNames) end(names ...string) {
	s.mu.Lock()
	for _, n := range names {
		if s.names[n]--; s.names[n] <= 0 {
			delete(s.names, n)
		}
	}
	s.mu.Unlock()
}

// has reports whether the mount is changing name now.
func (s *selfNames) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name] > 0
}

// mine records names as being changed through the mount, until the
// function it returns is called: the watcher drops what it reports of
// them meanwhile. It costs nothing on a mount that does not watch.
func (m *mount) mine(names ...string) (done func()) {
	if m.watch == nil {
		return nothing
	}
	m.self.begin(names...)
	return func() { m.self.end(names...) }
}

func nothing() {}

// fromBeside is the watcher's filter: it keeps the changes made beside
// the mount.
func (m *mount) fromBeside(c layer.Change) bool {
	return !m.self.has(c.Name) && (c.NewName == "" || !m.self.has(c.NewName))
}

// watchTree subscribes to fsys's changes when it reports them; false
// when it does not.
func (m *mount) watchTree() bool {
	w, ok := m.fsys.(layer.WatchFS)
	if !ok {
		return false
	}
	watcher, err := w.Watch(m.fromBeside)
	if err != nil {
		return false
	}
	m.watch = watcher
	return true
}

// notifyLoop tells the kernel of the changes the watcher gets until done
// is closed.
func (m *mount) notifyLoop(done <-chan struct{}) {
	defer m.watch.Close()
	for {
		select {
		case <-done:
			return
		case <-m.watch.Ready():
		}
		for _, c := range m.watch.Changes() {
			m.notify(c)
		}
	}
}

// find walks go-fuse's tree along name: the node of name when the kernel
// holds it, or else the deepest node found and the element missing
// below it.
func (m *mount) find(name string) (n *gofs.Inode, missing string) {
	n = &m.root.Inode
	if name == "." || name == "" {
		return n, ""
	}
	for elem := range strings.SplitSeq(name, "/") {
		if missing != "" {
			return n, missing // a name below one the kernel does not hold
		}
		child := n.GetChild(elem)
		if child == nil {
			missing = elem
			continue
		}
		n = child
	}
	return n, missing
}

// findParent returns the node of name's directory and name's last
// element, when the kernel holds that directory; nil otherwise.
func (m *mount) findParent(name string) (*gofs.Inode, string) {
	dir, base := ".", name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		dir, base = name[:i], name[i+1:]
	}
	n, missing := m.find(dir)
	if missing != "" || base == "." {
		return nil, ""
	}
	return n, base
}

// notify tells the kernel of one change made beside the mount.
func (m *mount) notify(c layer.Change) {
	switch {
	case c.Op&layer.OpReset != 0:
		m.notifyAll(&m.root.Inode)
	case c.Op&layer.OpRename != 0:
		m.renamed(c.Name, c.NewName)
	case c.Op&layer.OpRemove != 0:
		m.removed(c.Name)
	case c.Op&layer.OpCreate != 0:
		m.created(c.Name)
	}
	if c.Op&(layer.OpWrite|layer.OpChattr) != 0 && c.Op&(layer.OpRename|layer.OpRemove) == 0 {
		n, missing := m.find(c.Name)
		if missing == "" {
			off := int64(-1) // the attributes only
			if c.Op&layer.OpWrite != 0 {
				off = 0 // and every cached page
			}
			n.NotifyContent(off, 0)
		}
	}
}

// parentChanged drops what the kernel holds of directory dir's
// attributes and listing (its mtime and link count change with its
// entries).
func parentChanged(dir *gofs.Inode) {
	dir.Operations().(*node).links.Store(0)
	dir.NotifyContent(0, 0)
}

// created tells the kernel that name was made, or replaced by a new
// entry: a name it found missing is looked up again. A name it holds
// whose entry kept its type keeps its place (dropping a directory's
// name would cut the working directory of a process inside it off the
// tree), and its attributes and pages are dropped.
func (m *mount) created(name string) {
	n, missing := m.find(name)
	if missing != "" {
		n.NotifyEntry(missing)
		parentChanged(n)
		return
	}
	if n.IsRoot() {
		parentChanged(n)
		return
	}
	elem, parent := n.Parent()
	if parent == nil {
		return
	}
	parentChanged(parent)
	if m.sameType(name, n) {
		n.Operations().(*node).links.Store(0)
		n.NotifyContent(0, 0)
		return
	}
	parent.RmChild(elem)
	parent.NotifyEntry(elem)
}

// sameType reports whether the entry at name still has the type of n,
// the node the kernel holds for it.
func (m *mount) sameType(name string, n *gofs.Inode) bool {
	fi, err := fs.Lstat(m.fsys, name)
	return err == nil && unixMode(fi.Mode())&syscall.S_IFMT == n.StableAttr().Mode
}

// removed tells the kernel that name is gone, with all below it.
func (m *mount) removed(name string) {
	n, missing := m.find(name)
	if missing != "" {
		n.NotifyEntry(missing)
		return
	}
	elem, parent := n.Parent()
	if parent == nil {
		return
	}
	if parent.GetChild(elem) == n {
		parent.RmChild(elem)
	}
	if parent.NotifyDelete(elem, n) != 0 {
		// A directory the kernel still holds entries of, say.
		parent.NotifyEntry(elem)
	}
	parentChanged(parent)
}

// renamed tells the kernel that from moved to to: go-fuse's tree moves
// the node, so that what the kernel holds of it (an open file, a
// directory's entries) reaches the layer by its new name, and both names
// are looked up again. The kernel has no notification of a move: a
// process working in a moved directory goes on, and getcwd gives the
// old path until the new name is looked up.
func (m *mount) renamed(from, to string) {
	if from == to {
		m.created(to) // a rename onto itself: nothing moved
		return
	}
	n, missing := m.find(from)
	newParent, newName := m.findParent(to)
	if missing == "" && !n.IsRoot() {
		elem, parent := n.Parent()
		if parent != nil {
			moved := false
			if newParent != nil {
				moved = parent.MvChild(elem, newParent, newName, true)
			}
			if !moved {
				parent.RmChild(elem)
			}
			parent.NotifyEntry(elem)
			parentChanged(parent)
		}
	} else if missing != "" {
		n.NotifyEntry(missing)
	}
	if newParent != nil {
		newParent.NotifyEntry(newName)
		parentChanged(newParent)
	}
}

// notifyAll tells the kernel that anything below dir may have changed:
// each name it holds there is checked against the layer, a missing one
// or one of another type dropped, and every attribute and page dropped.
// Names the kernel found missing stay so until NegativeTimeout.
func (m *mount) notifyAll(dir *gofs.Inode) {
	parentChanged(dir)
	p, ok := dir.Operations().(*node).path()
	if !ok {
		return
	}
	for elem, child := range dir.Children() {
		cp := elem
		if p != "." {
			cp = p + "/" + elem
		}
		if !m.sameType(cp, child) {
			dir.RmChild(elem)
			dir.NotifyEntry(elem)
			continue
		}
		if child.IsDir() {
			m.notifyAll(child)
		} else {
			child.NotifyContent(0, 0)
		}
	}
}
