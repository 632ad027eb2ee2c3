package workload

import (
	"archive/zip"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing/fstest"
	"time"

	"github.com/packfs/packfs/layer/mem"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// Tree is a set of regular files given by relative names and contents.
type Tree struct {
	Names []string
	Data  func(i int) []byte
}

var fixedTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// dirs returns every directory above the tree's files, parents first.
func (t Tree) dirs() []string {
	seen := map[string]bool{".": true}
	var out []string
	var add func(d string)
	add = func(d string) {
		if seen[d] {
			return
		}
		add(path.Dir(d))
		seen[d] = true
		out = append(out, d)
	}
	for _, n := range t.Names {
		add(path.Dir(n))
	}
	return out
}

// Mem returns the tree as a snapshot of an in-memory layer.
func (t Tree) Mem() (*mem.Snapshot, error) {
	m := mem.New()
	for _, d := range t.dirs() {
		if err := m.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	for i, n := range t.Names {
		if err := m.WriteFile(n, t.Data(i), 0o644); err != nil {
			return nil, err
		}
	}
	return m.Snapshot(), nil
}

// MapFS returns the tree as an fstest.MapFS.
func (t Tree) MapFS() fstest.MapFS {
	m := fstest.MapFS{}
	for i, n := range t.Names {
		m[n] = &fstest.MapFile{Data: t.Data(i), Mode: 0o644, ModTime: fixedTime}
	}
	return m
}

// WriteDir writes the tree below the host directory dir.
func (t Tree) WriteDir(dir string) error {
	for _, d := range t.dirs() {
		if err := os.Mkdir(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	for i, n := range t.Names {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(n)), t.Data(i), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WritePack writes the tree as a pack file at name.
func (t Tree) WritePack(name string) error {
	snap, err := t.Mem()
	if err != nil {
		return err
	}
	return packwriter.WriteFile(name, snap)
}

// WriteZip writes the tree as a zip file at name, stored uncompressed.
func (t Tree) WriteZip(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := WriteZipFS(f, t.MapFS()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteZipFS writes every file and directory of fsys into a new zip
// archive on w, stored uncompressed (Method Store), as an alternative to a
// pack.
func WriteZipFS(w interface{ Write([]byte) (int, error) }, fsys fs.FS) error {
	zw := zip.NewWriter(w)
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		h.Name = name
		if d.IsDir() {
			h.Name += "/"
			_, err = zw.CreateHeader(h)
			return err
		}
		h.Method = zip.Store
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		_, err = fw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

// OpenPack opens a pack file as a read-only FS.
func OpenPack(name string) (FS, error) {
	r, err := packreader.Open(name)
	if err != nil {
		return nil, err
	}
	return NewReadOnly(r, r.Close), nil
}

// OpenZip opens a zip file (zip.OpenReader) as a read-only FS.
func OpenZip(name string) (FS, error) {
	r, err := zip.OpenReader(name)
	if err != nil {
		return nil, err
	}
	return NewReadOnly(r, r.Close), nil
}
