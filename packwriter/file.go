package packwriter

import (
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes a pack of fsys to the file name atomically: it writes a
// temporary file in the same directory, syncs it, renames it over name and
// syncs the directory. On error name is untouched and the temporary file
// removed. The pack gets
// permission bits 0o644.
func WriteFile(name string, fsys fs.FS, opts ...Option) (err error) {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = Write(f, fsys, opts...); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, name); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
