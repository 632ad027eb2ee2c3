package ocilayer

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/packfs/packfs/layer"
)

// maxName is the longest name or link target Import accepts, Linux's
// PATH_MAX. It bounds the work of creating the parents of a name.
const maxName = 4096

// modeMask is the part of a tar mode a layer keeps.
const modeMask = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// Import reads the OCI image layer tar r, plain or gzip-compressed (told
// apart by the gzip magic bytes 1f 8b), and applies it to dst as an upper
// layer: regular files, directories and symlinks are created with their
// modes and modification times, hard links are copied, ".wh.NAME" records a
// whiteout of NAME (replacing what dst held there) and ".wh..wh..opq" marks
// its directory opaque. Missing parent directories are created.
//
// An entry that may not be imported gives an error wrapping [ErrInvalid];
// a damaged archive gives the error of archive/tar or compress/gzip. An
// error leaves in dst what was applied before it.
func Import(r io.Reader, dst layer.FS) error {
	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("ocilayer: %w", err)
		}
		defer zr.Close()
		src = zr
	}
	im := &importer{dst: dst, written: map[string]bool{}, dirs: map[string]*tar.Header{}}
	tr := tar.NewReader(src)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("ocilayer: %w", err)
		}
		if err := im.apply(hdr, tr); err != nil {
			return err
		}
	}
	return im.finish()
}

// importer holds the state of one Import.
type importer struct {
	dst     layer.FS
	written map[string]bool        // names this tar created
	dirs    map[string]*tar.Header // directory entries, for modes and times
}

// invalid returns the error for the entry name that is invalid because of why.
func invalid(name, why string) error {
	return &fs.PathError{Op: "import", Path: name, Err: fmt.Errorf("%w: %s", ErrInvalid, why)}
}

// clean turns a tar name into a layer name: leading slashes dropped,
// cleaned, and "." for the root.
func clean(name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", invalid(name, "NUL byte in name")
	}
	if name == "" {
		return "", invalid(name, "empty name")
	}
	if len(name) > maxName {
		return "", invalid(name[:64]+"...", "name longer than 4096 bytes")
	}
	p := path.Clean("/" + name) // "/" first: ".." cannot climb above it
	if p == "/" {
		return ".", nil
	}
	// Clean("/"+name) turns "../x" into "/x"; reject instead of hiding it.
	if rel := path.Clean(strings.TrimLeft(name, "/")); rel == ".." || strings.HasPrefix(rel, "../") {
		return "", invalid(name, "name escapes the root")
	}
	p = p[1:]
	if !fs.ValidPath(p) {
		return "", invalid(name, "not a valid path")
	}
	return p, nil
}

func (im *importer) apply(hdr *tar.Header, tr *tar.Reader) error {
	name, err := clean(hdr.Name)
	if err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	if dir := path.Dir(name); dir != "." && strings.Contains("/"+dir, "/"+layer.WhiteoutPrefix) {
		return invalid(hdr.Name, "whiteout name used as a directory")
	}
	if name == "." {
		if hdr.Typeflag == tar.TypeDir {
			im.dirs["."] = hdr
			return nil
		}
		return invalid(hdr.Name, "root is not a directory")
	}
	if isSparse(hdr) {
		// archive/tar writes out the holes: a few bytes of tar could
		// make terabytes.
		return invalid(hdr.Name, "sparse file")
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		if target, whiteout, opaque := layer.OCIName(name); opaque {
			return im.opaque(hdr.Name, target, hdr.ModTime)
		} else if whiteout {
			return im.whiteout(hdr.Name, target, hdr.ModTime)
		}
		return im.file(hdr, name, tr)
	case tar.TypeChar:
		if hdr.Devmajor == 0 && hdr.Devminor == 0 {
			return im.whiteout(hdr.Name, name, hdr.ModTime)
		}
		return invalid(hdr.Name, "character device")
	case tar.TypeBlock:
		return invalid(hdr.Name, "block device")
	case tar.TypeFifo:
		return invalid(hdr.Name, "FIFO")
	}
	if _, whiteout, opaque := layer.OCIName(name); whiteout || opaque {
		return invalid(hdr.Name, "whiteout is not a regular file")
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return im.dir(hdr, name)
	case tar.TypeSymlink:
		return im.symlink(hdr, name)
	case tar.TypeLink:
		return im.link(hdr, name)
	}
	return invalid(hdr.Name, fmt.Sprintf("unsupported entry type %q", hdr.Typeflag))
}

