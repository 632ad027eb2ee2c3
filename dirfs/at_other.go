//go:build !linux

package dirfs

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// Off Linux there is no openat2: every FS uses os.Root.

var errNoOpenat2 = errors.New("dirfs: openat2 unavailable")

func newAt(string, *FS, options) (impl, error) { return nil, errNoOpenat2 }

const oDirectory = 0

const oNofollow = 0

// sameFile reports whether two results of os.Root's stat describe the same
// file.
func sameFile(a, b fs.FileInfo) bool { return os.SameFile(a, b) }

// statAt has no descriptor-relative lstat to use off Linux: the entries of
// an open directory lstat themselves by name.
func (f *file) statAt(string) (fs.FileInfo, bool, error) { return nil, false, nil }

// removed reports false: where the tree is reached through os.Root, a
// removed directory's listing ends as its last batch did.
func removed(*os.File) bool { return false }

// lchtimesAt cannot set a symlink's own times here.
func lchtimesAt(*os.File, string, time.Time, time.Time) error { return errors.ErrUnsupported }
