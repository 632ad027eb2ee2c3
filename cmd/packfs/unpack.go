package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/packfs/packfs/layer"
	"golang.org/x/sys/unix"
)

// unpack extracts fsys into the host directory dst, preserving modes,
// modification times (symlinks' too) and symlink targets. Whiteouts become
// 0/0 character devices, as overlayfs stores them (this needs CAP_MKNOD).
//
// An entry that cannot be extracted (a damaged content, say) is reported
// to bad and left out, with nothing of it in place, and extraction goes
// on; unpack then returns an error counting them. Directory modes and
// times are applied last, deepest first, whatever happened before.
// Ownership is not restored, so setuid and setgid bits are dropped from
// files, as tar does when it does not restore owners: a setuid-user file
// must not come back as a setuid-root one.
func unpack(fsys fs.FS, dst string, progress func(), bad func(error)) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	type dirMeta struct {
		path string
		info fs.FileInfo
	}
	var dirs []dirMeta
	failed := 0
	report := func(err error) {
		failed++
		bad(err)
	}
	walkErr := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			report(err) // an unreadable directory: its subtree is left out
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if progress != nil {
			progress()
		}
		out := filepath.Join(dst, filepath.FromSlash(p))
		info, err := d.Info()
		if err != nil {
			report(err)
			return nil
		}
		if info.IsDir() {
			if p != "." {
				if err := os.Mkdir(out, 0o700); err != nil {
					report(err)
					return fs.SkipDir
				}
			}
			dirs = append(dirs, dirMeta{out, info})
			return nil
		}
		if err := extract(fsys, p, out, info); err != nil {
			report(err)
		}
		return nil
	})
	var errs []error
	for _, d := range slices.Backward(dirs) {
		if err := os.Chmod(d.path, d.info.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			errs = append(errs, err)
		}
		if err := setTimes(d.path, d.info); err != nil {
			errs = append(errs, err)
		}
	}
	if failed > 0 {
		errs = append(errs, fmt.Errorf("%d entries could not be extracted", failed))
	}
	return errors.Join(append([]error{walkErr}, errs...)...)
}

// extract writes the non-directory entry p of fsys, described by info, to
// the host path out; on error nothing of it is left at out.
func extract(fsys fs.FS, p, out string, info fs.FileInfo) error {
	switch t := info.Mode().Type(); {
	case t == 0:
		if err := writeFile(fsys, p, out, info); err != nil {
			return err
		}
	case t == fs.ModeSymlink:
		target, err := fs.ReadLink(fsys, p)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, out); err != nil {
			return err
		}
	case layer.IsWhiteout(info.Mode()):
		if err := unix.Mknod(out, unix.S_IFCHR|uint32(info.Mode().Perm()), 0); err != nil {
			return &fs.PathError{Op: "mknod", Path: out, Err: err}
		}
	default:
		return &fs.PathError{Op: "unpack", Path: p, Err: fmt.Errorf("%s cannot be extracted", fileKind(info.Mode()))}
	}
	return setTimes(out, info)
}

// writeFile writes the regular file p of fsys to out, removing it again
// when its content cannot be read whole.
func writeFile(fsys fs.FS, p, out string, info fs.FileInfo) error {
	src, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, src)
	err = errors.Join(err, f.Chmod(info.Mode()&(fs.ModePerm|fs.ModeSticky)), f.Close())
	if err != nil {
		os.Remove(out)
	}
	return err
}

// setTimes sets out's access and modification times to info's ModTime,
// without following a symlink.
func setTimes(out string, info fs.FileInfo) error {
	ts := unix.NsecToTimespec(info.ModTime().UnixNano())
	if info.ModTime().IsZero() {
		return nil
	}
	err := unix.UtimesNanoAt(unix.AT_FDCWD, out, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return &fs.PathError{Op: "utimes", Path: out, Err: err}
	}
	return nil
}
