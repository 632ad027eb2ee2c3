//go:build !unix

package layer

import "io/fs"

// deviceNumber returns 0: fi carries no device number here.
func deviceNumber(fs.FileInfo) uint64 { return 0 }

// hostOwner returns no owner: host files carry none here.
func hostOwner(fs.FileInfo) (uid, gid uint32, ok bool) { return NoOwner, NoOwner, false }
