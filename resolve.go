package packfs

import (
	"errors"
	"hash/maphash"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
)

// node is a name as the union sees it: the topmost entry that stands for
// it, and, for a directory, every layer whose directory of the same name
// merges into it.
type node struct {
	// path is the union path, "." for the root. A walk leaves it empty in
	// the directories it passes through, which parent and name locate,
	// and sets it in the nodes it returns (see pathOf).
	path   string
	parent *node       // the directory holding it; nil for the root
	name   string      // its name in parent
	info   fs.FileInfo // the topmost entry; nil when the name does not exist
	layer  int         // the layer holding info
	target string      // a symlink's target, when its layer gave it (see pathwalk.Entry)
	dirs   []int       // a directory: the layers merged, top first
	// at holds, for each of dirs, that layer's handle on the directory
	// (see pathwalk.LookupFS), and pat the parent's handle in layer.
	at  []pathwalk.Dir
	pat pathwalk.Dir
	// below reports that some lower layer holds the name, visibly or
	// hidden by a whiteout in the upper: removing or replacing it must
	// leave a whiteout, and a directory made there must be opaque.
	below bool
	// upperWhiteout reports that the upper layer holds a whiteout here.
	upperWhiteout bool
	// slash: a missing name reached with a trailing slash (a symlink
	// target "x/"), which may only be made as a directory.
	slash bool
}

func (n *node) exists() bool { return n.info != nil }
func (n *node) isDir() bool  { return n.info != nil && n.info.IsDir() }

func (n *node) isSymlink() bool {
	return n.info != nil && n.info.Mode()&fs.ModeSymlink != 0
}

// pathOf sets and returns n's union path, built from the names up to the
// nearest node that knows its own: O(depth).
func (n *node) pathOf() string {
	if n.path != "" {
		return n.path
	}
	size, top := -1, n
	for ; top.path == ""; top = top.parent {
		size += len(top.name) + 1
	}
	if top.path != "." {
		size += len(top.path) + 1
	}
	b := make([]byte, size)
	i := size
	for m := n; m != top; m = m.parent {
		i -= len(m.name)
		copy(b[i:], m.name)
		if i > 0 {
			i--
			b[i] = '/'
		}
	}
	copy(b, top.path[:i]) // i is 0 when top is the root
	n.path = string(b)
	return n.path
}

// root returns the node of the union's root directory. Which layers merge
// there is found once: the lowers never change, and the union never marks
// the upper's root opaque. Its info is the top layer's root, read each
// time, since writes change it.
func (u *FS) root() (*node, error) {
	u.rootOnce.Do(func() {
		for i, l := range u.layers {
			u.rootDirs = append(u.rootDirs, i)
			if i < len(u.layers)-1 && layer.IsOpaque(l, ".") {
				break
			}
		}
		u.rootAt = make([]pathwalk.Dir, len(u.rootDirs)) // nil: each root
	})
	fi, err := fs.Stat(u.layers[0], ".")
	if err != nil {
		return nil, err
	}
	return &node{path: ".", info: fi, dirs: u.rootDirs, at: u.rootAt}, nil
}

// lookupFS returns l's LookupAt, unless l is a union with mounts, which
// are matched on names.
func lookupFS(l fs.FS) (pathwalk.LookupFS, bool) {
	if lu, ok := l.(*FS); ok && lu.mounts.Load() != nil {
		return nil, false
	}
	la, ok := l.(pathwalk.LookupFS)
	return la, ok
}

// lookupIn looks name up in the k-th layer merged into dir: in one step
// where the layer offers pathwalk.LookupFS, and else by the union path.
func (u *FS) lookupIn(dir *node, k int, name string) (pathwalk.Entry, error) {
	i := dir.dirs[k]
	l := u.layers[i]
	if la, ok := lookupFS(l); ok {
		return la.LookupAt(dir.at[k], name)
	}
	p := path.Join(dir.pathOf(), name)
	fi, err := fs.Lstat(l, p)
	if err != nil {
		return pathwalk.Entry{}, err
	}
	e := pathwalk.Entry{Info: fi}
	if fi.IsDir() && i < len(u.layers)-1 {
		e.Opaque = layer.IsOpaque(l, p)
	}
	return e, nil
}

