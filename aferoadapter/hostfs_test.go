package aferoadapter_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// hostFs is afero's OsFs with every name mapped into a temporary
// directory dir, as dir + "/" + name ("" stays ""), so that the kernel
// resolves the name as given, decorations and all: the reference of the
// differential tests. Symlink targets are kept verbatim, and errors
// report the names as passed.
type hostFs struct {
	os   afero.Fs
	dir  string
	base string // the sandbox dir lies in
}

var (
	_ afero.Fs         = (*hostFs)(nil)
	_ afero.Lstater    = (*hostFs)(nil)
	_ afero.Symlinker  = (*hostFs)(nil)
	_ afero.LinkReader = (*hostFs)(nil)
)

// sandboxDepth is how deep below its temporary directory a hostFs's
// directory lies: a name that climbs above it (the differential tests draw
// those again, see unfit) would still land in the sandbox, where
// checkSandbox sees it.
const sandboxDepth = 16

// newHostFs returns a hostFs over a new directory of mode 0755, as
// mem.New's root, sandboxDepth levels below a temporary directory.
func newHostFs(t testing.TB) *hostFs {
	h, err := newHostFsIn(tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// newHostFsIn is newHostFs in the directory base, which the caller
// removes.
func newHostFsIn(base string) (*hostFs, error) {
	dir := base + strings.Repeat("/s", sandboxDepth)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &hostFs{os: afero.NewOsFs(), dir: dir, base: base}, nil
}

// checkSandbox returns an error if anything but the way down to h's
// directory exists in its sandbox: a call escaped the directory.
func (h *hostFs) checkSandbox() error {
	for d := h.base; d != h.dir; d += "/s" {
		names, err := os.ReadDir(d)
		if err != nil {
			return err
		}
		if len(names) != 1 || names[0].Name() != "s" {
			return fmt.Errorf("a call escaped the host directory: %s holds %v", d, names)
		}
	}
	return nil
}

func (h *hostFs) real(name string) string {
	if name == "" {
		return ""
	}
	return h.dir + "/" + name
}

// unmap returns err with the directory's prefix taken off its paths.
func (h *hostFs) unmap(err error) error {
	strip := func(p string) string {
		if rest, ok := strings.CutPrefix(p, h.dir+"/"); ok {
			return rest
		}
		return p
	}
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return &fs.PathError{Op: pe.Op, Path: strip(pe.Path), Err: pe.Err}
	case errors.As(err, &le):
		return &os.LinkError{Op: le.Op, Old: strip(le.Old), New: strip(le.New), Err: le.Err}
	}
	return err
}

func (h *hostFs) Name() string { return "host" }

// hostFile is a file of a hostFs, named as it was opened.
type hostFile struct {
	afero.File
	name string
}

func (f hostFile) Name() string { return f.name }

func (h *hostFs) file(f afero.File, name string, err error) (afero.File, error) {
	if err != nil {
		return nil, h.unmap(err)
	}
	return hostFile{f, name}, nil
}

func (h *hostFs) Create(name string) (afero.File, error) {
	f, err := h.os.Create(h.real(name))
	return h.file(f, name, err)
}

func (h *hostFs) Mkdir(name string, perm os.FileMode) error {
	return h.unmap(h.os.Mkdir(h.real(name), perm))
}

func (h *hostFs) MkdirAll(name string, perm os.FileMode) error {
	return h.unmap(h.os.MkdirAll(h.real(name), perm))
}

func (h *hostFs) Open(name string) (afero.File, error) {
	f, err := h.os.Open(h.real(name))
	return h.file(f, name, err)
}

func (h *hostFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	f, err := h.os.OpenFile(h.real(name), flag, perm)
	return h.file(f, name, err)
}

func (h *hostFs) Remove(name string) error { return h.unmap(h.os.Remove(h.real(name))) }

func (h *hostFs) RemoveAll(name string) error { return h.unmap(h.os.RemoveAll(h.real(name))) }

func (h *hostFs) Rename(oldname, newname string) error {
	return h.unmap(h.os.Rename(h.real(oldname), h.real(newname)))
}

func (h *hostFs) Stat(name string) (os.FileInfo, error) {
	fi, err := h.os.Stat(h.real(name))
	return fi, h.unmap(err)
}

func (h *hostFs) Chmod(name string, mode os.FileMode) error {
	return h.unmap(h.os.Chmod(h.real(name), mode))
}

func (h *hostFs) Chown(name string, uid, gid int) error {
	return h.unmap(h.os.Chown(h.real(name), uid, gid))
}

func (h *hostFs) Chtimes(name string, atime, mtime time.Time) error {
	return h.unmap(h.os.Chtimes(h.real(name), atime, mtime))
}

func (h *hostFs) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, ok, err := h.os.(afero.Lstater).LstatIfPossible(h.real(name))
	return fi, ok, h.unmap(err)
}

func (h *hostFs) SymlinkIfPossible(oldname, newname string) error {
	return h.unmap(os.Symlink(oldname, h.real(newname)))
}

func (h *hostFs) ReadlinkIfPossible(name string) (string, error) {
	target, err := os.Readlink(h.real(name))
	return target, h.unmap(err)
}
