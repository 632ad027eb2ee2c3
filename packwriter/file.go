package packwriter

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes a pack of fsys to the file name atomically: it writes a
// temporary file in the same directory, syncs it, renames it over name and
// syncs the directory. On error name is untouched, the temporary file
// removed, and the error names name, never the temporary file. The pack
// gets permission bits 0o644. WriteFile replaces what name is: a symlink
// is replaced, not written through; callers that mean otherwise resolve
// name first. On Linux it starts the writeback of each MiB as it is
// written (sync_file_range), so that the sync at the end waits for the
// last MiB and the metadata rather than the whole pack.
func WriteFile(name string, fsys fs.FS, opts ...Option) (err error) {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return &fs.PathError{Op: "create", Path: name, Err: bare(err)}
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			var pe *fs.PathError
			if errors.As(err, &pe) && pe.Path == tmp {
				err = &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
			}
		}
	}()
	opts = append(opts[:len(opts):len(opts)], func(c *config) { c.writeback = startWriteback(f) })
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
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return &fs.PathError{Op: "rename", Path: name, Err: err}
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// bare returns the errno inside err, an *fs.PathError, or err.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
