package layer

import (
	"io/fs"
	"path"
	"strings"
)

// ModeWhiteout is the type of a whiteout entry: a character device, the way
// Linux overlayfs stores a whiteout (a 0/0 character device). A regular file,
// directory or symlink is never a whiteout, whatever its name.
const ModeWhiteout = fs.ModeDevice | fs.ModeCharDevice

// OpaqueName is the name of the whiteout that marks its directory opaque:
// nothing of the same directory in lower layers shows through. It is the OCI
// image specification's spelling.
const OpaqueName = ".wh..wh..opq"

// WhiteoutPrefix is the OCI image specification's prefix for whiteout files:
// a layer tar's ".wh.name" hides "name" of the layers below.
const WhiteoutPrefix = ".wh."

// IsWhiteout reports whether mode is the mode of a whiteout entry.
func IsWhiteout(mode fs.FileMode) bool {
	return mode.Type() == ModeWhiteout
}

// IsOpaque reports whether the directory dir of fsys is marked opaque: it
// holds a whiteout named [OpaqueName]. A missing dir is not opaque.
func IsOpaque(fsys fs.FS, dir string) bool {
	fi, err := fs.Lstat(fsys, path.Join(dir, OpaqueName))
	return err == nil && IsWhiteout(fi.Mode())
}

// MarkOpaque marks the directory dir of fsys opaque by recording a whiteout
// named [OpaqueName] in it.
func MarkOpaque(fsys fs.FS, dir string) error {
	return Whiteout(fsys, path.Join(dir, OpaqueName))
}

// OCIName translates a name from an OCI layer tar into what it stands for:
// ".wh.x" is a whiteout of "x", ".wh..wh..opq" marks its directory opaque,
// and any other name is itself. It looks at the last element only.
func OCIName(name string) (target string, whiteout, opaque bool) {
	dir, base := path.Split(name)
	switch {
	case base == OpaqueName:
		return strings.TrimSuffix(dir, "/"), false, true
	case strings.HasPrefix(base, WhiteoutPrefix) && len(base) > len(WhiteoutPrefix):
		return dir + base[len(WhiteoutPrefix):], true, false
	}
	return name, false, false
}
