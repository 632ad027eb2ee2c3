//go:build !linux

package packwriter

import "io/fs"

const (
	seekData = 3
	seekHole = 4
)

// dataSeeker finds holes on Linux only; elsewhere runs of zeros become
// holes as they are read.
func dataSeeker(fs.File) (func(off int64, whence int) (int64, error), bool) { return nil, false }
