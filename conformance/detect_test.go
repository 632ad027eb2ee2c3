package conformance

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packfs/packfs/layer"
)

// TestDifferentialDetects checks that the differential test catches
// plausible bugs: each variant of plain os below breaks one rule, and some
// sequence among the first hundred must diverge.
func TestDifferentialDetects(t *testing.T) {
	withUmask0(t)
	base := hostBase(t)
	bugs := map[string]func(h *hostFS) layer.FS{
		"Remove of a non-empty directory": func(h *hostFS) layer.FS { return removeAllBug{h} },
		"Mkdir ignores perm":              func(h *hostFS) layer.FS { return mkdirPermBug{h} },
		"Readlink cleans the target":      func(h *hostFS) layer.FS { return readlinkBug{h} },
		"OpenFile ignores O_TRUNC":        func(h *hostFS) layer.FS { return truncBug{h} },
		"OpenFile ignores O_APPEND":       func(h *hostFS) layer.FS { return appendBug{h} },
		"Stat does not follow symlinks":   func(h *hostFS) layer.FS { return statBug{h} },
		"Chtimes does nothing":            func(h *hostFS) layer.FS { return chtimesBug{h} },
		"Remove names its Op unlink":      func(h *hostFS) layer.FS { return opBug{h} },
		"Rename reports old as new":       func(h *hostFS) layer.FS { return renamePathBug{h} },
	}
	for name, bug := range bugs {
		t.Run(name, func(t *testing.T) {
			newFS := func(t *testing.T) layer.FS { return bug(&hostFS{dir: fastTempDir(t)}) }
			for seed := int64(1); seed <= 100; seed++ {
				if d := runSequence(t, newFS, base, genOps(seed, defaultOps), nil); d != nil {
					t.Logf("seed %d: %s", seed, d.sig)
					return
				}
			}
			t.Errorf("no sequence of the first 100 finds the bug")
		})
	}
}

type removeAllBug struct{ *hostFS }

func (b removeAllBug) Remove(name string) error { return b.hostFS.RemoveAll(name) }

type mkdirPermBug struct{ *hostFS }

func (b mkdirPermBug) Mkdir(name string, _ fs.FileMode) error { return b.hostFS.Mkdir(name, 0o755) }

type readlinkBug struct{ *hostFS }

func (b readlinkBug) Readlink(name string) (string, error) {
	target, err := b.hostFS.Readlink(name)
	return path.Clean(target), err
}

type truncBug struct{ *hostFS }

func (b truncBug) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	return b.hostFS.OpenFile(name, flag&^os.O_TRUNC, perm)
}

type appendBug struct{ *hostFS }

func (b appendBug) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	return b.hostFS.OpenFile(name, flag&^os.O_APPEND, perm)
}

type statBug struct{ *hostFS }

func (b statBug) Stat(name string) (fs.FileInfo, error) { return b.hostFS.Lstat(name) }

type chtimesBug struct{ *hostFS }

func (b chtimesBug) Chtimes(string, time.Time, time.Time) error { return nil }

type opBug struct{ *hostFS }

func (b opBug) Remove(name string) error {
	err := b.hostFS.Remove(name)
	if pe, ok := err.(*fs.PathError); ok {
		pe.Op = "unlink"
	}
	return err
}

type renamePathBug struct{ *hostFS }

func (b renamePathBug) Rename(oldname, newname string) error {
	err := b.hostFS.Rename(oldname, newname)
	if le, ok := err.(*os.LinkError); ok {
		le.New = fmt.Sprint(le.Old)
	}
	return err
}

// TestDifferentialDetectsOwners is TestDifferentialDetects for what
// WithOwners adds: owners (as root) and a symlink's own times.
func TestDifferentialDetectsOwners(t *testing.T) {
	withUmask0(t)
	base := hostBase(t)
	bugs := map[string]func(h *hostFS) layer.FS{
		"Lchtimes follows symlinks": func(h *hostFS) layer.FS { return lchtimesBug{h} },
	}
	if isRoot() {
		bugs["Lchown follows symlinks"] = func(h *hostFS) layer.FS { return lchownBug{h} }
		bugs["Chown keeps the uid"] = func(h *hostFS) layer.FS { return chownUIDBug{h} }
		bugs["Chown keeps setuid"] = func(h *hostFS) layer.FS { return chownSetuidBug{h} }
	}
	for name, bug := range bugs {
		t.Run(name, func(t *testing.T) {
			newFS := func(t *testing.T) layer.FS { return bug(&hostFS{dir: fastTempDir(t)}) }
			for seed := int64(1); seed <= 300; seed++ {
				if d := runSequence(t, newFS, base, withOwners(seed, genOps(seed, defaultOps)), nil); d != nil {
					t.Logf("seed %d: %s", seed, d.sig)
					return
				}
			}
			t.Errorf("no sequence of the first 300 finds the bug")
		})
	}
}