// lookup returns the node of name in the directory dir, with its path.
func (u *FS) lookup(dir *node, name string) (*node, error) {
	n, err := u.lookupNode(dir, name)
	if err == nil {
		n.path = path.Join(dir.pathOf(), name)
	}
	return n, err
}

// lookupNode is lookup without the path: a walk sets only the paths of
// the nodes it returns, since joining one at each element would cost
// time quadratic in the path's length.
func (u *FS) lookupNode(dir *node, name string) (*node, error) {
	n := &node{parent: dir, name: name}
	for k, i := range dir.dirs {
		e, err := u.lookupIn(dir, k, name)
		if err != nil {
			if isNotExist(err) {
				continue
			}
			return nil, err
		}
		fi := e.Info
		if i > 0 {
			n.below = true
		}
		if layer.IsWhiteout(fi.Mode()) {
			if i == 0 {
				n.upperWhiteout = true
				// Keep looking only to learn whether a lower holds it.
				n.below = n.below || u.lowerHas(dir, name)
			}
			break
		}
		if n.info == nil {
			n.info, n.layer, n.pat, n.target = fi, i, dir.at[k], e.Target
		} else if !fi.IsDir() || !n.info.IsDir() {
			break // only directories merge
		}
		if !fi.IsDir() {
			if i == 0 {
				n.below = u.lowerHas(dir, name)
			}
			break
		}
		if n.dirs == nil {
			n.dirs, n.at = dirSlices(len(dir.dirs) - k)
		}
		n.dirs = append(n.dirs, i)
		n.at = append(n.at, e.Dir)
		// The bottom layer's opacity hides nothing.
		if i < len(u.layers)-1 && e.Opaque {
			if i == 0 {
				n.below = u.lowerHas(dir, name)
			}
			break
		}
	}
	return n, nil
}

// dirSlices returns empty slices with room for the layers of a directory
// that merges at most max of them, in one allocation for two layers or
// fewer, the common case.
func dirSlices(max int) ([]int, []pathwalk.Dir) {
	if max > 2 {
		return make([]int, 0, max), make([]pathwalk.Dir, 0, max)
	}
	b := new(struct {
		dirs [2]int
		at   [2]pathwalk.Dir
	})
	return b.dirs[:0], b.at[:0]
}

// lowerHas reports whether a lower layer merged into dir holds name.
func (u *FS) lowerHas(dir *node, name string) bool {
	for k, i := range dir.dirs {
		if i == 0 {
			continue
		}
		if _, err := u.lookupIn(dir, k, name); err == nil {
			return true
		}
	}
	return false
}

// readLink returns the target of the symlink n, refusing one too long to
// resolve before reading it.
func (u *FS) readLink(n *node) (string, error) {
	if pathwalk.TooLong(n.info.Size()) {
		return "", syscall.ENAMETOOLONG
	}
	if n.target != "" {
		return n.target, nil
	}
	l := u.layers[n.layer]
	if la, ok := lookupFS(l); ok && n.parent != nil {
		return la.ReadLinkAt(n.pat, n.name)
	}
	return fs.ReadLink(l, n.pathOf())
}

// walk resolves name, following symlinks in every element and in the last
// one too when follow is set, by the rules of package pathwalk applied to
// the union: a symlink of any layer resolves in the whole union. It
// returns the directory holding the last element and its node, which may
// not exist, both with their paths. Its cost is linear in the bytes of
// name and of the targets it follows, with one lookup per element and
// layer (see pathwalk.LookupFS).
// The error is a bare errno or fs sentinel; callers wrap it.
func (u *FS) walk(name string, follow bool) (dir, n *node, err error) {
	return u.walkOpen(name, follow, false)
}

