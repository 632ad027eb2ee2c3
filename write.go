package packfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
)

// The flags that make an open a write: they need the upper layer.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_CREATE | os.O_TRUNC

// OpenFile opens name with the flags of [os.OpenFile]. Opening a lower
// file for writing copies it up first (without its contents when
// os.O_TRUNC is set).
func (u *FS) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	if err := layer.CheckOpenFlag(flag); err != nil {
		return nil, layer.PathError("open", name, err)
	}
	if m, rest, ok := u.mounted(name); ok {
		return u.mountOpenFile(m, name, rest, flag, perm)
	}
	if flag&writeFlags == 0 {
		if flag&syscall.O_DIRECTORY == 0 { // the fast paths open files only
			if f, ok := u.openFast(name, flag); ok {
				return f, nil
			}
		}
		return u.openRead(name, flag)
	}
	return u.openWrite(name, flag, perm)
}

// openRead is OpenFile for reading, on the slow path.
func (u *FS) openRead(name string, flag int) (layer.File, error) {
	// A try that a writer raced between the walk and the upper layer's
	// open is made again (see racedReads); a lower layer's open, which
	// no writer disturbs, is made without the lock.
	tries := racedReads{l: &u.mu}
	for {
		tries.start()
		seen := u.copyUps.Load()
		_, n, err := u.walk(name, flag&syscall.O_NOFOLLOW == 0)
		switch {
		case err != nil:
		case !n.exists():
			err = syscall.ENOENT
		case flag&syscall.O_DIRECTORY != 0 && !n.isDir():
			err = syscall.ENOTDIR // checked before the type, as open(2) does
		case n.isSymlink():
			err = syscall.ELOOP // O_NOFOLLOW, as open(2) gives
		}
		if err != nil {
			tries.release()
			return nil, layer.PathError("open", name, bare(err))
		}
		if n.isDir() && (n.layer != 0 || len(n.dirs) > 1 || u.upper == nil || u.mounts.Load() != nil) {
			tries.release()
			return u.openDir(&dir{u: u, n: n, path: n.path, name: name, appending: flag&os.O_APPEND != 0}), nil
		}
		if n.layer == 0 && u.upper != nil {
			f, err := u.upper.OpenFile(n.path, flag, 0)
			tries.release()
			// A writer that raced the try may have made the open fail,
			// or the resolution join states of different moments (see
			// ReadFile): either is made again once the writer is done.
			if tries.again() {
				if err == nil {
					f.Close()
				}
				continue
			}
			if err != nil {
				return nil, layer.PathError("open", name, bare(err))
			}
			if n.isDir() {
				// The upper's own listing holds whiteouts and opaque
				// markers: the union's does not.
				return &file{f: f, name: name, path: n.path, hideWhiteouts: true}, nil
			}
			return wrap(f, name, n.path), nil
		}
		tries.release()
		// A lower (or a snapshot's top) is read-only: open it so, and keep
		// what O_APPEND says about WriteAt. No writer changes it, so its
		// failure is its own.
		lf, err := u.openLower(n.layer, n.path, name, flag)
		if err != nil {
			return nil, layer.PathError("open", name, bare(err))
		}
		if tries.again() {
			lf.f.Close() // a resolution a writer raced: see ReadFile
			continue
		}
		if u.upper == nil || lf.watch(u, n.layer, seen) {
			return lf, nil
		}
		lf.f.Close() // copied up meanwhile: open the copy
	}
}

