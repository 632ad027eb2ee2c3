package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

func packFlags(fl *flag.FlagSet) {
	fl.Bool("strict", false, "stop at the first entry that cannot be packed (default: warn, skip it, finish, exit 1)")
}

func cmdPack(fl *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	dir, out := args[0], args[1]
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	dst, err := packOutput(out, stdout)
	if err != nil {
		return err
	}
	src := os.DirFS(dir)
	opts := []packwriter.Option{packwriter.WithFilter(dst.exclude)}
	skipped := 0
	if !flagBool(fl, "strict") {
		opts = append(opts, packwriter.WithSkip(func(p string, err error) error {
			skipped++
			fmt.Fprintf(stderr, "packfs pack: skipping %v\n", hostPathError(err, dir))
			return nil
		}))
	}
	if bar := newBar(stderr, "packing", func() int64 { return countEntries(src) }); bar != nil {
		opts = append(opts, packwriter.WithProgress(func(p packwriter.Progress) { bar.Set64(int64(p.Entries)) }))
		defer bar.Finish()
	}
	if err := dst.write(src, opts); err != nil {
		return hostPathError(err, dir)
	}
	if skipped > 0 {
		return fmt.Errorf("%d entries could not be packed and were left out; %s holds the rest", skipped, out)
	}
	return nil
}

// hostPathError names the source entry of err by its host path.
func hostPathError(err error, dir string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && fs.ValidPath(pe.Path) {
		return &fs.PathError{Op: pe.Op, Path: filepath.Join(dir, filepath.FromSlash(pe.Path)), Err: pe.Err}
	}
	return err
}

// output is where pack writes: a regular file replaced atomically (through
// a symlink to one, the file it names), or a stream (standard output for
// "-", a FIFO).
type output struct {
	path   string    // the regular file to replace, or ""
	stream io.Writer // else the stream
	// self is what must not be packed: the output and its temporary file
	// when they lie inside the source.
	self []os.FileInfo
	dir  string // the output's directory, for temporary files
}

// packOutput checks what OUT names and refuses what a pack must not
// replace: a device, a directory, a socket.
func packOutput(out string, stdout io.Writer) (*output, error) {
	if out == "-" {
		if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return nil, errors.New("refusing to write a pack to a terminal; redirect standard output or name a file")
		}
		return &output{stream: stdout}, nil
	}
	fi, err := os.Stat(out) // through symlinks: their target is what is written
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if lfi, lerr := os.Lstat(out); lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: a symlink to nothing; name the file to write", out)
		}
		return &output{path: out, dir: filepath.Dir(out)}, nil
	case err != nil:
		return nil, err
	}
	switch t := fi.Mode().Type(); {
	case t == 0:
		real, err := filepath.EvalSymlinks(out)
		if err != nil {
			return nil, err
		}
		return &output{path: real, dir: filepath.Dir(real), self: []os.FileInfo{fi}}, nil
	case t&fs.ModeNamedPipe != 0:
		f, err := os.OpenFile(out, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &output{stream: f}, nil
	case t == fs.ModeDir:
		return nil, fmt.Errorf("%s: is a directory; name the pack file to write", out)
	default:
		return nil, fmt.Errorf("%s: is %s, not a regular file; a pack replaces only a regular file (use - for standard output)", out, fileKind(fi.Mode()))
	}
}

// exclude is packwriter's filter: it leaves the output itself out.
func (o *output) exclude(p string, fi fs.FileInfo) bool {
	for _, s := range o.self {
		if os.SameFile(s, fi) {
			return false
		}
	}
	if o.path != "" && fi.Mode().IsRegular() && strings.HasPrefix(fi.Name(), "."+filepath.Base(o.path)+".tmp") {
		// The temporary file, if it lies inside the source.
		if tfi, err := os.Stat(filepath.Join(o.dir, fi.Name())); err == nil && os.SameFile(tfi, fi) {
			return false
		}
	}
	return true
}

func (o *output) write(src fs.FS, opts []packwriter.Option) error {
	if o.path != "" {
		return packwriter.WriteFile(o.path, src, opts...)
	}
	err := packwriter.Write(o.stream, src, opts...)
	if c, ok := o.stream.(io.Closer); ok && o.stream != io.Writer(os.Stdout) {
		err = errors.Join(err, c.Close())
	}
	return err
}

// fileKind names a file type as people do.
func fileKind(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeSymlink != 0:
		return "a symlink"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t == 0:
		return "a regular file"
	}
	return "a file of type " + mode.Type().String()
}

// flagBool returns the value of fl's boolean flag name.
func flagBool(fl *flag.FlagSet, name string) bool {
	return fl.Lookup(name).Value.(flag.Getter).Get().(bool)
}

// packPath turns a path given for a pack entry ("net/", "./net", "/net",
// "net//http", "") into the io/fs path it names.
func packPath(p string) (string, error) {
	c := path.Clean("/" + p)[1:]
	if c == "" {
		return ".", nil
	}
	if !fs.ValidPath(c) {
		return "", fmt.Errorf("%q: not a path inside a pack", p)
	}
	return c, nil
}