// walkOpen is walk for open, where create says O_CREAT is set (see
// walkTo).
func (u *FS) walkOpen(name string, follow, create bool) (dir, n *node, err error) {
	if !pathwalk.ValidPath(name) {
		return nil, nil, fs.ErrInvalid
	}
	root, err := u.root()
	if err != nil {
		return nil, nil, err
	}
	if name == "." {
		return nil, root, nil
	}
	dir, n, _, err = u.walkTo(root, name, follow, create)
	return dir, n, err
}

// walkFrom is walk from the root node root, through the layers it merges.
func (u *FS) walkFrom(root *node, name string, follow bool) (dir, n *node, err error) {
	dir, n, _, err = u.walkTo(root, name, follow, false)
	return dir, n, err
}

// walkTo is walkFrom that, when an element is missing, also returns where
// in name it starts, or -1 when it comes from a symlink's target, and
// when it is not the last, the directory it is missing from.
//
// With create (an open with O_CREAT), a last element that came with a
// trailing slash (from a symlink target "x/") is not looked up: as on
// Linux, such an open is EISDIR whatever is there, which n.slash tells.
func (u *FS) walkTo(root *node, name string, follow, create bool) (dir, n *node, missing int, err error) {
	if name == "." {
		return nil, root, -1, nil
	}
	w, err := pathwalk.New(name)
	if err != nil {
		return nil, nil, -1, err
	}
	var buf [16]*node
	stack := buf[:0]
	if n := pathwalk.Depth(name); n > len(buf) {
		stack = make([]*node, 0, n) // one allocation for a deep path
	}
	stack = append(stack, root)
	for {
		from := w.Offset()
		elem, step, last := w.Next()
		cur := stack[len(stack)-1]
		switch step {
		case pathwalk.Stay:
			if last {
				return nil, done(cur), -1, nil
			}
			continue
		case pathwalk.Up:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			if last {
				return nil, done(stack[len(stack)-1]), -1, nil
			}
			continue
		}
		if err := pathwalk.CheckElem(elem); err != nil {
			return nil, nil, -1, err
		}
		mustDir := last && w.Slash()
		if mustDir && create {
			return done(cur), &node{parent: cur, name: elem, slash: true}, -1, nil
		}
		child, err := u.lookupNode(cur, elem)
		if err != nil {
			return nil, nil, -1, err
		}
		if !child.exists() {
			if last {
				child.slash = mustDir
				return done(cur), done(child), from, nil
			}
			return done(cur), nil, from, syscall.ENOENT
		}
		if child.isSymlink() && (follow || !last || mustDir) {
			key := linkKey{child.layer, child.pat, child.name}
			if _, ok := lookupFS(u.layers[child.layer]); !ok {
				key.name = child.pathOf()
			}
			target, err := w.Target(key, func() (string, error) { return u.readLink(child) })
			if err != nil {
				return nil, nil, -1, err
			}
			abs, err := w.Follow(target, last)
			if err != nil {
				return nil, nil, -1, err
			}
			if abs {
				stack = stack[:1]
			}
			continue
		}
		if last && !(mustDir && !child.isDir()) {
			return done(cur), done(child), -1, nil
		}
		if !child.isDir() {
			return nil, nil, -1, syscall.ENOTDIR
		}
		stack = append(stack, child)
	}
}

// linkKey names a symlink for pathwalk.Walker.Target: its layer, the
// layer's handle on its directory, and its name. A layer without handles
// gives nil ones, and its links go by their union paths.
type linkKey struct {
	layer int
	dir   pathwalk.Dir
	name  string
}

// done gives a node the walk returns its path.
func done(n *node) *node {
	n.pathOf()
	return n
}

// resolve is walk for names that must exist; errors are wrapped for op.
func (u *FS) resolve(op, name string, follow bool) (*node, error) {
	_, n, err := u.walk(name, follow)
	if err == nil && !n.exists() {
		err = syscall.ENOENT
	}
	if err != nil {
		return nil, layer.PathError(op, name, bare(err))
	}
	return n, nil
}