type lchtimesBug struct{ *hostFS }

func (b lchtimesBug) Lchtimes(name string, atime, mtime time.Time) error {
	return b.hostFS.Chtimes(name, atime, mtime)
}

type lchownBug struct{ *hostFS }

func (b lchownBug) Lchown(name string, uid, gid int) error { return b.hostFS.Chown(name, uid, gid) }

type chownUIDBug struct{ *hostFS }

func (b chownUIDBug) Chown(name string, _, gid int) error { return b.hostFS.Chown(name, -1, gid) }

type chownSetuidBug struct{ *hostFS }

func (b chownSetuidBug) Chown(name string, uid, gid int) error {
	fi, statErr := b.hostFS.Stat(name)
	if err := b.hostFS.Chown(name, uid, gid); err != nil || statErr != nil {
		return err
	}
	return b.hostFS.Chmod(name, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}

// TestReadOnlyDifferentialDetects is TestDifferentialDetects for the
// read-only differential: each variant of os below, served as a read-only
// backend, breaks one rule of reading, and some sequence among the first
// hundred must diverge.
func TestReadOnlyDifferentialDetects(t *testing.T) {
	withUmask0(t)
	base := hostBase(t)
	c := newConfig([]Option{WithSeeds(100), WithOps(defaultOps)})
	bugs := map[string]func(h *hostFS) fs.FS{
		"Stat of a file with a trailing slash succeeds": func(h *hostFS) fs.FS { return trailingSlashBug{h} },
		"Seek past the end fails":                       func(h *hostFS) fs.FS { return seekPastEndBug{h} },
		"Lstat follows symlinks":                        func(h *hostFS) fs.FS { return lstatBug{h} },
		"ReadAt short of the end without io.EOF":        func(h *hostFS) fs.FS { return readAtEOFBug{h} },
		"a name past NAME_MAX is ErrNotExist":           func(h *hostFS) fs.FS { return nameMaxBug{h} },
	}
	for name, bug := range bugs {
		t.Run(name, func(t *testing.T) {
			seqs := readOnlySequences{t: t, build: func(t *testing.T, dir string) fs.FS { return bug(&hostFS{dir: dir}) }, base: base}
			for seed := int64(1); seed <= 100; seed++ {
				tree, reads := readOnlyOps(t, base, seed, c)
				if d := seqs.run(tree, reads, nil, nil); d != nil {
					t.Logf("seed %d: %s", seed, d.sig)
					return
				}
			}
			t.Errorf("no sequence of the first 100 finds the bug")
		})
	}
}

type trailingSlashBug struct{ *hostFS }

func (b trailingSlashBug) Stat(name string) (fs.FileInfo, error) {
	if file, ok := strings.CutSuffix(name, "/"); ok {
		if fi, err := b.hostFS.Stat(file); err == nil && !fi.IsDir() {
			return fi, nil
		}
	}
	return b.hostFS.Stat(name)
}

type seekPastEndBug struct{ *hostFS }

func (b seekPastEndBug) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	f, err := b.hostFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return seekPastEndFile{f}, nil
}

type seekPastEndFile struct{ layer.File }

func (f seekPastEndFile) Seek(off int64, whence int) (int64, error) {
	cur, _ := f.File.Seek(0, io.SeekCurrent)
	n, err := f.File.Seek(off, whence)
	if fi, serr := f.Stat(); err == nil && serr == nil && fi.Mode().IsRegular() && n > fi.Size() {
		f.File.Seek(cur, io.SeekStart)
		return 0, &fs.PathError{Op: "seek", Path: f.Name(), Err: syscall.EINVAL}
	}
	return n, err
}

type lstatBug struct{ *hostFS }

func (b lstatBug) Lstat(name string) (fs.FileInfo, error) { return b.hostFS.Stat(name) }

type readAtEOFBug struct{ *hostFS }

func (b readAtEOFBug) OpenFile(name string, flag int, perm fs.FileMode) (layer.File, error) {
	f, err := b.hostFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return readAtEOFFile{f}, nil
}

type readAtEOFFile struct{ layer.File }

func (f readAtEOFFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

type nameMaxBug struct{ *hostFS }

func (b nameMaxBug) Stat(name string) (fs.FileInfo, error) {
	fi, err := b.hostFS.Stat(name)
	if errors.Is(err, syscall.ENAMETOOLONG) {
		err = &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fi, err
}
