//go:build !unix

package layer

import "io/fs"

// deviceNumber returns 0: fi carries no device number here.
func deviceNumber(fs.FileInfo) uint64 { return 0 }
