package layer

import (
	"io"
	"io/fs"
	"slices"
	"strings"
)

// SortedEntries returns infos, sorted by name, as directory entries: the
// listing a directory handle pages through (see [NextBatch]).
func SortedEntries(infos []fs.FileInfo) []fs.DirEntry {
	slices.SortFunc(infos, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	list := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		list[i] = fs.FileInfoToDirEntry(fi)
	}
	return list
}

// NextBatch takes the answer to a handle's ReadDir(n) from rest, the
// sorted entries it has not returned yet, as [fs.ReadDirFile] specifies:
// at most n of them, and io.EOF when n > 0 and none are left; for n <= 0
// all that are left, an empty slice (not nil) when there are none, as os
// gives. Every backend lists a directory this way: sorted, in batches
// of one listing read at the first call.
func NextBatch(rest *[]fs.DirEntry, n int) ([]fs.DirEntry, error) {
	k := len(*rest)
	if n > 0 {
		if k == 0 {
			return nil, io.EOF
		}
		k = min(k, n)
	}
	list := (*rest)[:k:k]
	if *rest = (*rest)[k:]; len(*rest) == 0 {
		*rest = nil // let the listing go
	}
	if list == nil {
		list = []fs.DirEntry{}
	}
	return list, nil
}