// bare strips the *fs.PathError a layer wrapped around an errno, so that
// the union's own error names the union's path.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// The lower layers' read fast path (see also read.go). Resolving a name
// element by element in every layer costs an Lstat per element and layer;
// most reads of a union over packs name a file whose directory only one
// lower layer holds, and then that layer answers for the union directly,
// in one resolution of its own.
//
// fastLower finds that layer from two facts:
//
//   - the upper layer holds nothing on the path: not its first element,
//     hence nothing below (no entry, whiteout, opaque marker or symlink).
//     The union checks the first element with one Lstat of the upper
//     layer, and remembers the answer until the writers' lock moves its
//     generation on;
//   - in the lower layers alone, the name's directory resolves without
//     following a symlink to a directory of one layer, and the last
//     element is a regular file there. Lower layers never change (see
//     New), so the directory is learned once, by one walk of the lowers,
//     and remembered with that layer's handle on it; the last element is
//     looked up in that handle at each read (one lookup, not a walk).
//
// Then every layer above that one lacks the directory or hides it, and
// the union's answer for the name is that layer's: the name's resolution
// never leaves the directory. Names below a mount point never get here.
// Names at the root, whose directory merges every layer, take the slow
// path.

// lowerDir is what the fast path learned of one directory of the union.
type lowerDir struct {
	dir   string // its name in the union
	layer int    // the layer holding the directory alone; -1: none does
	// la is that layer's LookupAt, nil when it has none, and at its handle
	// on the directory.
	la  pathwalk.LookupFS
	at  pathwalk.Dir
	top *atomic.Uint64 // the stamp of its first element (see upperLacks)
	// unlearned marks a record made only for lastDir, of a directory whose
	// first element the upper layer held: its layer is not known yet.
	unlearned bool
}

// fileIn returns the description of base in d's layer when it is a regular
// file there: then, and only then, the fast path answers for it.
func (u *FS) fileIn(d *lowerDir, name, base string) (fs.FileInfo, bool) {
	if d.la != nil {
		e, err := d.la.LookupAt(d.at, base)
		if err != nil || !e.Info.Mode().IsRegular() {
			return nil, false
		}
		return e.Info, true
	}
	fi, err := fs.Lstat(u.layers[d.layer], name)
	return fi, err == nil && fi.Mode().IsRegular()
}

// fastLower returns the layer that answers for name on the fast path,
// name's description there and its last element, or false when name
// takes the slow path.
func (u *FS) fastLower(name string) (int, fs.FileInfo, string, bool) {
	d, base, ok := u.fastDir(name)
	if !ok {
		return 0, nil, "", false
	}
	fi, ok := u.fileIn(d, name, base)
	return d.layer, fi, base, ok
}

// fastDir returns what the fast path learned of name's directory, which
// one lower layer alone holds, and name's last element, or false when
// name takes the slow path: the caller looks base up in d's layer.
func (u *FS) fastDir(name string) (d *lowerDir, base string, ok bool) {
	if len(name) >= pathwalk.MaxPath {
		return nil, "", false // ENAMETOOLONG, which the handle's lookup cannot see
	}
	slash := strings.LastIndexByte(name, '/')
	if slash <= 0 {
		return nil, "", false // the root's entries merge every layer
	}
	dir, base := name[:slash], name[slash+1:]
	top := dir
	if i := strings.IndexByte(dir, '/'); i >= 0 {
		top = dir[:i]
	}
	d = u.lastDir.Load() // reads come in runs from one directory
	if d == nil || d.dir != dir {
		d = nil
		if v, ok := u.lowerDirs.Load(dir); ok {
			d = v.(*lowerDir)
			u.lastDir.Store(d)
		}
	}
	if u.upper != nil {
		var stamp *atomic.Uint64
		if d != nil {
			stamp = d.top
		} else if v, ok := u.tops.Load(top); ok {
			stamp = v.(*atomic.Uint64)
		}
		lacks, stamp := u.upperLacks(top, stamp)
		if !lacks {
			if d == nil && stamp != nil {
				// Remember the stamp for the next read in dir, which
				// then declines without a lookup of the maps.
				u.lastDir.Store(&lowerDir{dir: dir, layer: -1, top: stamp, unlearned: true})
			}
			return nil, "", false
		}
	}
	if d == nil || d.unlearned {
		if d = u.learnDir(dir, top); d == nil {
			return nil, "", false
		}
		u.lastDir.Store(d)
	}
	if d.layer < 0 || base == layer.OpaqueName || base == "." || base == ".." || base == "" {
		return nil, "", false
	}
	return d, base, true
}

