//go:build !unix

package packwriter

import "github.com/packfs/packfs/internal/packformat"

func hostOwner(any) (packformat.Attr, srcInode, bool) { return packformat.Attr{}, srcInode{}, false }
