package packfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/packreader"
)

// Open opens name for reading, following symlinks. A directory lists the
// merged entries of every layer.
func (u *FS) Open(name string) (fs.File, error) {
	return u.OpenFile(name, os.O_RDONLY, 0)
}

// Stat returns a description of name, following symlinks.
func (u *FS) Stat(name string) (fs.FileInfo, error) {
	if m, rest, ok := u.mounted(name); ok {
		return mountStat(m, "stat", name, rest, true)
	}
	if fi, ok := u.statFast(name, true); ok {
		return fi, nil
	}
	n, err := u.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	return n.stat(name), nil
}

// Lstat returns a description of name without following a final symlink.
func (u *FS) Lstat(name string) (fs.FileInfo, error) {
	if m, rest, ok := u.mounted(name); ok {
		return mountStat(m, "lstat", name, rest, false)
	}
	if fi, ok := u.statFast(name, false); ok {
		return fi, nil
	}
	n, err := u.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return n.stat(name), nil
}

// stat is the node's info under the name the caller used, as os reports.
func (n *node) stat(name string) fs.FileInfo { return named(n.info, name) }

// named returns fi under the last element of name.
func named(fi fs.FileInfo, name string) fs.FileInfo {
	base := name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		base = name[i+1:]
	}
	return asBase(fi, base)
}

// asBase returns fi under the name base, one element.
func asBase(fi fs.FileInfo, base string) fs.FileInfo {
	if base == fi.Name() {
		return fi
	}
	return renamed{fi, base}
}

// renamed reports a FileInfo under another name.
type renamed struct {
	fs.FileInfo
	name string
}

func (r renamed) Name() string { return r.name }

// The fast paths of reads. A name takes one of two when it can, and the
// slow path (resolve) when they decline or fail, so that errors are always
// the slow path's:
//
//   - a name whose directory one lower layer alone holds, with nothing of
//     the upper layer on its path, is that layer's (see fastLower);
//   - a name the top layer resolves, by its own walk, to a regular file is
//     that file in the union too. Every entry the walk passes through is
//     the top layer's own, which nothing below can shadow, and a symlink
//     it follows resolves in the union to the same entries, since the top
//     layer's come first. A whiteout or a missing entry on the way stops
//     the walk.

// statFast is Stat (follow) or Lstat on the fast paths.
func (u *FS) statFast(name string, follow bool) (fs.FileInfo, bool) {
	if _, fi, base, ok := u.fastLower(name); ok {
		return asBase(fi, base), true // a regular file: follow or not
	}
	if _, fi, base, ok := u.peek(name); ok {
		return asBase(fi, base), true
	}
	stat := fs.Lstat
	if follow {
		stat = fs.Stat
	}
	fi, err := stat(u.layers[0], name)
	return fi, err == nil && fi.Mode().IsRegular()
}

// readFast is ReadFile on the fast paths.
func (u *FS) readFast(name string) ([]byte, bool) {
	if d, base, ok := u.fastDir(name); ok {
		if ra, ok := d.la.(pathwalk.ReadFileAtFS); ok {
			// One lookup finds and reads the file. Anything but a
			// regular file there fails, and is the other paths' to
			// answer.
			if b, err := ra.ReadFileAt(d.at, base, name); err == nil {
				return b, true
			}
		} else if _, ok := u.fileIn(d, name, base); ok {
			b, err := fs.ReadFile(u.layers[d.layer], name)
			return b, err == nil
		}
	}
	if i, _, _, ok := u.peek(name); ok {
		b, err := fs.ReadFile(u.layers[i], name)
		return b, err == nil
	}
	top := u.layers[0]
	if fi, err := fs.Stat(top, name); err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	// A writer may have replaced the file since: reading a directory or
	// a whiteout (a device) fails, and a symlink resolves as in the union.
	b, err := fs.ReadFile(top, name)
	return b, err == nil
}

// openFast opens name for reading (flag has no write flags) on the fast
// paths.
func (u *FS) openFast(name string, flag int) (layer.File, bool) {
	seen := u.copyUps.Load()
	i, lf, up, ok := u.openFastLower(name, flag)
	if up != nil {
		return up, true
	}
	if ok {
		if lf == nil {
			var err error
			if lf, err = u.openLower(i, name, name, flag); err != nil {
				return nil, false
			}
		}
		if u.upper != nil && !lf.watch(u, i, seen) {
			lf.f.Close()
			return nil, false // copied up meanwhile: the slow path opens the copy
		}
		return lf, true
	}
	var f layer.File
	var err error
	switch {
	case u.upper != nil:
		f, err = u.upper.OpenFile(name, flag, 0)
	case flag&syscall.O_NOFOLLOW != 0:
		return nil, false // a read-only layer may not know the flag
	default:
		f, err = layer.OpenFile(u.layers[0], name, os.O_RDONLY, 0)
	}
	if err != nil {
		return nil, false
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, false
	}
	if u.upper != nil {
		return f, true
	}
	return &file{f: f, name: name, path: name, appending: flag&os.O_APPEND != 0}, true
}

