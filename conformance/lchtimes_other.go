//go:build !linux

package conformance

import (
	"errors"
	"io/fs"
	"time"
)

// lchtimes is unsupported here: the differential test runs on Linux only.
func lchtimes(name string, atime, mtime time.Time) error {
	return &fs.PathError{Op: "lchtimes", Path: name, Err: errors.ErrUnsupported}
}
