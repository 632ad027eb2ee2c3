package workload

import (
	"io"
	"os"
	"path/filepath"

	"github.com/packfs/packfs/dirfs"
)

// hostFS is a host directory through package os with full paths; with
// sync set, Create and OpenWrite's Close fsync the file first.
type hostFS struct {
	root string
	sync bool
}

func newOS(dir string) (FS, error)      { return &hostFS{root: dir}, nil }
func newOSFsync(dir string) (FS, error) { return &hostFS{root: dir, sync: true}, nil }

func (h *hostFS) Path(rel string) string { return filepath.Join(h.root, filepath.FromSlash(rel)) }

func (h *hostFS) Create(name string, data []byte) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	return writeClose(f, data, h.sync)
}

// writeClose writes data to f unless it is empty, fsyncs it if sync is
// set, and closes it.
func writeClose(f interface {
	io.WriteCloser
	Sync() error
}, data []byte, sync bool) error {
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func (h *hostFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }
func (h *hostFS) WriteFile(name string, data []byte) error {
	return os.WriteFile(name, data, 0o644)
}
func (h *hostFS) Stat(name string) error { _, err := os.Stat(name); return err }
func (h *hostFS) ReadDir(name string) (int, error) {
	es, err := os.ReadDir(name)
	return len(es), err
}
func (h *hostFS) Mkdir(name string) error     { return os.Mkdir(name, 0o755) }
func (h *hostFS) Remove(name string) error    { return os.Remove(name) }
func (h *hostFS) RemoveAll(name string) error { return os.RemoveAll(name) }
func (h *hostFS) OpenWrite(name string) (io.WriteCloser, error) {
	f, err := os.Create(name)
	if err != nil || !h.sync {
		return f, err
	}
	return syncCloser{f}, nil
}
func (h *hostFS) OpenRead(name string) (io.ReadCloser, error) { return os.Open(name) }
func (h *hostFS) Close() error                                { return os.RemoveAll(h.root) }

// syncCloser fsyncs a file before closing it.
type syncCloser struct{ *os.File }

func (s syncCloser) Close() error {
	if err := s.Sync(); err != nil {
		s.File.Close()
		return err
	}
	return s.File.Close()
}

// rootFS is a host directory through os.Root, with names relative to it.
type rootFS struct {
	r   *os.Root
	dir string
}

func newOSRoot(dir string) (FS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &rootFS{r, dir}, nil
}

func (r *rootFS) Path(rel string) string { return rel }
func (r *rootFS) Create(name string, data []byte) error {
	f, err := r.r.Create(name)
	if err != nil {
		return err
	}
	return writeClose(f, data, false)
}
func (r *rootFS) ReadFile(name string) ([]byte, error) { return r.r.ReadFile(name) }
func (r *rootFS) WriteFile(name string, data []byte) error {
	return r.r.WriteFile(name, data, 0o644)
}
func (r *rootFS) Stat(name string) error { _, err := r.r.Stat(name); return err }
func (r *rootFS) ReadDir(name string) (int, error) {
	f, err := r.r.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	es, err := f.ReadDir(-1)
	return len(es), err
}
func (r *rootFS) Mkdir(name string) error                       { return r.r.Mkdir(name, 0o755) }
func (r *rootFS) Remove(name string) error                      { return r.r.Remove(name) }
func (r *rootFS) RemoveAll(name string) error                   { return r.r.RemoveAll(name) }
func (r *rootFS) OpenWrite(name string) (io.WriteCloser, error) { return r.r.Create(name) }
func (r *rootFS) OpenRead(name string) (io.ReadCloser, error)   { return r.r.Open(name) }
func (r *rootFS) Close() error {
	r.r.Close()
	return os.RemoveAll(r.dir)
}

// dirFS is PackFS's contained host directory.
type dirFS struct {
	d   *dirfs.FS
	dir string
}

func newDirfs(dir string) (FS, error) {
	d, err := dirfs.New(dir)
	if err != nil {
		return nil, err
	}
	return &dirFS{d, dir}, nil
}

// NewDirfsRoot returns dirfs over dir resolving names through os.Root
// (dirfs.ForceRoot) rather than openat2.
func NewDirfsRoot(dir string) (FS, error) {
	d, err := dirfs.New(dir, dirfs.ForceRoot())
	if err != nil {
		return nil, err
	}
	return &dirFS{d, dir}, nil
}

func (d *dirFS) Path(rel string) string { return rel }
func (d *dirFS) Create(name string, data []byte) error {
	f, err := d.d.Create(name)
	if err != nil {
		return err
	}
	return writeCloseFile(f, data)
}
func (d *dirFS) ReadFile(name string) ([]byte, error) { return d.d.ReadFile(name) }
func (d *dirFS) WriteFile(name string, data []byte) error {
	return d.d.WriteFile(name, data, 0o644)
}
func (d *dirFS) Stat(name string) error { _, err := d.d.Stat(name); return err }
func (d *dirFS) ReadDir(name string) (int, error) {
	es, err := d.d.ReadDir(name)
	return len(es), err
}
func (d *dirFS) Mkdir(name string) error                       { return d.d.Mkdir(name, 0o755) }
func (d *dirFS) Remove(name string) error                      { return d.d.Remove(name) }
func (d *dirFS) RemoveAll(name string) error                   { return d.d.RemoveAll(name) }
func (d *dirFS) OpenWrite(name string) (io.WriteCloser, error) { return d.d.Create(name) }
func (d *dirFS) OpenRead(name string) (io.ReadCloser, error)   { return d.d.Open(name) }
func (d *dirFS) Close() error {
	d.d.Close()
	return os.RemoveAll(d.dir)
}

// writeCloseFile writes data to f unless it is empty and closes it.
func writeCloseFile(f io.WriteCloser, data []byte) error {
	if len(data) > 0 {
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