// openFastLower finds a regular file of a lower layer (or a snapshot's
// top) that answers for name on the fast paths: its layer, and the file
// already open when the layer opens in the lookup that finds it
// (pathwalk.OpenAtFS), so that the read costs one lookup; nil tells the
// caller to open it by name. When the upper layer holds the file and
// opens in its lookups too, up is the file opened there.
func (u *FS) openFastLower(name string, flag int) (i int, lf *file, up layer.File, ok bool) {
	var room *packFile // reused by the layers that miss
	if d, base, ok := u.fastDir(name); ok {
		if lf, opened, err := u.openAt(d.la, d.at, base, name, flag, &room); opened {
			if err == nil {
				return d.layer, lf, nil, true
			}
		} else if _, ok := u.fileIn(d, name, base); ok {
			return d.layer, nil, nil, true
		}
	}
	d, base, ok := u.peekDir(name)
	if !ok {
		return 0, nil, nil, false
	}
	// The first layer that holds base answers, as in peek; a lower that
	// opens in its lookup is asked to open it at once, and so is the upper
	// (a plain read-only open: the handle keeps no flags).
	for k, i := range d.dirs {
		if i == 0 && u.upper != nil && flag&^syscall.O_NOFOLLOW == 0 {
			if oa, ok := u.upper.(pathwalk.OpenAtFS); ok {
				f, err := oa.OpenAt(d.at[k], base, name)
				switch {
				case err == nil:
					if lf, ok := f.(layer.File); ok {
						return 0, nil, lf, false
					}
					f.Close()
					return 0, nil, nil, false
				case !isNotExist(err):
					return 0, nil, nil, false
				}
				continue
			}
		}
		if i > 0 || u.upper == nil {
			if la, ok := lookupFS(u.layers[i]); ok {
				if lf, opened, err := u.openAt(la, d.at[k], base, name, flag, &room); opened {
					switch {
					case err == nil:
						return i, lf, nil, true
					case !isNotExist(err):
						return 0, nil, nil, false
					}
					continue
				}
			}
		}
		e, err := u.lookupIn(d, k, base)
		switch {
		case err == nil:
			// The upper's own file opens through the upper (see openFast).
			if !e.Info.Mode().IsRegular() || (i == 0 && u.upper != nil) {
				return 0, nil, nil, false
			}
			return i, nil, nil, true
		case !isNotExist(err):
			return 0, nil, nil, false
		}
	}
	return 0, nil, nil, false
}

// packFile is a handle of a file of a pack, opened with the pack's file
// in one allocation.
type packFile struct {
	file
	pack packreader.FileRoom
}

// openAt opens the regular file base of the directory dir of la (nil:
// none), which the union knows as name, when la opens in its lookup
// (opened); a pack opens
// it in *room, made at the first call and kept for the next while its
// opens miss.
func (u *FS) openAt(la pathwalk.LookupFS, dir pathwalk.Dir, base, name string, flag int, room **packFile) (lf *file, opened bool, err error) {
	if r, isPack := la.(*packreader.Reader); isPack {
		if *room == nil {
			*room = new(packFile)
		}
		f, err := r.OpenAtIn(&(*room).pack, dir, base, name)
		if err != nil {
			return nil, true, err
		}
		lf = &(*room).file
		lf.init(f, name, name, flag)
		return lf, true, nil
	}
	oa, ok := la.(pathwalk.OpenAtFS)
	if !ok {
		return nil, false, nil
	}
	f, err := oa.OpenAt(dir, base, name)
	if err != nil {
		return nil, true, err
	}
	return u.lowerFile(f, name, name, flag), true, nil
}

// ReadLink returns the target of the symbolic link name.
func (u *FS) ReadLink(name string) (string, error) {
	if m, rest, ok := u.mounted(name); ok {
		target, err := fs.ReadLink(m, rest)
		return target, inMount("readlink", name, err)
	}
	n, err := u.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	if !n.isSymlink() {
		return "", layer.PathError("readlink", name, syscall.EINVAL)
	}
	target, err := fs.ReadLink(u.layers[n.layer], n.path)
	if err != nil {
		return "", layer.PathError("readlink", name, bare(err))
	}
	return target, nil
}

// Readlink is ReadLink with [os.Root]'s spelling.
func (u *FS) Readlink(name string) (string, error) { return u.ReadLink(name) }

