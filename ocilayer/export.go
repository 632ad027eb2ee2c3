package ocilayer

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/packfs/packfs/layer"
)

// Export writes the upper layer upper as an OCI image layer tar to w:
// whiteout entries ([layer.ModeWhiteout]) become empty ".wh.NAME" files, a
// directory's opaque marker ([layer.OpaqueName]) becomes ".wh..wh..opq"
// right after the directory, and directories, regular files and symlinks
// are written as they are, with their modes and modification times, owned
// by uid and gid 0. Entries come in sorted order, so the output depends only
// on the tree. Any other type of entry, and a name that is not a whiteout
// but starts with ".wh.", gives an error wrapping [ErrInvalid].
// Export does not close w.
func Export(w io.Writer, upper fs.FS) error {
	tw := tar.NewWriter(w)
	if layer.IsOpaque(upper, ".") {
		if err := writeMarker(tw, upper, "."); err != nil {
			return err
		}
	}
	err := fs.WalkDir(upper, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return writeEntry(tw, upper, name, fi)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// header returns a tar header for name with fi's mode and time.
func header(name string, typ byte, fi fs.FileInfo) *tar.Header {
	return &tar.Header{
		Typeflag: typ,
		Name:     name,
		Mode:     int64(fi.Mode().Perm()) | modeBits(fi.Mode()),
		ModTime:  fi.ModTime(),
		Format:   tar.FormatPAX,
	}
}

// modeBits returns the setuid, setgid and sticky bits of m in tar's
// (c_ISUID...) spelling.
func modeBits(m fs.FileMode) int64 {
	var b int64
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

func writeEntry(tw *tar.Writer, upper fs.FS, name string, fi fs.FileInfo) error {
	mode := fi.Mode()
	if !layer.IsWhiteout(mode) && strings.HasPrefix(fi.Name(), layer.WhiteoutPrefix) {
		return &fs.PathError{Op: "export", Path: name, Err: fmt.Errorf("%w: name would read as a whiteout", ErrInvalid)}
	}
	switch {
	case layer.IsWhiteout(mode):
		dir, base := path.Split(name)
		if base == layer.OpaqueName {
			return nil // written after its directory
		}
		h := header(dir+layer.WhiteoutPrefix+base, tar.TypeReg, fi)
		h.Mode = 0o644
		return tw.WriteHeader(h)
	case mode.IsDir():
		if err := tw.WriteHeader(header(name+"/", tar.TypeDir, fi)); err != nil {
			return err
		}
		if layer.IsOpaque(upper, name) {
			return writeMarker(tw, upper, name)
		}
		return nil
	case mode&fs.ModeSymlink != 0:
		target, err := fs.ReadLink(upper, name)
		if err != nil {
			return err
		}
		h := header(name, tar.TypeSymlink, fi)
		h.Linkname = target
		return tw.WriteHeader(h)
	case mode.IsRegular():
		f, err := upper.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		h := header(name, tar.TypeReg, fi)
		h.Size = fi.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if n, err := io.Copy(tw, f); err != nil {
			return fmt.Errorf("ocilayer: %s: %w", name, err)
		} else if n != h.Size {
			return fmt.Errorf("ocilayer: %s: size changed while exporting: %w", name, io.ErrUnexpectedEOF)
		}
		return nil
	}
	return &fs.PathError{Op: "export", Path: name, Err: fmt.Errorf("%w: unsupported file type %v", ErrInvalid, mode.Type())}
}

// writeMarker writes the opaque marker of dir.
func writeMarker(tw *tar.Writer, upper fs.FS, dir string) error {
	name := path.Join(dir, layer.OpaqueName)
	fi, err := fs.Lstat(upper, name)
	if err != nil {
		return err
	}
	h := header(name, tar.TypeReg, fi)
	h.Mode = 0o644
	return tw.WriteHeader(h)
}