// upperLacks reports whether the upper layer holds no entry named top at
// its root, and returns top's stamp when it has one. A stamp remembers the answer for one generation of the
// writers' lock: the generation plus one, shifted left, with the low bit
// set when the upper layer holds top. Stamps are kept for the first
// elements of directories the fast path learned and for names the upper
// layer holds, so that names nobody created take no room.
func (u *FS) upperLacks(top string, stamp *atomic.Uint64) (bool, *atomic.Uint64) {
	gen := u.mu.gen.Load() + 1 // a stamp of 0 was never set
	if stamp != nil {
		if s := stamp.Load(); s>>1 == gen {
			return s&1 == 0, stamp
		}
	}
	_, err := u.upper.Lstat(top)
	has := err == nil || !isNotExist(err)
	if stamp == nil && has {
		stamp = u.stamp(top)
	}
	if stamp != nil {
		s := gen << 1
		if has {
			s |= 1
		}
		stamp.Store(s)
	}
	return !has, stamp
}

// stamp returns the stamp of the first element top.
func (u *FS) stamp(top string) *atomic.Uint64 {
	v, _ := u.tops.LoadOrStore(top, new(atomic.Uint64))
	return v.(*atomic.Uint64)
}

// learnDir learns and remembers which lower layer alone holds the
// directory dir, looking at the lower layers only: it holds for as long as
// the upper layer holds nothing on the path. It returns nil, and
// remembers nothing, when dir is no directory of the lowers.
func (u *FS) learnDir(dir, top string) *lowerDir {
	root, err := u.root()
	if err != nil {
		return nil
	}
	if !pathwalk.ValidPath(dir) {
		return nil
	}
	lowers := *root
	if u.upper != nil {
		// root.dirs[0] is the upper layer
		lowers.dirs, lowers.at = root.dirs[1:], root.at[1:]
	}
	_, n, err := u.walkFrom(&lowers, dir, true)
	if err != nil || !n.isDir() {
		return nil
	}
	d := &lowerDir{dir: dir, layer: -1, top: u.stamp(top)}
	// A path that came out as it went in followed no symlink: a symlink
	// followed changes the directories that later elements are joined to.
	if n.path == dir && len(n.dirs) == 1 {
		d.layer = n.dirs[0]
		if la, ok := lookupFS(u.layers[d.layer]); ok {
			d.la, d.at = la, n.at[0]
		}
	}
	v, _ := u.lowerDirs.LoadOrStore(dir, d)
	return v.(*lowerDir)
}

var _ pathwalk.LookupFS = (*FS)(nil)

// LookupAt looks name up in a directory of the union found by an earlier
// LookupAt (nil: the root), so that a union stacked over this one (over
// its snapshot) resolves a path in one lookup per element too. A union
// with mounts is asked by paths instead (see lookupIn): its mounts are
// matched on names: it gives errors.ErrUnsupported, so that a caller
// falls back to paths rather than walk past a mount point.
func (u *FS) LookupAt(dir pathwalk.Dir, name string) (pathwalk.Entry, error) {
	if u.mounts.Load() != nil {
		return pathwalk.Entry{}, errors.ErrUnsupported
	}
	d, err := u.dirAt(dir)
	if err != nil {
		return pathwalk.Entry{}, err
	}
	n, err := u.lookupNode(d, name)
	switch {
	case err != nil:
		return pathwalk.Entry{}, err
	case !n.exists():
		return pathwalk.Entry{}, syscall.ENOENT
	}
	e := pathwalk.Entry{Info: named(n.info, name), Target: n.target}
	if n.isDir() {
		e.Dir = n
	}
	return e, nil
}

