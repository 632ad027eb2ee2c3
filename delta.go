package packfs

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/packfs/packfs/layer"
)

// delta is the store's own layers (its upper layer and packs, top first)
// merged into one, for a flatten over lowers (Options.Lowers) to write as
// one pack. A union would hide the whiteouts, which the lowers still
// need; delta keeps every whiteout no layer above it covers, and marks a
// directory opaque where its merge stops within the store's own layers:
// at an opaque directory, or at a whiteout or a non-directory beneath a
// directory, which in the store's union hid all below it. A merge that
// runs out of the store's layers stays open to the lowers, as it was.
//
// It serves what packwriter.Write reads: Stat of the root, ReadDir with
// each entry's info, ReadFile, Open and ReadLink. The layers are
// snapshots, which never change.
type delta struct {
	layers []fs.FS

	mu   sync.Mutex
	dirs map[string]deltaDir // what dirLayers found, by directory
}

// deltaDir is a directory of delta: the layers that merge into it, top
// first, and whether the merge stopped before the bottom layer.
type deltaDir struct {
	layers []int
	opaque bool
}

var (
	_ fs.ReadDirFS  = (*delta)(nil)
	_ fs.ReadFileFS = (*delta)(nil)
	_ fs.ReadLinkFS = (*delta)(nil)
	_ fs.StatFS     = (*delta)(nil)
)

// dir returns the layers merged at the directory name.
func (d *delta) dir(name string) (deltaDir, error) {
	d.mu.Lock()
	dd, ok := d.dirs[name]
	d.mu.Unlock()
	if ok {
		return dd, nil
	}
	var parent deltaDir
	if name == "." {
		parent.layers = make([]int, len(d.layers))
		for i := range parent.layers {
			parent.layers[i] = i
		}
	} else {
		var err error
		if parent, err = d.dir(path.Dir(name)); err != nil {
			return deltaDir{}, err
		}
	}
	for _, i := range parent.layers {
		l := d.layers[i]
		fi, err := fs.Lstat(l, name)
		switch {
		case err != nil && isNotExist(err):
			continue
		case err != nil:
			return deltaDir{}, err
		case !fi.IsDir() && len(dd.layers) == 0:
			if layer.IsWhiteout(fi.Mode()) {
				return deltaDir{}, layer.PathError("readdir", name, fs.ErrNotExist)
			}
			return deltaDir{}, layer.PathError("readdir", name, syscall.ENOTDIR)
		case !fi.IsDir():
			dd.opaque = true // it hid what is below, the lowers too
		default:
			dd.layers = append(dd.layers, i)
			dd.opaque = layer.IsOpaque(l, name)
		}
		if dd.opaque {
			break
		}
	}
	if len(dd.layers) == 0 {
		return deltaDir{}, layer.PathError("readdir", name, fs.ErrNotExist)
	}
	d.mu.Lock()
	if d.dirs == nil {
		d.dirs = map[string]deltaDir{}
	}
	d.dirs[name] = dd
	d.mu.Unlock()
	return dd, nil
}

// ReadDir lists the merged directory name, sorted, whiteouts included.
func (d *delta) ReadDir(name string) ([]fs.DirEntry, error) {
	dd, err := d.dir(name)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []fs.DirEntry
	for _, i := range dd.layers {
		ents, err := fs.ReadDir(d.layers[i], name)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if n := e.Name(); n != layer.OpaqueName && !seen[n] {
				seen[n] = true
				out = append(out, e)
			}
		}
	}
	if dd.opaque {
		out = append(out, opaqueEntry{})
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// top returns the topmost layer holding name, and its entry there.
func (d *delta) top(op, name string) (fs.FS, fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, nil, layer.PathError(op, name, fs.ErrInvalid)
	}
	if name == "." {
		fi, err := fs.Stat(d.layers[0], ".")
		return d.layers[0], fi, err
	}
	dd, err := d.dir(path.Dir(name))
	if err != nil {
		return nil, nil, layer.PathError(op, name, fs.ErrNotExist)
	}
	if path.Base(name) == layer.OpaqueName {
		if dd.opaque {
			return nil, opaqueEntry{}, nil
		}
		return nil, nil, layer.PathError(op, name, fs.ErrNotExist)
	}
	for _, i := range dd.layers {
		fi, err := fs.Lstat(d.layers[i], name)
		switch {
		case err == nil:
			return d.layers[i], fi, nil
		case !isNotExist(err):
			return nil, nil, err
		}
	}
	return nil, nil, layer.PathError(op, name, fs.ErrNotExist)
}

func (d *delta) Lstat(name string) (fs.FileInfo, error) {
	_, fi, err := d.top("lstat", name)
	return fi, err
}

// Stat is Lstat: packwriter stats only the root, and a symlink of one
// layer may point into another, which only the store's union resolves.
func (d *delta) Stat(name string) (fs.FileInfo, error) {
	_, fi, err := d.top("stat", name)
	return fi, err
}

func (d *delta) Open(name string) (fs.File, error) {
	l, _, err := d.top("open", name)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, layer.PathError("open", name, fs.ErrPermission) // the opaque marker
	}
	return l.Open(name)
}

func (d *delta) ReadFile(name string) ([]byte, error) {
	l, _, err := d.top("open", name)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, layer.PathError("open", name, fs.ErrPermission)
	}
	return fs.ReadFile(l, name)
}

func (d *delta) ReadLink(name string) (string, error) {
	l, _, err := d.top("readlink", name)
	if err != nil {
		return "", err
	}
	if l == nil {
		return "", layer.PathError("readlink", name, fs.ErrInvalid)
	}
	return fs.ReadLink(l, name)
}

// opaqueEntry is the whiteout named layer.OpaqueName that marks a
// directory of delta opaque, as a directory entry and as its info.
type opaqueEntry struct{}

func (opaqueEntry) Name() string               { return layer.OpaqueName }
func (opaqueEntry) IsDir() bool                { return false }
func (opaqueEntry) Type() fs.FileMode          { return layer.ModeWhiteout }
func (opaqueEntry) Info() (fs.FileInfo, error) { return opaqueEntry{}, nil }
func (opaqueEntry) Size() int64                { return 0 }
func (opaqueEntry) Mode() fs.FileMode          { return layer.ModeWhiteout }
func (opaqueEntry) ModTime() time.Time         { return time.Unix(0, 0) }
func (opaqueEntry) Sys() any                   { return nil }