// parent makes sure the directory dir exists, creating what is missing. A
// whiteout on the way is replaced by an opaque directory; a file or symlink
// is an error, so that nothing is written through a symlink.
func (im *importer) parent(entry, dir string) error {
	if dir == "." {
		return nil
	}
	fi, err := fs.Lstat(im.dst, dir)
	if err == nil && fi.IsDir() {
		return nil // the common case: no walk up
	}
	if err := im.parent(entry, path.Dir(dir)); err != nil {
		return err
	}
	fi, err = fs.Lstat(im.dst, dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil && layer.IsWhiteout(fi.Mode()):
		return im.mkdirOver(dir)
	case err == nil:
		return invalid(entry, "parent "+dir+" is not a directory")
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := layer.Mkdir(im.dst, dir, 0o755); err != nil {
		return err
	}
	im.written[dir] = true
	return nil
}

// mkdirOver replaces the whiteout at dir by an opaque directory: the lower
// directory stays deleted.
func (im *importer) mkdirOver(dir string) error {
	if err := layer.Remove(im.dst, dir); err != nil {
		return err
	}
	if err := layer.Mkdir(im.dst, dir, 0o755); err != nil {
		return err
	}
	im.written[dir] = true
	return layer.MarkOpaque(im.dst, dir)
}

// clear removes what dst holds at name before a non-directory replaces it.
func (im *importer) clear(name string) error {
	fi, err := fs.Lstat(im.dst, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return layer.RemoveAll(im.dst, name)
	}
	return layer.Remove(im.dst, name)
}

func (im *importer) file(hdr *tar.Header, name string, r io.Reader) error {
	if err := im.parent(hdr.Name, path.Dir(name)); err != nil {
		return err
	}
	if err := im.clear(name); err != nil {
		return err
	}
	mode := hdr.FileInfo().Mode() & modeMask
	f, err := layer.OpenFile(im.dst, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
	if err != nil {
		return err
	}
	im.written[name] = true
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ocilayer: %s: %w", hdr.Name, err)
	}
	return im.attrs(name, mode, hdr.ModTime)
}

// isSparse reports whether hdr is a GNU sparse file, old or PAX format.
func isSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// attrs sets the mode and modification time of name.
func (im *importer) attrs(name string, mode fs.FileMode, mtime time.Time) error {
	if err := layer.Chmod(im.dst, name, mode); err != nil {
		return err
	}
	if mtime.IsZero() {
		return nil
	}
	return layer.Chtimes(im.dst, name, time.Time{}, mtime)
}

func (im *importer) dir(hdr *tar.Header, name string) error {
	if err := im.parent(hdr.Name, path.Dir(name)); err != nil {
		return err
	}
	fi, err := fs.Lstat(im.dst, name)
	switch {
	case err == nil && fi.IsDir():
	case err == nil && layer.IsWhiteout(fi.Mode()):
		if err := im.mkdirOver(name); err != nil {
			return err
		}
	case err == nil:
		if err := layer.Remove(im.dst, name); err != nil {
			return err
		}
		fallthrough
	case errors.Is(err, fs.ErrNotExist):
		if err := layer.Mkdir(im.dst, name, 0o755); err != nil {
			return err
		}
	default:
		return err
	}
	im.written[name] = true
	im.dirs[name] = hdr
	return nil
}

func (im *importer) symlink(hdr *tar.Header, name string) error {
	if strings.IndexByte(hdr.Linkname, 0) >= 0 || hdr.Linkname == "" || len(hdr.Linkname) > maxName {
		return invalid(hdr.Name, "invalid symlink target")
	}
	if err := im.parent(hdr.Name, path.Dir(name)); err != nil {
		return err
	}
	if err := im.clear(name); err != nil {
		return err
	}
	if err := layer.Symlink(im.dst, hdr.Linkname, name); err != nil {
		return err
	}
	im.written[name] = true
	return nil
}

// link copies the regular file a hard link names.
func (im *importer) link(hdr *tar.Header, name string) error {
	target, err := clean(hdr.Linkname)
	if err != nil {
		return invalid(hdr.Name, "invalid link target "+hdr.Linkname)
	}
	if target == name {
		return invalid(hdr.Name, "link to itself")
	}
	fi, err := fs.Lstat(im.dst, target)
	if err != nil || !fi.Mode().IsRegular() {
		return invalid(hdr.Name, "link target "+hdr.Linkname+" is not a regular file")
	}
	src, err := im.dst.Open(target)
	if err != nil {
		return err
	}
	defer src.Close()
	mode := fi.Mode() & modeMask
	mtime := fi.ModTime()
	if err := im.file(&tar.Header{Name: hdr.Name, Mode: int64(mode.Perm())}, name, src); err != nil {
		return err
	}
	return im.attrs(name, mode, mtime)
}

func (im *importer) whiteout(entry, name string, mtime time.Time) error {
	if base := path.Base(name); base == "." || base == ".." || !fs.ValidPath(name) || name == "." {
		return invalid(entry, "invalid whiteout")
	}
	if strings.HasPrefix(path.Base(name), layer.WhiteoutPrefix) {
		return nil // a reserved aufs name (.wh..wh.plnk and the like)
	}
	if err := im.parent(entry, path.Dir(name)); err != nil {
		return err
	}
	fi, err := fs.Lstat(im.dst, name)
	if err == nil && im.written[name] {
		// Whiteouts apply to the lower layers only: this tar's entry
		// stays, and a directory hides the lower one's contents.
		if fi.IsDir() {
			return im.opaque(entry, name, mtime)
		}
		return nil
	}
	if err == nil && fi.IsDir() {
		if err := layer.RemoveAll(im.dst, name); err != nil {
			return err
		}
	}
	if err := layer.Whiteout(im.dst, name); err != nil {
		return err
	}
	if !mtime.IsZero() {
		return layer.Chtimes(im.dst, name, time.Time{}, mtime)
	}
	return nil
}

// opaque marks dir opaque, removing what dst held in it that this tar did
// not create.
func (im *importer) opaque(entry, dir string, mtime time.Time) error {
	if dir == "" {
		dir = "."
	}
	if dir != "." {
		if err := im.parent(entry, dir); err != nil {
			return err
		}
	}
	entries, err := fs.ReadDir(im.dst, dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := path.Join(dir, e.Name())
		if e.Name() == layer.OpaqueName || im.written[name] {
			continue
		}
		if err := layer.RemoveAll(im.dst, name); err != nil {
			return err
		}
	}
	if !layer.IsOpaque(im.dst, dir) {
		if err := layer.MarkOpaque(im.dst, dir); err != nil {
			return err
		}
	}
	if mtime.IsZero() {
		return nil
	}
	return layer.Chtimes(im.dst, path.Join(dir, layer.OpaqueName), time.Time{}, mtime)
}

// finish sets the modes and times of the directories, now that nothing
// more is created in them.
func (im *importer) finish() error {
	names := make([]string, 0, len(im.dirs))
	for name := range im.dirs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		hdr := im.dirs[name]
		fi, err := fs.Lstat(im.dst, name)
		if err != nil || !fi.IsDir() {
			continue // replaced by a later entry
		}
		if err := im.attrs(name, hdr.FileInfo().Mode()&modeMask, hdr.ModTime); err != nil {
			return err
		}
	}
	return nil
}