// ReadFile returns the contents of name.
func (u *FS) ReadFile(name string) ([]byte, error) {
	if m, rest, ok := u.mounted(name); ok {
		b, err := fs.ReadFile(m, rest)
		return b, inMount("open", name, err)
	}
	if b, ok := u.readFast(name); ok {
		return b, nil
	}
	tries := racedReads{l: &u.mu}
	for {
		tries.start()
		n, err := u.resolve("open", name, true)
		if err == nil && n.isDir() {
			err = layer.PathError("read", name, syscall.EISDIR)
		}
		if err != nil || n.layer != 0 {
			tries.release() // no writer changes a lower layer
		}
		if err != nil {
			return nil, err
		}
		b, err := fs.ReadFile(u.layers[n.layer], n.path)
		tries.release()
		// A writer that raced the try may have changed the upper layer
		// between the resolution and the read (a failure), or in the
		// middle of the resolution, whose steps then joined states of
		// different moments: a symlink of a directory seen merged before
		// a writer made it opaque, followed to a file made after. Either
		// is made again once the writer is done. A lower layer's own
		// failure is its own.
		if (err == nil || n.layer == 0) && tries.again() {
			continue
		}
		if err != nil {
			return nil, layer.PathError("read", name, bare(err))
		}
		return b, nil
	}
}

// ReadDir returns the merged entries of the directory name, sorted by
// name: each name once, from the topmost layer that has it, whiteouts
// applied and opaque directories respected.
func (u *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if m, rest, ok := u.mounted(name); ok {
		list, err := fs.ReadDir(m, rest)
		return list, inMount("open", name, err)
	}
	n, err := u.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, layer.PathError("open", name, syscall.ENOTDIR)
	}
	list, err := u.merge(n)
	if err != nil {
		return nil, err
	}
	return u.withMounts(n.path, list), nil
}

// merge lists a directory node: a k-way merge of the sorted listings of
// its layers, O(k log layers) for k entries.
func (u *FS) merge(n *node) ([]fs.DirEntry, error) {
	lists := make([][]fs.DirEntry, 0, len(n.dirs))
	for _, i := range n.dirs {
		list, err := fs.ReadDir(u.layers[i], n.path)
		if err != nil {
			return nil, layer.PathError("readdirent", n.path, bare(err))
		}
		lists = append(lists, list)
	}
	if len(lists) == 1 {
		return visible(lists[0]), nil
	}
	total := 0
	for _, list := range lists {
		total += len(list)
	}
	out := make([]fs.DirEntry, 0, total)
	pos := make([]int, len(lists))
	heads := make([]string, len(lists)) // the next name of each list
	next := func(j int) {
		if pos[j] < len(lists[j]) {
			heads[j] = lists[j][pos[j]].Name()
		}
	}
	for j := range lists {
		next(j)
	}
	for {
		// The smallest next name; the topmost list holding it wins.
		best := -1
		for j := range lists {
			if pos[j] < len(lists[j]) && (best < 0 || heads[j] < heads[best]) {
				best = j
			}
		}
		if best < 0 {
			return out, nil
		}
		e, name := lists[best][pos[best]], heads[best]
		for j := range lists {
			if pos[j] < len(lists[j]) && heads[j] == name {
				pos[j]++
				next(j)
			}
		}
		if !layer.IsWhiteout(e.Type()) {
			out = append(out, e)
		}
	}
}

// visible drops whiteouts from one layer's listing.
func visible(list []fs.DirEntry) []fs.DirEntry {
	if !slices.ContainsFunc(list, func(e fs.DirEntry) bool { return layer.IsWhiteout(e.Type()) }) {
		return list
	}
	return slices.DeleteFunc(slices.Clone(list), func(e fs.DirEntry) bool { return layer.IsWhiteout(e.Type()) })
}

// dir is an open directory of the union: it lists the merged entries as
// they were at its first ReadDir, in pages.
type dir struct {
	u         *FS
	n         *node
	name      string
	appending bool // opened with O_APPEND, which refuses WriteAt

	mu     sync.Mutex
	path   string // where the directory is now (see FS.movedDirs)
	gone   bool   // removed before its first ReadDir
	closed bool
	list   []fs.DirEntry
	listed bool
	pos    int
}

var _ layer.File = (*dir)(nil)

func (d *dir) check(op string) error {
	if d.closed {
		return layer.PathError(op, d.name, fs.ErrClosed)
	}
	return nil
}

func (d *dir) Name() string { return d.name }

func (d *dir) Stat() (fs.FileInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("stat"); err != nil {
		return nil, err
	}
	// The directory's attributes as they are now (a Chmod may have copied
	// it up since it was opened), while it still stands at its path.
	if fi, err := d.u.Lstat(d.n.path); err == nil && fi.IsDir() {
		return named(fi, d.name), nil
	}
	return d.n.stat(d.name), nil
}