// ReadLinkAt returns the target of the symlink name in dir.
func (u *FS) ReadLinkAt(dir pathwalk.Dir, name string) (string, error) {
	if u.mounts.Load() != nil {
		return "", errors.ErrUnsupported
	}
	d, err := u.dirAt(dir)
	if err != nil {
		return "", err
	}
	n, err := u.lookupNode(d, name)
	switch {
	case err != nil:
		return "", err
	case !n.exists():
		return "", syscall.ENOENT
	case !n.isSymlink():
		return "", syscall.EINVAL
	}
	return u.readLink(n)
}

// dirAt returns the node a LookupAt handle stands for.
func (u *FS) dirAt(dir pathwalk.Dir) (*node, error) {
	if n, ok := dir.(*node); ok && n != nil {
		return n, nil
	}
	return u.root()
}

// The directory cache, the fast path for names whose directory merges
// layers (the root, and directories both the upper layer and a lower
// hold), where fastLower declines. A read of dir/base resolves dir once
// per directory generation of the writers' lock (see writeLock) and keeps
// its node, with every merged layer's handle on it; later reads of names
// in dir look base up in those handles, one lookup per layer, instead of
// walking the whole path through every layer. A node is kept only when
// dir resolved without following a symlink, so that a name's walk and
// the cached one are the same lookups: the walk of dir/base passes
// through dir exactly as the walk of dir does.
//
// The handles stay current as files come and go (an upper layer of
// package mem reads a handle's directory as it is now), so a write that
// only adds or removes a file, a symlink or an empty directory in a
// directory the upper layer already holds keeps the cache (keepDirs; a
// removed directory's own node is then refused at its next hit, see
// linked); every other write (a copy-up of a directory, a removal of a
// merged one, a rename of one, a change of a directory's attributes, a
// mount) moves the directory generation on, and the next read resolves
// the directory again.

// dirSlots is the size of the cache: a fixed number of slots, each the
// latest directory whose name hashes there, so that the cache costs no
// lock, no allocation on a hit, and bounded room.
const dirSlots = 64

type dirCache [dirSlots]atomic.Pointer[cachedDir]

// cachedDir is a directory's node as resolved in generation gen.
type cachedDir struct {
	gen uint64
	dir string
	n   *node
}

var dirSeed = maphash.MakeSeed()

// cachedDirNode returns the node of the directory dir, which name's walk
// passes through, resolved in generation gen, or nil when dir is not a
// directory reached without symlinks.
func (u *FS) cachedDirNode(dir string, gen uint64) *node {
	slot := &u.rootSlot
	if dir != "." {
		c := u.dcache.Load()
		if c == nil {
			c = new(dirCache)
			if !u.dcache.CompareAndSwap(nil, c) {
				c = u.dcache.Load()
			}
		}
		slot = &c[maphash.String(dirSeed, dir)%dirSlots]
	}
	if cd := slot.Load(); cd != nil && cd.gen == gen && cd.dir == dir && u.linked(cd.n) {
		return cd.n
	}
	var n *node
	if dir == "." {
		var err error
		if n, err = u.root(); err != nil {
			return nil
		}
	} else {
		_, d, err := u.walk(dir, true)
		if err != nil || !d.isDir() || d.path != dir {
			return nil
		}
		n = d
	}
	slot.Store(&cachedDir{gen: gen, dir: dir, n: n})
	return n
}

// linkedFS is an upper layer that tells whether a directory handle its
// LookupAt gave is still linked (package mem).
type linkedFS interface {
	Linked(dir pathwalk.Dir) bool
}

