package packfs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/dirfs"
	"github.com/packfs/packfs/internal/testsize"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/layer/mem"
	"golang.org/x/sys/unix"
)

// hostDir returns a new directory of the host for a lower layer, on
// /dev/shm when it is writable, removed when t ends.
func hostDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "packfs-lower-")
	if err != nil {
		dir, err = os.MkdirTemp(t.TempDir(), "lower-")
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// copyToHost writes the tree of src into the empty host directory dst,
// with modes, modification times and symlink targets, the root's
// attributes included.
func copyToHost(src fs.FS, dst string) error {
	type dirAttrs struct {
		host string
		fi   fs.FileInfo
	}
	var dirs []dirAttrs
	err := fs.WalkDir(src, ".", func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := fs.Lstat(src, p)
		if err != nil {
			return err
		}
		host := filepath.Join(dst, filepath.FromSlash(p))
		mode := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		mtime := fi.ModTime()
		switch fi.Mode().Type() {
		case fs.ModeDir:
			if p != "." {
				if err := os.Mkdir(host, 0o700); err != nil {
					return err
				}
			}
			dirs = append(dirs, dirAttrs{host, fi})
			return nil
		case fs.ModeSymlink:
			target, err := fs.ReadLink(src, p)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, host); err != nil {
				return err
			}
			if err := hostOwner(host, fi); err != nil {
				return err
			}
			ts := []unix.Timespec{unix.NsecToTimespec(mtime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
			return unix.UtimesNanoAt(unix.AT_FDCWD, host, ts, unix.AT_SYMLINK_NOFOLLOW)
		case 0:
			data, err := fs.ReadFile(src, p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(host, data, 0o600); err != nil {
				return err
			}
			if err := hostOwner(host, fi); err != nil {
				return err
			}
			if err := os.Chmod(host, mode); err != nil {
				return err
			}
			return os.Chtimes(host, mtime, mtime)
		}
		return fmt.Errorf("%s: cannot copy a %v", p, fi.Mode().Type())
	})
	if err != nil {
		return err
	}
	// Directories last, deepest first: filling one changes its mtime.
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		mode := d.fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if err := hostOwner(d.host, d.fi); err != nil {
			return err
		}
		if err := os.Chmod(d.host, mode); err != nil {
			return err
		}
		if err := os.Chtimes(d.host, d.fi.ModTime(), d.fi.ModTime()); err != nil {
			return err
		}
	}
	return nil
}

// hostOwner gives the host file name, not followed, the owner fi
// records, if any and if this process may.
func hostOwner(name string, fi fs.FileInfo) error {
	uid, gid, ok := layer.OwnerOf(fi)
	if !ok || os.Getuid() != 0 {
		return nil
	}
	id := func(v uint32) int {
		if v == layer.NoOwner {
			return -1
		}
		return int(v)
	}
	return os.Lchown(name, id(uid), id(gid))
}

// hostSettling is a union of mem over one delta pack over a read-only
// dirfs whose host directory is filled before it is used. Settle moves the
// whole state down: the lowers (the pack over the dirfs) are flattened
// into a new host directory, which becomes the new read-only dirfs, and
// the upper layer, whiteouts and opaque markers included, becomes the new
// delta pack above it. From the second Settle of a sequence on, all three
// layers hold part of the tree: the pack's whiteouts and opaque
// directories hide what the dirfs holds, and the operations that follow
// copy up from both.
type hostSettling struct {
	*packfs.FS
	t     *testing.T
	upper *mem.FS
	pack  fs.FS
	dir   *dirfs.FS
}

// newHostSettling returns the stack with an empty pack and an empty host
// directory below a fresh upper layer.
func newHostSettling(t *testing.T) *hostSettling {
	s := &hostSettling{t: t, upper: mem.New(), pack: packOf(t, mem.New().Snapshot())}
	d, err := dirfs.New(hostDir(t), dirfs.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s.dir = d
	s.FS = packfs.New(s.upper, s.pack, s.dir)
	return s
}

// hostSettles counts the Settle calls that left content in both the pack
// and the host directory.
var hostSettles atomic.Int64

func (s *hostSettling) Settle() error {
	host := hostDir(s.t)
	if err := copyToHost(packfs.New(nil, s.pack, s.dir), host); err != nil {
		return err
	}
	d, err := dirfs.New(host, dirfs.ReadOnly())
	if err != nil {
		return err
	}
	s.t.Cleanup(func() { d.Close() })
	pack, err := packBytes(s.upper.Snapshot())
	if err != nil {
		return err
	}
	upper, err := upperOver(s.upper)
	if err != nil {
		return err
	}
	old := s.dir
	s.upper, s.pack, s.dir = upper, pack, d
	s.FS = packfs.New(s.upper, s.pack, s.dir)
	if err := old.Close(); err != nil {
		return err
	}
	if nonEmpty(pack) && nonEmpty(d) {
		hostSettles.Add(1)
	}
	return nil
}

// nonEmpty reports whether the root of fsys lists anything.
func nonEmpty(fsys fs.FS) bool {
	list, err := fs.ReadDir(fsys, ".")
	return err == nil && len(list) > 0
}

// TestConformanceOverPackOverDirfs runs the suite on mem over a delta pack
// over a read-only dirfs, which the differential test's Settle refills.
func TestConformanceOverPackOverDirfs(t *testing.T) {
	opts := []conformance.Option{conformance.WithOwners()}
	if raceEnabled {
		opts = append(opts, conformance.WithSeeds(100), conformance.WithQuickTrees())
	}
	before := hostSettles.Load()
	conformance.Run(t, func(t *testing.T) layer.FS { return newHostSettling(t) }, opts...)
	settled := hostSettles.Load() - before
	t.Logf("%d settles left content in both the pack and the host directory", settled)
	if settled == 0 && !testsize.Short() {
		t.Error("the differential test never filled both lowers")
	}
}