// openWrite is OpenFile for writing.
func (u *FS) openWrite(name string, flag int, perm fs.FileMode) (layer.File, error) {
	if err := layer.CheckPath(name); err != nil {
		return nil, layer.PathError("open", name, err)
	}
	upper, err := u.writable("open", name)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	excl := flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0
	dir, n, err := u.walkWrite(name, !excl && flag&syscall.O_NOFOLLOW == 0, flag&os.O_CREATE != 0)
	if err == nil && n.slash && flag&os.O_CREATE != 0 {
		err = syscall.EISDIR // Linux's rule for O_CREAT and a trailing slash
	}
	if err == nil && flag&syscall.O_DIRECTORY != 0 && n.exists() && !n.isDir() {
		err = syscall.ENOTDIR // before a copy-up: the open changes nothing
	}
	if err == nil {
		flag, err = u.prepareOpen(dir, n, flag, perm)
	}
	if err != nil {
		return nil, layer.PathError("open", name, bare(err))
	}
	var f layer.File
	if in, d, ok := u.upperIn(dir, n); ok {
		f, err = in.OpenFileIn(d, n.name, n.path, flag, perm)
	} else {
		f, err = upper.OpenFile(n.path, flag, perm)
	}
	if err != nil {
		return nil, layer.PathError("open", name, bare(err))
	}
	return wrap(f, name, n.path), nil
}

// inFS is an upper layer that changes an entry of a directory handle its
// LookupAt gave (package mem), so that a write the walk found the
// directory for needs no second walk of the path in the upper layer.
type inFS interface {
	OpenFileIn(dir pathwalk.Dir, name, path string, flag int, perm fs.FileMode) (layer.File, error)
	RemoveIn(dir pathwalk.Dir, name, path string) error
}

// upperIn returns the upper layer as an inFS and its handle on dir, the
// directory of n, when it has both: dir's node holds the upper layer's
// directory, which the writers' lock keeps where the walk found it.
func (u *FS) upperIn(dir, n *node) (inFS, pathwalk.Dir, bool) {
	if dir == nil || n.parent != dir || len(dir.dirs) == 0 || dir.dirs[0] != 0 || u.upper == nil {
		return nil, nil, false
	}
	in, ok := u.upper.(inFS)
	return in, dir.at[0], ok
}

// prepareOpen makes the upper layer ready for opening n for writing: it
// copies up the parent and, for an existing lower file, the file.
//
// It returns the flags to open the upper's file with: a file it has
// created already is opened without O_EXCL.
func (u *FS) prepareOpen(dir, n *node, flag int, perm fs.FileMode) (int, error) {
	if !n.exists() {
		if flag&os.O_CREATE == 0 {
			return flag, syscall.ENOENT
		}
		if err := layer.CheckElem(path.Base(n.path)); err != nil {
			return flag, err
		}
		if n.upperWhiteout { // else createOver does nothing: spare its chain
			done, err := u.createOver(dir, n, []mem.Copy{{Name: path.Base(n.path), Mode: perm & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}})
			if done {
				return flag &^ os.O_EXCL, err
			}
		}
		return flag, u.makeRoom(dir, n)
	}
	if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
		return flag, syscall.EEXIST
	}
	if n.isDir() {
		return flag, syscall.EISDIR // every open that gets here asks to write
	}
	if n.layer == 0 {
		return flag, nil // the upper layer's own checks apply
	}
	return flag, u.copyUp(n, flag&os.O_TRUNC == 0)
}

// makeRoom prepares the upper layer for creating the missing name n in
// dir: the directory exists there and no whiteout is in the way.
func (u *FS) makeRoom(dir, n *node) error {
	if dir == nil {
		return syscall.EEXIST
	}
	if err := u.upperDir(dir); err != nil {
		return err
	}
	if n.upperWhiteout {
		return u.upper.Remove(n.path)
	}
	return nil
}

// createOverFS is an upper layer that creates a name over its whiteout in
// one step, as layer/mem does (mem.FS.CreateOver).
type createOverFS interface {
	CreateOver(dir string, chain []mem.Copy) error
}

// createOver makes chain at n, a name the upper layer holds a whiteout
// at, in one step of an upper layer that can, so that no reader sees what
// the whiteout hid in between; a directory made there inherits setgid
// from its parent as Mkdir's would. It reports false, having done
// nothing, when n holds no whiteout or the upper layer cannot: makeRoom
// and the step-by-step create serve those.
func (u *FS) createOver(dir, n *node, chain []mem.Copy) (bool, error) {
	co, ok := u.upper.(createOverFS)
	if !ok || !n.upperWhiteout || dir == nil {
		return false, nil
	}
	if err := u.upperDir(dir); err != nil {
		return true, err
	}
	parent := path.Dir(n.path)
	if chain[0].Mode.IsDir() {
		if fi, err := fs.Stat(u.upper, parent); err == nil {
			chain[0].Mode |= fi.Mode() & fs.ModeSetgid
		}
	}
	return true, co.CreateOver(parent, chain)
}

