//go:build !unix

package conformance

import (
	"errors"
	"io/fs"
	"time"
)

func setUmask(int) int { return 0 }

func lchtimes(name string, atime, mtime time.Time) error {
	return &fs.PathError{Op: "lchtimes", Path: name, Err: errors.ErrUnsupported}
}