// linked reports whether the upper layer's part of n, a cached directory,
// is still where it was resolved. Removing an empty directory of the upper
// layer alone keeps the cache (see walkWrite): a node kept for it, or
// stored by a reader that resolved it just before, fails here.
func (u *FS) linked(n *node) bool {
	if len(n.dirs) == 0 || n.dirs[0] != 0 {
		return true
	}
	lf, ok := u.layers[0].(linkedFS)
	return !ok || lf.Linked(n.at[0])
}

// rmdirKeeps reports whether removing n, an existing directory, leaves
// every other directory's layers as they were and a node kept for it
// detectably stale: n is the upper layer's alone, and that layer says
// whether a handle is linked.
func (u *FS) rmdirKeeps(n *node) bool {
	if n.layer != 0 || n.below || len(n.dirs) != 1 || n.dirs[0] != 0 {
		return false
	}
	_, ok := u.layers[0].(linkedFS)
	return ok
}

// peek returns, for a read of name, the layer whose regular file name is
// in the union, with its description and name's last element, found
// through the directory cache; false sends the caller to the other paths,
// which give every error.
func (u *FS) peek(name string) (int, fs.FileInfo, string, bool) {
	d, base, ok := u.peekDir(name)
	if !ok {
		return 0, nil, "", false
	}
	// The first layer that holds base answers, as lookupNode finds: a
	// regular file there is the union's; anything else (a whiteout, a
	// directory that may merge, a symlink) takes the other paths.
	for k, i := range d.dirs {
		e, err := u.lookupIn(d, k, base)
		switch {
		case err == nil:
			if !e.Info.Mode().IsRegular() {
				return 0, nil, "", false
			}
			return i, e.Info, base, true
		case !isNotExist(err):
			return 0, nil, "", false
		}
	}
	return 0, nil, "", false
}

// peekDir returns the cached node of name's directory and name's last
// element, or false when name takes the other paths.
func (u *FS) peekDir(name string) (d *node, base string, ok bool) {
	if len(name) >= pathwalk.MaxPath || !pathwalk.ValidPath(name) || name == "." {
		return nil, "", false
	}
	dir, base := ".", name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		dir, base = name[:i], name[i+1:]
	}
	if pathwalk.CheckElem(base) != nil || base == layer.OpaqueName {
		return nil, "", false
	}
	d = u.cachedDirNode(dir, u.mu.dirGen.Load())
	return d, base, d != nil
}

// walkWrite is walkOpen for a writer's first walk, under the writers'
// lock, through the directory cache where it can: no writer has changed
// a directory's layers since the generation the cached node was resolved
// in, since this one holds the lock and has changed nothing yet. Later
// walks of the same write must not use it, nor may the write change the
// nodes it returns, which readers share.
//
// When dir came from the cache and the upper layer holds it, adding or
// removing a non-directory n there changes no directory's layers, and
// keepDirs says so for the writer's Unlock. So does removing an empty
// directory n that the upper layer alone holds, where the layer tells a
// removed directory's handle (rmdirKeeps); a caller that removes any
// other directory n must clear it.
func (u *FS) walkWrite(name string, follow, create bool) (dir, n *node, err error) {
	if len(name) < pathwalk.MaxPath && pathwalk.ValidPath(name) && name != "." {
		d, base := ".", name
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			d, base = name[:i], name[i+1:]
		}
		if pathwalk.CheckElem(base) == nil && base != layer.OpaqueName {
			if dn := u.cachedDirNode(d, u.mu.dirGen.Load()); dn != nil {
				child, err := u.lookupNode(dn, base)
				if err == nil && !(follow && child.isSymlink()) {
					u.mu.keepDirs = u.upper != nil && len(dn.dirs) > 0 && dn.dirs[0] == 0 &&
						(!child.isDir() || u.rmdirKeeps(child))
					child.path = name // d/base: no need to build it again
					return dn, child, nil
				}
			}
		}
	}
	return u.walkOpen(name, follow, create)
}
