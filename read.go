package packfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/packfs/packfs/layer"
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
	n, err := u.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, layer.PathError("read", name, syscall.EISDIR)
	}
	b, err := fs.ReadFile(u.layers[n.layer], n.path)
	if err != nil {
		return nil, layer.PathError("read", name, bare(err))
	}
	return b, nil
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
		// List the directory as it is now at its path: a copy-up since
		// Open may have added a layer to it, and a removed directory lists
		// nothing (ENOENT), as getdents gives.
		_, n, err := d.u.walk(d.n.path, false)
		if err == nil && (!n.exists() || !n.isDir()) {
			err = syscall.ENOENT
		}
		if err != nil {
			return nil, layer.PathError("readdirent", d.name, bare(err))
		}
		list, err := d.u.merge(n)
		if err != nil {
			return nil, err
		}
		d.n = n
		d.list, d.listed = d.u.withMounts(n.path, list), true
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
	defer d.mu.Unlock()
	if err := d.check("close"); err != nil {
		return err
	}
	d.closed = true
	return nil
}
