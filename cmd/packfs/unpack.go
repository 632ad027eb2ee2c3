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
// Directory modes and times are applied last, deepest first.
func unpack(fsys fs.FS, dst string, progress func()) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	type dirMeta struct {
		path string
		info fs.FileInfo
	}
	var dirs []dirMeta
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if progress != nil {
			progress()
		}
		out := filepath.Join(dst, filepath.FromSlash(p))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch t := info.Mode().Type(); {
		case t == fs.ModeDir:
			if p != "." {
				if err := os.Mkdir(out, 0o700); err != nil {
					return err
				}
			}
			dirs = append(dirs, dirMeta{out, info})
			return nil
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
			return fmt.Errorf("%s: unsupported type %v", p, t)
		}
		return setTimes(out, info)
	})
	if err != nil {
		return err
	}
	for _, d := range slices.Backward(dirs) {
		if err := os.Chmod(d.path, d.info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
		if err := setTimes(d.path, d.info); err != nil {
			return err
		}
	}
	return nil
}

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
	err = errors.Join(err, f.Chmod(info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)), f.Close())
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
