//go:build !linux

package dirfs

import (
	"errors"
	"io/fs"
	"os"
)

// Off Linux there is no openat2: every FS uses os.Root.

var errNoOpenat2 = errors.New("dirfs: openat2 unavailable")

func newAt(string, *FS) (impl, error) { return nil, errNoOpenat2 }

const oDirectory = 0

// sameFile reports whether two results of os.Root's stat describe the same
// file.
func sameFile(a, b fs.FileInfo) bool { return os.SameFile(a, b) }
