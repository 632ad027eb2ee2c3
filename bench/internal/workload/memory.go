package workload

import (
	"io"
	"io/fs"
	"os"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"
	"github.com/packfs/packfs"
	"github.com/packfs/packfs/aferoadapter"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"github.com/spf13/afero"
)

// layerFS is a PackFS layer through its own API: the in-memory layer or
// the union.
type layerFS struct {
	l interface {
		layer.FS
		fs.ReadDirFS
		fs.ReadFileFS
		fs.StatFS
	}
}

func newMem(string) (FS, error) { return &layerFS{mem.New()}, nil }

// newUnion is the union of an in-memory upper layer over one lower
// layer, an empty in-memory snapshot: every lookup consults both.
func newUnion(string) (FS, error) {
	return &layerFS{packfs.New(mem.New(), mem.New().Snapshot())}, nil
}

// NewLayer wraps a PackFS layer, such as a mem.FS or a packfs.FS.
func NewLayer(l interface {
	layer.FS
	fs.ReadDirFS
	fs.ReadFileFS
	fs.StatFS
}) FS {
	return &layerFS{l}
}

func (m *layerFS) Path(rel string) string { return rel }
func (m *layerFS) Create(name string, data []byte) error {
	f, err := m.l.Create(name)
	if err != nil {
		return err
	}
	return writeCloseFile(f, data)
}
func (m *layerFS) ReadFile(name string) ([]byte, error) { return m.l.ReadFile(name) }
func (m *layerFS) WriteFile(name string, data []byte) error {
	return m.l.WriteFile(name, data, 0o644)
}
func (m *layerFS) Stat(name string) error { _, err := m.l.Stat(name); return err }
func (m *layerFS) ReadDir(name string) (int, error) {
	es, err := m.l.ReadDir(name)
	return len(es), err
}
func (m *layerFS) Mkdir(name string) error                       { return m.l.Mkdir(name, 0o755) }
func (m *layerFS) Remove(name string) error                      { return m.l.Remove(name) }
func (m *layerFS) RemoveAll(name string) error                   { return m.l.RemoveAll(name) }
func (m *layerFS) OpenWrite(name string) (io.WriteCloser, error) { return m.l.Create(name) }
func (m *layerFS) OpenRead(name string) (io.ReadCloser, error)   { return m.l.Open(name) }
func (m *layerFS) Close() error                                  { return nil }

// aferoFS is an afero.Fs through afero's API (afero.ReadFile,
// afero.ReadDir, ...) with names under root ("" for the root of an
// in-memory one).
type aferoFS struct {
	fs   afero.Fs
	root string // names are root + "/" + rel
	dir  string // a host directory to remove at Close
}

func newAdapter(string) (FS, error)  { return &aferoFS{fs: aferoadapter.New(mem.New())}, nil }
func newMemMapFs(string) (FS, error) { return &aferoFS{fs: afero.NewMemMapFs()}, nil }
func newAferoOsFs(dir string) (FS, error) {
	return &aferoFS{fs: afero.NewOsFs(), root: dir, dir: dir}, nil
}

// NewAfero wraps an afero.Fs used with names under root; Close removes
// dir unless it is "".
func NewAfero(a afero.Fs, root, dir string) FS { return &aferoFS{fs: a, root: root, dir: dir} }