func (d *dir) ReadDir(count int) ([]fs.DirEntry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("readdirent"); err != nil {
		return nil, err
	}
	if !d.listed {
		if err := d.listFirst(); err != nil {
			return nil, err
		}
	}
	rest := d.list[d.pos:]
	if count > 0 {
		if len(rest) == 0 {
			return nil, io.EOF
		}
		rest = rest[:min(count, len(rest))]
	}
	d.pos += len(rest)
	return slices.Clone(rest), nil
}

// listFirst lists the directory as it is now at its path, for its first
// ReadDir: a copy-up since Open may have added a layer to it, and a
// removed directory lists nothing (ENOENT), as getdents gives. A writer
// that renames or copies up a directory of lower layers makes it in
// steps (a copy, whiteouts, the directory's new path), which a walk
// beside it may meet half made: a listing that fails while a writer
// raced it is made again once the writer is done, as racedReads
// schedules slow-path reads, its last try under the writers' lock. d.mu
// is held, and let go of while the listing waits: a writer takes it to
// move the directory's path.
func (d *dir) listFirst() error {
	tries := racedReads{l: &d.u.mu}
	for {
		if tries.waited == rereads-1 {
			d.mu.Unlock() // the writers' lock comes first
			tries.start()
			d.mu.Lock()
		} else {
			tries.start()
		}
		err := d.check("readdirent")
		if err == nil && d.gone {
			err = layer.PathError("readdirent", d.name, syscall.ENOENT)
		}
		if err != nil || d.listed { // closed, removed or listed meanwhile
			tries.release()
			return err
		}
		_, n, err := d.u.walk(d.path, false)
		if err == nil && (!n.exists() || !n.isDir()) {
			err = syscall.ENOENT
		}
		var list []fs.DirEntry
		if err == nil {
			list, err = d.u.merge(n)
		} else {
			err = layer.PathError("readdirent", d.name, bare(err))
		}
		tries.release()
		if err == nil {
			d.n = n
			d.list, d.listed = d.u.withMounts(n.path, list), true
			return nil
		}
		d.mu.Unlock()
		again := tries.again()
		d.mu.Lock()
		if !again {
			return err
		}
	}
}

func (d *dir) Read(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("read"); err != nil || len(p) == 0 {
		return 0, err
	}
	return 0, layer.PathError("read", d.name, syscall.EISDIR)
}

func (d *dir) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case off < 0:
		return 0, layer.PathError("readat", d.name, errors.New("negative offset"))
	case len(p) == 0:
		return 0, nil // as os, even when closed
	}
	if err := d.check("read"); err != nil {
		return 0, err
	}
	return 0, layer.PathError("read", d.name, syscall.EISDIR)
}

func (d *dir) Seek(offset int64, whence int) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("seek"); err != nil {
		return 0, err
	}
	if offset == 0 && whence == io.SeekStart {
		d.listed, d.pos, d.list = false, 0, nil
	}
	return 0, nil
}

func (d *dir) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("write"); err != nil {
		return 0, err
	}
	return 0, layer.PathError("write", d.name, syscall.EBADF)
}

func (d *dir) WriteAt(p []byte, off int64) (int, error) {
	switch {
	case d.appending:
		return 0, errWriteAtInAppendMode
	case off < 0:
		return 0, layer.PathError("writeat", d.name, errors.New("negative offset"))
	case len(p) == 0:
		return 0, nil
	}
	return d.Write(p)
}

func (d *dir) WriteString(s string) (int, error) { return d.Write([]byte(s)) }

func (d *dir) Truncate(int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check("truncate"); err != nil {
		return err
	}
	return layer.PathError("truncate", d.name, syscall.EINVAL)
}
func (d *dir) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.check("sync")
}

func (d *dir) Close() error {
	d.mu.Lock()
	if err := d.check("close"); err != nil {
		d.mu.Unlock()
		return err
	}
	d.closed = true
	// movedDirs takes dirsMu before a handle's mu: unlock first.
	d.mu.Unlock()
	d.u.dirsMu.Lock()
	delete(d.u.dirs, d)
	d.u.dirsMu.Unlock()
	return nil
}

// openDir registers d, a new handle of a merged directory.
func (u *FS) openDir(d *dir) *dir {
	u.dirsMu.Lock()
	if u.dirs == nil {
		u.dirs = map[*dir]struct{}{}
	}
	u.dirs[d] = struct{}{}
	u.dirsMu.Unlock()
	return d
}

// movedDirs tells the open handles of merged directories at or below
// from, not listed yet, that their directory is now at to, or removed
// when to is "". The caller holds the writers' lock.
func (u *FS) movedDirs(from, to string) {
	u.dirsMu.Lock()
	defer u.dirsMu.Unlock()
	for d := range u.dirs {
		d.mu.Lock()
		if !d.listed && !d.gone && within(d.path, from) {
			if to == "" {
				d.gone = true
			} else {
				d.path = path.Join(to, strings.TrimPrefix(d.path[len(from):], "/"))
			}
		}
		d.mu.Unlock()
	}
}