// mkdirAt makes the directory n, missing, in dir: opaque where a lower
// layer holds the name, and in one step over a whiteout where the upper
// layer can (createOver), else step by step.
func (u *FS) mkdirAt(dir, n *node, perm fs.FileMode) error {
	chain := []mem.Copy{{Name: path.Base(n.path), Mode: fs.ModeDir | perm&(fs.ModePerm|fs.ModeSticky)}}
	if n.below {
		chain = append(chain, mem.Copy{Name: layer.OpaqueName, Mode: layer.ModeWhiteout})
	}
	if done, err := u.createOver(dir, n, chain); done {
		return err
	}
	if err := u.makeRoom(dir, n); err != nil {
		return err
	}
	// The upper layer's Mkdir makes the new directory setgid when its
	// parent is: makeRoom has copied the parent up with its mode.
	if err := u.upper.Mkdir(n.path, perm); err != nil {
		return err
	}
	if n.below {
		return u.markOpaque(n.path)
	}
	return nil
}

// copyInFS is an upper layer that adds a chain of copied entries in one
// step and looks names up at directory handles, as layer/mem does.
type copyInFS interface {
	pathwalk.LookupFS
	CopyIn(dir string, chain []mem.Copy) error
}

// upperDir makes sure the directory d of the union exists in the upper
// layer, copying up each missing element with its mode and mtime. An
// upper layer with CopyIn gets the missing chain in one step, so readers
// never see it half made.
func (u *FS) upperDir(d *node) error {
	if len(d.dirs) > 0 && d.dirs[0] == 0 && u.upper != nil {
		return nil // the walk found it there, and the writers' lock is held
	}
	if ci, ok := u.upper.(copyInFS); ok && d.parent != nil {
		at, chain, err := u.upperChain(ci, d)
		if err != nil || len(chain) == 0 {
			return err
		}
		copies := make([]mem.Copy, len(chain))
		for i, c := range chain {
			copies[i] = mem.Copy{Name: c.name, Mode: c.info.Mode(), ModTime: c.info.ModTime(), Owner: ownerOf(c.info)}
		}
		return ci.CopyIn(at, copies)
	}
	return u.upperDirPath(d.path)
}

// upperChain returns the path of the deepest directory on n's path that
// the upper layer holds, and the nodes below it down to n, which it
// lacks: one lookup per element in the upper layer as it is now, whatever
// the nodes recorded when they were found.
func (u *FS) upperChain(ci copyInFS, n *node) (string, []*node, error) {
	var line []*node // n's ancestors and n, root excluded, deepest first
	for m := n; m.parent != nil; m = m.parent {
		line = append(line, m)
	}
	slices.Reverse(line)
	var at pathwalk.Dir
	k := 0
	for ; k < len(line); k++ {
		e, err := ci.LookupAt(at, line[k].name)
		if isNotExist(err) {
			break
		}
		if err != nil {
			return "", nil, err
		}
		if !e.Info.IsDir() {
			if k == len(line)-1 {
				return "", nil, nil // n itself; the caller's own step decides
			}
			return "", nil, syscall.ENOTDIR
		}
		at = e.Dir
	}
	if k == 0 {
		return ".", line, nil
	}
	return line[k-1].pathOf(), line[k:], nil
}

// upperDirPath is upperDir for an upper layer without CopyIn, by paths.
func (u *FS) upperDirPath(p string) error {
	if p == "." {
		return nil
	}
	if fi, err := u.upper.Lstat(p); err == nil && fi.IsDir() {
		return nil
	}
	if err := u.upperDirPath(path.Dir(p)); err != nil {
		return err
	}
	n, err := u.resolve("mkdir", p, false)
	if err != nil {
		return err
	}
	err = u.quietly(path.Dir(p), func() error { return u.upper.Mkdir(p, n.info.Mode().Perm()) })
	if err != nil {
		return err
	}
	return u.keepAttrs(p, n.info)
}