func (a *aferoFS) Path(rel string) string { return a.root + "/" + rel }
func (a *aferoFS) Create(name string, data []byte) error {
	f, err := a.fs.Create(name)
	if err != nil {
		return err
	}
	return writeCloseFile(f, data)
}
func (a *aferoFS) ReadFile(name string) ([]byte, error) { return afero.ReadFile(a.fs, name) }
func (a *aferoFS) WriteFile(name string, data []byte) error {
	return afero.WriteFile(a.fs, name, data, 0o644)
}
func (a *aferoFS) Stat(name string) error { _, err := a.fs.Stat(name); return err }
func (a *aferoFS) ReadDir(name string) (int, error) {
	fis, err := afero.ReadDir(a.fs, name)
	return len(fis), err
}
func (a *aferoFS) Mkdir(name string) error                       { return a.fs.Mkdir(name, 0o755) }
func (a *aferoFS) Remove(name string) error                      { return a.fs.Remove(name) }
func (a *aferoFS) RemoveAll(name string) error                   { return a.fs.RemoveAll(name) }
func (a *aferoFS) OpenWrite(name string) (io.WriteCloser, error) { return a.fs.Create(name) }
func (a *aferoFS) OpenRead(name string) (io.ReadCloser, error)   { return a.fs.Open(name) }
func (a *aferoFS) Close() error {
	if a.dir == "" {
		return nil
	}
	return os.RemoveAll(a.dir)
}

// billyFS is go-billy's memfs through billy's API. It has no Mkdir:
// MkdirAll stands in.
type billyFS struct{ fs billy.Filesystem }

func newBilly(string) (FS, error) { return &billyFS{memfs.New()}, nil }

func (b *billyFS) Path(rel string) string { return "/" + rel }
func (b *billyFS) Create(name string, data []byte) error {
	f, err := b.fs.Create(name)
	if err != nil {
		return err
	}
	return writeCloseFile(f, data)
}
func (b *billyFS) ReadFile(name string) ([]byte, error) { return util.ReadFile(b.fs, name) }
func (b *billyFS) WriteFile(name string, data []byte) error {
	return util.WriteFile(b.fs, name, data, 0o644)
}
func (b *billyFS) Stat(name string) error { _, err := b.fs.Stat(name); return err }
func (b *billyFS) ReadDir(name string) (int, error) {
	fis, err := b.fs.ReadDir(name)
	return len(fis), err
}
func (b *billyFS) Mkdir(name string) error                       { return b.fs.MkdirAll(name, 0o755) }
func (b *billyFS) Remove(name string) error                      { return b.fs.Remove(name) }
func (b *billyFS) RemoveAll(name string) error                   { return util.RemoveAll(b.fs, name) }
func (b *billyFS) OpenWrite(name string) (io.WriteCloser, error) { return b.fs.Create(name) }
func (b *billyFS) OpenRead(name string) (io.ReadCloser, error)   { return b.fs.Open(name) }
func (b *billyFS) Close() error                                  { return nil }

// roFS is a read-only fs.FS (a pack, a zip, a MapFS, a snapshot) through
// the io/fs helpers, which use its ReadFile, Stat and ReadDir methods when
// it has them.
type roFS struct {
	fsys  fs.FS
	close func() error
}

// NewReadOnly wraps an fs.FS; close, if not nil, is called by Close.
func NewReadOnly(fsys fs.FS, close func() error) FS { return &roFS{fsys, close} }

func (r *roFS) Path(rel string) string                { return rel }
func (r *roFS) Create(name string, data []byte) error { return ErrReadOnly }
func (r *roFS) ReadFile(name string) ([]byte, error)  { return fs.ReadFile(r.fsys, name) }
func (r *roFS) WriteFile(string, []byte) error        { return ErrReadOnly }
func (r *roFS) Stat(name string) error                { _, err := fs.Stat(r.fsys, name); return err }
func (r *roFS) ReadDir(name string) (int, error) {
	es, err := fs.ReadDir(r.fsys, name)
	return len(es), err
}
func (r *roFS) Mkdir(string) error                       { return ErrReadOnly }
func (r *roFS) Remove(string) error                      { return ErrReadOnly }
func (r *roFS) RemoveAll(string) error                   { return ErrReadOnly }
func (r *roFS) OpenWrite(string) (io.WriteCloser, error) { return nil, ErrReadOnly }
func (r *roFS) OpenRead(name string) (io.ReadCloser, error) {
	return r.fsys.Open(name)
}
func (r *roFS) Close() error {
	if r.close == nil {
		return nil
	}
	return r.close()
}