// countEntries counts the entries of fsys, for the progress bar's total.
func countEntries(fsys fs.FS) int64 {
	var n int64
	_ = fs.WalkDir(fsys, ".", func(string, fs.DirEntry, error) error { n++; return nil })
	return n
}

func cmdUnpack(_ *flag.FlagSet, args []string, _, stderr io.Writer) error {
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	var progress func()
	if bar := newBar(stderr, "unpacking", func() int64 {
		st, _ := r.Stats()
		return int64(st.Entries)
	}); bar != nil {
		progress = func() { bar.Add(1) }
		defer bar.Finish()
	}
	return unpack(r, args[1], progress, func(err error) { fmt.Fprintf(stderr, "packfs unpack: %v\n", err) })
}

func lsFlags(fl *flag.FlagSet) {
	fl.Bool("l", false, "long listing: mode, size, modification time (local, with its zone), name, symlink target")
}

func cmdLs(fl *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	longList := flagBool(fl, "l")
	p := "."
	if len(args) > 1 {
		var err error
		if p, err = packPath(args[1]); err != nil {
			return err
		}
	}
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	fi, err := r.Stat(p)
	if err != nil {
		return err
	}
	var infos []fs.FileInfo
	var dir string
	if fi.IsDir() {
		ents, err := r.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range ents {
			info, err := e.Info()
			if err != nil {
				return err
			}
			infos = append(infos, info)
		}
		dir = p
	} else {
		lfi, err := r.Lstat(p)
		if err != nil {
			return err
		}
		infos = append(infos, lfi)
		dir = ""
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 1, ' ', tabwriter.AlignRight)
	for _, info := range infos {
		name := info.Name()
		if dir == "" {
			name = p
		}
		if !longList {
			fmt.Fprintln(stdout, name)
			continue
		}
		line := fmt.Sprintf("%s\t%d\t %s %s", lsMode(info.Mode()), info.Size(), info.ModTime().Local().Format("2006-01-02 15:04:05 MST"), name)
		if info.Mode()&fs.ModeSymlink != 0 {
			target := name
			if dir != "" {
				target = dir + "/" + name
				if dir == "." {
					target = name
				}
			}
			if t, err := r.ReadLink(target); err == nil {
				line += " -> " + t
			}
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func cmdCat(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	p, err := packPath(args[1])
	if err != nil {
		return err
	}
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := r.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.(io.WriterTo).WriteTo(stdout)
	return err
}

func cmdVerify(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.Verify(); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	st, err := r.Stats()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok, %d entries, %d bytes of content verified\n", args[0], st.Entries, st.Stored)
	return nil
}

func cmdInfo(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	r, err := packreader.Open(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.Stats()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 1, ' ', 0)
	fmt.Fprintf(tw, "entries:\t%d (%d files, %d directories, %d symlinks, %d whiteouts)\n", st.Entries, st.Files, st.Dirs, st.Symlinks, st.Whiteouts)
	fmt.Fprintf(tw, "contents:\t%d distinct\n", st.Contents)
	fmt.Fprintf(tw, "file bytes:\t%d\n", st.Logical)
	fmt.Fprintf(tw, "stored bytes:\t%d (data region, with alignment)\n", st.Stored)
	saved := st.Saved()
	pct := 0.0
	if st.Logical > 0 {
		pct = 100 * float64(saved) / float64(st.Logical)
	}
	fmt.Fprintf(tw, "dedup savings:\t%d bytes (%.1f%%)\n", saved, pct)
	fmt.Fprintf(tw, "pack size:\t%d\n", st.Size)
	return tw.Flush()
}

// lsMode spells mode as ls -l does: "-rw-r--r--", "lrwxrwxrwx",
// "drwxr-sr-x", "crw-rw-rw-" (fs.FileMode.String spells types its own way).
func lsMode(mode fs.FileMode) string {
	b := []byte("----------")
	switch t := mode.Type(); {
	case t&fs.ModeDir != 0:
		b[0] = 'd'
	case t&fs.ModeSymlink != 0:
		b[0] = 'l'
	case t&fs.ModeNamedPipe != 0:
		b[0] = 'p'
	case t&fs.ModeSocket != 0:
		b[0] = 's'
	case t&fs.ModeCharDevice != 0:
		b[0] = 'c'
	case t&fs.ModeDevice != 0:
		b[0] = 'b'
	}
	const rwx = "rwxrwxrwx"
	for i := range 9 {
		if mode&(1<<(8-i)) != 0 {
			b[1+i] = rwx[i]
		}
	}
	special := func(i int, set bool, on, off byte) {
		if set {
			if b[i] == 'x' {
				b[i] = on
			} else {
				b[i] = off
			}
		}
	}
	special(3, mode&fs.ModeSetuid != 0, 's', 'S')
	special(6, mode&fs.ModeSetgid != 0, 's', 'S')
	special(9, mode&fs.ModeSticky != 0, 't', 'T')
	return string(b)
}
