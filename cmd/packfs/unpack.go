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

// unpackOptions says what unpack extracts and how.
type unpackOptions struct {
	paths    []string // the subtrees to extract, io/fs paths; none: all
	exclude  patterns // entries left out, with their subtrees
	force    bool     // replace what is in the way; else it is an error
	progress func(p string, size int64)
	bad      func(error) // told each entry that could not be extracted
}

// unpack extracts fsys, or the subtrees o.paths of it (with the
// directories above them), into the host directory dst, preserving
// modes, modification times (symlinks' too) and symlink targets.
// Whiteouts become 0/0 character devices, as overlayfs stores them (this
// needs CAP_MKNOD). Directories already in dst merge; a file already
// there is an error for that entry unless o.force.
//
// An entry that cannot be extracted (a damaged content, say) is reported
// to o.bad and left out, with nothing of it in place, and extraction goes
// on; unpack then returns an error counting them. Directory modes and
// times are applied last, deepest first, whatever happened before.
// Ownership is not restored, so setuid and setgid bits are dropped from
// files, as tar does when it does not restore owners: a setuid-user file
// must not come back as a setuid-root one.
func unpack(fsys fs.FS, dst string, o unpackOptions) error {
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
		if o.bad != nil {
			o.bad(err)
		}
	}
	made := map[string]bool{}
	// mkdir makes the directory p of fsys at out, merging with one there.
	mkdir := func(p, out string, info fs.FileInfo) error {
		if made[p] {
			return nil
		}
		if p != "." {
			err := os.Mkdir(out, 0o700)
			if errors.Is(err, fs.ErrExist) {
				if fi, serr := os.Lstat(out); serr == nil && fi.IsDir() {
					err = nil
				} else if o.force {
					if err = os.Remove(out); err == nil {
						err = os.Mkdir(out, 0o700)
					}
				} else {
					err = &fs.PathError{Op: "mkdir", Path: out, Err: errors.New("a file is in the way (use -force to replace it)")}
				}
			}
			if err != nil {
				return err
			}
		}
		made[p] = true
		dirs = append(dirs, dirMeta{out, info})
		return nil
	}
	roots := o.paths
	if len(roots) == 0 {
		roots = []string{"."}
	}
	var walkErrs []error
	for _, root := range roots {
		// The directories above a subtree come first.
		for i := 0; i < len(root); i++ {
			if root[i] != '/' {
				continue
			}
			a := root[:i]
			info, err := fs.Stat(fsys, a)
			if err == nil {
				err = mkdir(a, filepath.Join(dst, filepath.FromSlash(a)), info)
			}
			if err != nil {
				report(err)
				break
			}
		}
		err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == root {
					return err
				}
				report(err) // an unreadable directory: its subtree is left out
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if p != "." && o.exclude.match(p) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			out := filepath.Join(dst, filepath.FromSlash(p))
			info, err := d.Info()
			if err != nil {
				report(err)
				return nil
			}
			if o.progress != nil {
				size := int64(0)
				if info.Mode().IsRegular() {
					size = info.Size()
				}
				o.progress(p, size)
			}
			if info.IsDir() {
				if err := mkdir(p, out, info); err != nil {
					report(err)
					return fs.SkipDir
				}
				return nil
			}
			if err := extract(fsys, p, out, info, o.force); err != nil {
				report(err)
			}
			return nil
		})
		if err != nil {
			walkErrs = append(walkErrs, err)
		}
	}
	errs := walkErrs
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
	return errors.Join(errs...)
}

// extract writes the non-directory entry p of fsys, described by info, to
// the host path out; on error nothing of it is left at out.
func extract(fsys fs.FS, p, out string, info fs.FileInfo, force bool) error {
	if force {
		// What is in the way goes, an empty directory too (as with tar
		// --overwrite); a directory with contents stays, and the entry
		// fails below.
		if fi, err := os.Lstat(out); err == nil {
			if err := os.Remove(out); err != nil && !fi.IsDir() {
				return err
			}
		}
	}
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
		return &fs.PathError{Op: "unpack", Path: p, Err: fmt.Errorf("a %s cannot be extracted", entryKindName(info))}
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