// quietly runs fn, which adds a copied-up entry to the upper directory
// dir, and then puts back dir's mtime: a copy-up changes nothing a user
// can see.
func (u *FS) quietly(dir string, fn func() error) error {
	fi, err := u.upper.Lstat(dir)
	if err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	return u.upper.Chtimes(dir, time.Time{}, fi.ModTime())
}

// markOpaque marks the upper directory p opaque, keeping its mtime.
func (u *FS) markOpaque(p string) error {
	return u.quietly(p, func() error { return layer.MarkOpaque(u.upper, p) })
}

// ownerOf returns the owner info records, for a copy to keep; nil when
// it records none.
func ownerOf(info fs.FileInfo) *layer.Sys {
	uid, gid, ok := layer.OwnerOf(info)
	if !ok {
		return nil
	}
	return &layer.Sys{Uid: uid, Gid: gid}
}

// keepAttrs gives the upper copy at p the owner, mode and mtime of info.
// The owner goes first, since a chown drops setuid and setgid bits. An
// upper layer that may not give it (a host directory, not as root) keeps
// its own: the copy-up still succeeds, as it would without owners.
func (u *FS) keepAttrs(p string, info fs.FileInfo) error {
	if o := ownerOf(info); o != nil {
		err := u.upper.Lchown(p, ownerArg(o.Uid), ownerArg(o.Gid))
		if err != nil && !errors.Is(err, fs.ErrPermission) && !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		// A symlink's mode is fixed, and Chtimes would reach its target.
		if _, ok := u.upper.(layer.LchtimesFS); ok {
			return layer.Lchtimes(u.upper, p, time.Time{}, info.ModTime())
		}
		return nil
	}
	if err := u.upper.Chmod(p, info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	return u.upper.Chtimes(p, time.Time{}, info.ModTime())
}

// copyUp copies the lower entry n into the upper layer, with its mode,
// mtime and, when data is set, its contents, streamed. An upper layer
// with CopyIn builds the copy, and any missing parents, aside and
// publishes it whole in one step: a lock-free reader sees the lower entry
// or the whole copy, never a short file or the mtime of the moment.
func (u *FS) copyUp(n *node, data bool) error {
	var err error
	if ci, ok := u.upper.(copyInFS); ok && n.parent != nil {
		err = u.copyIn(ci, n, data, nil)
	} else {
		if err = u.upperDirPath(path.Dir(n.path)); err != nil {
			return err
		}
		err = u.quietly(path.Dir(n.path), func() error { return u.copyUpEntry(n, data) })
	}
	if err == nil {
		u.moveHandles(n)
	}
	return err
}

// copyIn is copyUp through CopyIn. A non-nil content is n's new content,
// written now, in place of the lower file's (data is then unused).
func (u *FS) copyIn(ci copyInFS, n *node, data bool, content io.Reader) error {
	at, chain, err := u.upperChain(ci, n)
	if err != nil {
		return err
	}
	if len(chain) == 0 || chain[len(chain)-1] != n {
		return syscall.EEXIST // the upper layer holds n already
	}
	copies := make([]mem.Copy, len(chain))
	for i, c := range chain {
		copies[i] = mem.Copy{Name: c.name, Mode: c.info.Mode(), ModTime: c.info.ModTime(), Owner: ownerOf(c.info)}
	}
	last := &copies[len(copies)-1]
	switch mode := n.info.Mode(); {
	case content != nil:
		last.Data, last.ModTime = content, time.Time{} // written now
	case mode&fs.ModeSymlink != 0:
		target, err := u.readLink(n)
		if err != nil {
			return err
		}
		last.Data = strings.NewReader(target)
	case mode.IsRegular() && data:
		if c := u.sharedContent(n); c != nil {
			last.Share = c
			break
		}
		r, err := u.layers[n.layer].Open(n.path)
		if err != nil {
			return err
		}
		defer r.Close()
		last.Data = r
	}
	return ci.CopyIn(at, copies)
}

// sharedContent returns the bytes that the copy-up of n, a regular file,
// may share rather than read: while a checkpoint builds the store's new
// union, shareFrom is the snapshot of the old upper layer that the new
// top pack, layers[1], was written from, so that a file the pack holds
// and the snapshot's upper layer held has the same bytes in memory
// (often the log's mapped pages). A file open for writing then costs its
// new upper layer nothing.
func (u *FS) sharedContent(n *node) *mem.Content {
	if u.shareFrom == nil || n.layer != 1 {
		return nil
	}
	c, ok := u.shareFrom.Content(n.path)
	if !ok || c.Size() != n.info.Size() {
		return nil
	}
	return c
}

func (u *FS) copyUpEntry(n *node, data bool) error {
	src := u.layers[n.layer]
	switch mode := n.info.Mode(); {
	case mode.IsDir():
		if err := u.upper.Mkdir(n.path, mode.Perm()); err != nil {
			return err
		}
	case mode&fs.ModeSymlink != 0:
		target, err := fs.ReadLink(src, n.path)
		if err != nil {
			return err
		}
		if err := u.upper.Symlink(target, n.path); err != nil {
			return err
		}
	default:
		w, err := u.upper.OpenFile(n.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
		if err != nil {
			return err
		}
		if data {
			r, err := src.Open(n.path)
			if err != nil {
				w.Close()
				u.upper.Remove(n.path)
				return err
			}
			_, err = io.Copy(w, r)
			r.Close()
			if err != nil {
				w.Close()
				u.upper.Remove(n.path)
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return u.keepAttrs(n.path, n.info)
}

// copyUpTree copies the directory n and everything below it into the
// upper layer, so that it no longer depends on the lowers.
func (u *FS) copyUpTree(n *node) error {
	if n.layer != 0 {
		if err := u.copyUp(n, true); err != nil {
			return err
		}
	}
	entries, err := u.merge(n)
	if err != nil {
		return err
	}
	for _, e := range entries {
		c, err := u.lookup(n, e.Name())
		if err != nil {
			return err
		}
		switch {
		case c.isDir():
			err = u.copyUpTree(c)
		case c.layer != 0:
			err = u.copyUp(c, true)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Create creates or truncates name with mode 0666, as [os.Create] does.
func (u *FS) Create(name string) (layer.File, error) {
	return u.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// WriteFile writes data to name, creating it with perm or truncating it.
// Where the upper layer can (package mem), the file is created or
// truncated and written in one step of it, with no handle between.
func (u *FS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if _, _, ok := u.mounted(name); !ok && u.upper != nil {
		_, in := u.upper.(writeFileInFS)
		if _, ok := u.upper.(layer.WriteFileFS); ok && in {
			return u.writeFile(name, data, perm)
		}
	}
	return layer.WriteFileByOpenFile(u, name, data, perm)
}

// writeFileInFS is an upper layer that writes a whole file, an entry of
// a directory handle its LookupAt gave, in one step (package mem).
type writeFileInFS interface {
	WriteFileIn(dir pathwalk.Dir, name, path string, data []byte, perm fs.FileMode) error
}

// writeFile is WriteFile through an upper layer that is a writeFileInFS
// and a layer.WriteFileFS: openWrite's walk and preparation, then one
// step of the upper layer.
func (u *FS) writeFile(name string, data []byte, perm fs.FileMode) error {
	const flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if err := layer.CheckPath(name); err != nil {
		return layer.PathError("open", name, err)
	}
	upper, err := u.writable("open", name)
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	dir, n, err := u.walkWrite(name, true, true)
	if err == nil && n.slash {
		err = syscall.EISDIR // Linux's rule for O_CREAT and a trailing slash
	}
	if err == nil {
		var done bool
		if done, err = u.writeOver(dir, n, data, perm); done {
			if err != nil {
				return layer.PathError("open", name, bare(err))
			}
			return nil
		}
		_, err = u.prepareOpen(dir, n, flag, perm)
	}
	if err != nil {
		return layer.PathError("open", name, bare(err))
	}
	if _, d, ok := u.upperIn(dir, n); ok {
		if err := upper.(writeFileInFS).WriteFileIn(d, n.name, n.path, data, perm); err != nil {
			return layer.PathError("open", name, bare(err))
		}
		return nil
	}
	// The walk found no handle on the directory (it was made in the
	// upper layer just now): the upper layer's WriteFile walks n's path,
	// one step still.
	if err := upper.(layer.WriteFileFS).WriteFile(n.path, data, perm); err != nil {
		return layer.PathError("open", name, bare(err))
	}
	return nil
}

// writeOver is writeFile's step for a name that needs the upper layer to
// change more than the file: a regular file of a lower layer, copied up
// with data as its content, or a name over the upper layer's whiteout,
// created with data. Each is one step of the upper layer (CopyIn,
// CreateOver), so that no reader sees the copy or the new file empty
// before data is in it, as prepareOpen's copy-up and create followed by
// the write let them. It reports false, having done nothing, for any
// other name or an upper layer that cannot.
func (u *FS) writeOver(dir, n *node, data []byte, perm fs.FileMode) (bool, error) {
	if !n.exists() {
		if !n.upperWhiteout {
			return false, nil
		}
		if err := layer.CheckElem(path.Base(n.path)); err != nil {
			return true, err
		}
		mode := perm & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		return u.createOver(dir, n, []mem.Copy{{Name: path.Base(n.path), Mode: mode, Data: bytes.NewReader(data)}})
	}
	ci, ok := u.upper.(copyInFS)
	if !ok || n.layer == 0 || n.parent == nil || !n.info.Mode().IsRegular() {
		return false, nil
	}
	if err := u.copyIn(ci, n, false, bytes.NewReader(data)); err != nil {
		return true, err
	}
	u.moveHandles(n)
	return true, nil
}

// Mkdir creates the directory name. Made where a lower layer's entry was
// removed, it is opaque: what the lowers hold there stays hidden.
func (u *FS) Mkdir(name string, perm fs.FileMode) error {
	if pathwalk.ValidPath(name) {
		if err := layer.CheckPath(name); err != nil {
			return layer.PathError("mkdir", name, err)
		}
	}
	if m, rest, ok := u.mounted(name); ok {
		if rest == "." {
			return layer.PathError("mkdir", name, syscall.EEXIST)
		}
		return inMount("mkdir", name, layer.Mkdir(m, rest, perm))
	}
	if _, err := u.writable("mkdir", name); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	dir, n, err := u.walkWrite(name, false, false)
	if err == nil && n.below {
		// An opaque directory may take more than one step, and a reader
		// must not keep the merged one it may see between them.
		u.mu.keepDirs = false
	}
	if err == nil && n.exists() {
		err = syscall.EEXIST
	}
	if err == nil {
		err = layer.CheckElem(path.Base(n.path))
	}
	if err == nil {
		err = u.mkdirAt(dir, n, perm)
	}
	if err != nil {
		return layer.PathError("mkdir", name, bare(err))
	}
	return nil
}

// MkdirAll creates name and any missing parents, as [os.MkdirAll] does.
func (u *FS) MkdirAll(name string, perm fs.FileMode) error {
	if fi, err := u.Stat(name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return layer.PathError("mkdir", name, syscall.ENOTDIR)
	}
	if !pathwalk.ValidPath(name) {
		return layer.PathError("mkdir", name, fs.ErrInvalid)
	}
	if done, err := u.mkdirAll(name, perm); done {
		return err
	}
	if i := strings.LastIndexByte(name, '/'); i > 0 {
		if err := u.MkdirAll(name[:i], perm); err != nil {
			return err
		}
	}
	err := u.Mkdir(name, perm)
	if err != nil {
		if fi, lerr := u.Lstat(name); lerr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// Remove removes a file, a symlink or an empty directory. A name a lower
// layer holds leaves a whiteout, so that it never comes back.
func (u *FS) Remove(name string) error {
	if m, rest, ok := u.mounted(name); ok && rest != "." {
		return inMount("remove", name, layer.Remove(m, rest))
	}
	if u.busy(name) {
		return layer.PathError("remove", name, syscall.EBUSY)
	}
	if _, err := u.writable("remove", name); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	dir, n, err := u.walkWrite(name, false, false)
	var removed bool
	switch {
	case err != nil:
	case dir == nil:
		err = syscall.EINVAL
	case !n.exists():
		err = syscall.ENOENT
	case n.isDir():
		if removed, err = u.rmdirUpper(dir, n); removed || err != nil {
			break
		}
		var entries []fs.DirEntry
		if entries, err = u.merge(n); err == nil && len(entries) > 0 {
			err = syscall.ENOTEMPTY
		}
	}
	if err == nil && !removed {
		err = u.drop(dir, n)
	}
	if err != nil {
		return layer.PathError("remove", name, bare(err))
	}
	if n.isDir() {
		u.movedDirs(n.path, "")
	}
	return nil
}

// rmdirUpper removes n, a directory that only the upper layer holds, in
// one step of that layer when the layer's own directory is empty, which
// spares the merged listing that tells the union's emptiness. It reports
// false, having done nothing, when n is another directory or the upper's
// holds entries (whiteouts left there are none to the union).
func (u *FS) rmdirUpper(dir, n *node) (bool, error) {
	if n.below || n.layer != 0 || len(n.dirs) != 1 {
		return false, nil
	}
	in, d, ok := u.upperIn(dir, n)
	if !ok {
		return false, nil
	}
	if err := in.RemoveIn(d, n.name, n.path); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// drop takes n out of the union: out of the upper layer, and behind a
// whiteout when a lower layer holds it. A directory goes whole, in one
// step of the upper layer.
func (u *FS) drop(dir, n *node) error {
	if !n.below {
		if n.isDir() {
			return u.upper.RemoveAll(n.path)
		}
		if in, d, ok := u.upperIn(dir, n); ok {
			return in.RemoveIn(d, n.name, n.path)
		}
		return u.upper.Remove(n.path)
	}
	if err := u.upperDir(dir); err != nil {
		return err
	}
	if wa, ok := u.upper.(interface{ WhiteoutAll(string) error }); ok {
		// The upper's own entry and what it shadowed go in one step.
		return wa.WhiteoutAll(n.path)
	}
	if n.layer == 0 {
		if err := u.upper.RemoveAll(n.path); err != nil {
			return err
		}
	}
	return u.upper.Whiteout(n.path)
}

// RemoveAll removes name and everything below it, as [os.RemoveAll] does.
// It costs the same whatever the directory holds: the upper layer drops
// its part in one step and one whiteout hides the lowers' part.
func (u *FS) RemoveAll(name string) error {
	if !pathwalk.ValidPath(name) || name == "." {
		return layer.PathError("RemoveAll", name, syscall.EINVAL)
	}
	if m, rest, ok := u.mounted(name); ok && rest != "." {
		return inMount("unlinkat", name, layer.RemoveAll(m, rest))
	}
	if u.busy(name) {
		return layer.PathError("unlinkat", name, syscall.EBUSY)
	}
	if _, err := u.writable("unlinkat", name); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	dir, n, err := u.walk(name, false)
	switch {
	case err == syscall.ENOENT || err == nil && !n.exists():
		return nil
	case err == nil:
		err = u.drop(dir, n)
	}
	if err != nil {
		return layer.PathError("unlinkat", name, bare(err))
	}
	if n.isDir() {
		u.movedDirs(n.path, "")
	}
	return nil
}

// Whiteout is not offered by a union: it hides whiteouts rather than
// showing them, so it cannot serve as another union's upper layer. Stack
// unions by putting one's snapshot below another.
func (u *FS) Whiteout(name string) error {
	return layer.Unsupported("whiteout", name)
}

// Symlink creates newname as a symbolic link to oldname.
func (u *FS) Symlink(oldname, newname string) error {
	if pathwalk.ValidPath(newname) {
		// The target's checks come first, as in symlink(2): an empty
		// target is ENOENT whatever newname is.
		if err := layer.CheckSymlink(oldname, newname); err != nil {
			return layer.LinkError("symlink", oldname, newname, err)
		}
	}
	if m, rest, ok := u.mounted(newname); ok {
		if err := layer.Symlink(m, oldname, rest); err != nil {
			return layer.LinkError("symlink", oldname, newname, bareUnsupported(err))
		}
		return nil
	}
	if _, err := u.writable("symlink", newname); err != nil {
		return layer.LinkError("symlink", oldname, newname, errReadOnly)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	dir, n, err := u.walk(newname, false)
	if err == nil && (n.exists() || dir == nil) {
		err = syscall.EEXIST
	}
	if err == nil {
		err = layer.CheckElem(path.Base(n.path))
	}
	if err == nil {
		var done bool
		chain := []mem.Copy{{Name: path.Base(n.path), Mode: fs.ModeSymlink | 0o777, Data: strings.NewReader(oldname)}}
		if done, err = u.createOver(dir, n, chain); !done {
			err = u.makeRoom(dir, n)
			if err == nil {
				err = u.upper.Symlink(oldname, n.path)
			}
		}
	}
	if err != nil {
		return layer.LinkError("symlink", oldname, newname, bareLink(err))
	}
	return nil
}

// change copies up the entry name resolves to and applies fn to the copy.
func (u *FS) change(op, name string, follow bool, fn func(p string) error) error {
	if _, err := u.writable(op, name); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	n, err := u.resolve(op, name, follow)
	if err != nil {
		return err
	}
	if n.layer != 0 {
		if err := u.copyUp(n, true); err != nil {
			return layer.PathError(op, name, bare(err))
		}
	}
	if err := fn(n.path); err != nil {
		return layer.PathError(op, name, bare(err))
	}
	return nil
}

// Chmod changes the mode of name, following symlinks; a lower entry is
// copied up first.
func (u *FS) Chmod(name string, mode fs.FileMode) error {
	if m, rest, ok := u.mounted(name); ok {
		return inMount("chmod", name, layer.Chmod(m, rest, mode))
	}
	return u.change("chmod", name, true, func(p string) error { return u.upper.Chmod(p, mode) })
}

// Chtimes changes the times of name, following symlinks; a lower entry is
// copied up first.
func (u *FS) Chtimes(name string, atime, mtime time.Time) error {
	if m, rest, ok := u.mounted(name); ok {
		return inMount("chtimes", name, layer.Chtimes(m, rest, atime, mtime))
	}
	return u.change("chtimes", name, true, func(p string) error { return u.upper.Chtimes(p, atime, mtime) })
}

// Chown changes the owner of name, following symlinks; a lower entry is
// copied up first.
func (u *FS) Chown(name string, uid, gid int) error {
	if m, rest, ok := u.mounted(name); ok {
		return inMount("chown", name, layer.Chown(m, rest, uid, gid))
	}
	return u.change("chown", name, true, func(p string) error { return u.upper.Chown(p, uid, gid) })
}

// Lchown changes the owner of name without following a final symlink.
func (u *FS) Lchown(name string, uid, gid int) error {
	if m, rest, ok := u.mounted(name); ok {
		return inMount("lchown", name, layer.Lchown(m, rest, uid, gid))
	}
	return u.change("lchown", name, false, func(p string) error { return u.upper.Lchown(p, uid, gid) })
}

// Lchtimes changes the times of name without following a final symlink;
// a lower entry is copied up first.
func (u *FS) Lchtimes(name string, atime, mtime time.Time) error {
	if m, rest, ok := u.mounted(name); ok {
		return inMount("lchtimes", name, layer.Lchtimes(m, rest, atime, mtime))
	}
	return u.change("lchtimes", name, false, func(p string) error { return layer.Lchtimes(u.upper, p, atime, mtime) })
}

// ownerArg is id as chown's argument: -1, "unchanged", for NoOwner.
func ownerArg(id uint32) int {
	if id == layer.NoOwner {
		return -1
	}
	return int(id)
}

// bareLink strips an *os.LinkError or *fs.PathError down to its errno.
func bareLink(err error) error {
	if le, ok := err.(*os.LinkError); ok {
		return le.Err
	}
	return bare(err)
}
