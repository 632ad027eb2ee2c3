package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/remote"
)

func packFlags(fl *flag.FlagSet) {
	fl.Bool("strict", false, "stop at the first entry that cannot be packed (default: warn, skip it, finish, exit 1)")
	fl.Var(new(patterns), "exclude", "leave out entries whose name or path matches `PATTERN` (path.Match syntax; repeatable); a directory goes with its subtree")
	fl.Bool("q", false, "quiet: do not name each entry left out (the summary and the exit status still tell)")
	fl.Bool("v", false, "verbose: name each entry on standard error as it is packed")
	fl.Var(new(compression), "compress", "compress contents: `zstd[:LEVEL]` (LEVEL 1 to 22, default 3)")
}

// compression is the -compress flag: a zstd level, 0 for none.
type compression int

func (c *compression) String() string {
	if *c == 0 {
		return ""
	}
	return fmt.Sprintf("zstd:%d", int(*c))
}

func (c *compression) Set(s string) error {
	algo, level, hasLevel := strings.Cut(s, ":")
	if algo != "zstd" {
		return fmt.Errorf("unknown compression %q (zstd[:LEVEL] is known)", algo)
	}
	*c = 3
	if hasLevel {
		n, err := strconv.Atoi(level)
		if err != nil || n < 1 || n > 22 {
			return fmt.Errorf("zstd level %q: want 1 to 22", level)
		}
		*c = compression(n)
	}
	return nil
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
	excl := fl.Lookup("exclude").Value.(*patterns)
	src := packSource(dir)
	defer src.Close()
	opts := []packwriter.Option{packwriter.WithFilter(func(p string, fi fs.FileInfo) bool {
		return dst.exclude(p, fi) && !excl.match(p)
	}), packwriter.WithCompression(int(*fl.Lookup("compress").Value.(*compression)))}
	skipped := 0
	if !flagBool(fl, "strict") {
		quiet := flagBool(fl, "q")
		opts = append(opts, packwriter.WithSkip(func(p string, err error) error {
			if skipped++; !quiet {
				fmt.Fprintf(stderr, "packfs pack: skipping %s\n", printable(hostPathError(err, dir).Error()))
			}
			return nil
		}))
	}
	verbose := flagBool(fl, "v")
	bar := newBar(stderr, "packing", func() int64 { return treeBytes(src) })
	if bar != nil || verbose {
		opts = append(opts, packwriter.WithProgress(func(p packwriter.Progress) {
			if verbose {
				fmt.Fprintln(stderr, p.Path)
			}
			if bar != nil {
				bar.Set64(p.Bytes)
			}
		}))
	}
	err = dst.write(src, opts)
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && dst.path != "" && pe.Path == dst.path {
			return err // the output's own error, named as given
		}
		return hostPathError(err, dir)
	}
	if skipped > 0 {
		return fmt.Errorf("%s could not be packed and left out; %s holds the rest", plural(skipped, "entry", "entries"), out)
	}
	return nil
}

// patterns is a repeatable flag of path.Match patterns.
type patterns []string

func (p *patterns) String() string { return strings.Join(*p, ",") }

func (p *patterns) Set(s string) error {
	if _, err := path.Match(s, ""); err != nil {
		return fmt.Errorf("bad pattern %q: %w", s, err)
	}
	*p = append(*p, s)
	return nil
}

// match reports whether the io/fs path name, or its last element,
// matches a pattern, as tar's --exclude does.
func (p *patterns) match(name string) bool {
	base := path.Base(name)
	for _, pat := range *p {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
		if ok, _ := path.Match(pat, base); ok {
			return true
		}
	}
	return false
}

// hostPathError names the source entry of err by its host path, and says
// in plain words that a file changed while it was read.
func hostPathError(err error, dir string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && fs.ValidPath(pe.Path) {
		e := pe.Err
		if errors.Is(e, packwriter.ErrChanged) {
			e = errChanged{}
		}
		return &fs.PathError{Op: pe.Op, Path: filepath.Join(dir, filepath.FromSlash(pe.Path)), Err: e}
	}
	return err
}

// errChanged is packwriter.ErrChanged as a user reads it, without the
// package's prefix.
type errChanged struct{}

func (errChanged) Error() string { return "file changed as it was read" }
func (errChanged) Unwrap() error { return packwriter.ErrChanged }

// plural returns n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
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
	url  string // else a bucket URL to upload to
}

// errTerminal refuses "-" as the output when standard output is a
// terminal, which a pack's bytes would only garble.
var errTerminal = errors.New("refusing to write a pack to a terminal; redirect standard output or name a file")

// packOutput checks what OUT names and refuses what a pack must not
// replace: a device, a directory, a socket.
func packOutput(out string, stdout io.Writer) (*output, error) {
	if remote.IsURL(out) {
		return &output{url: out}, nil
	}
	if out == "-" {
		if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return nil, errTerminal
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
		return nil, fmt.Errorf("%s: is a %s, not a regular file; a pack replaces only a regular file (use - for standard output)", out, entryKindName(fi))
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
	if o.url != "" {
		return uploadPack(o.url, src, opts)
	}
	if o.path != "" {
		return packwriter.WriteFile(o.path, src, opts...)
	}
	err := packwriter.Write(o.stream, src, opts...)
	if c, ok := o.stream.(io.Closer); ok && o.stream != io.Writer(os.Stdout) {
		err = errors.Join(err, c.Close())
	}
	return err
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

// needDir is the error for the path arg given with a trailing slash
// ("b.txt/") when it names an entry of fsys that is not a directory
// (through symlinks): ENOTDIR, as the kernel says; nil otherwise.
func needDir(fsys fs.FS, arg, p string) error {
	if !strings.HasSuffix(arg, "/") && !strings.HasSuffix(arg, "/.") {
		return nil
	}
	fi, err := fs.Stat(fsys, p)
	if err != nil || fi.IsDir() {
		return nil // the command reports what is missing itself
	}
	return &fs.PathError{Op: "stat", Path: arg, Err: syscall.ENOTDIR}
}

// treeBytes adds up the sizes of fsys's regular files, for the progress
// bar's total.
func treeBytes(fsys fs.FS) int64 {
	var n int64
	_ = fs.WalkDir(fsys, ".", func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func unpackFlags(fl *flag.FlagSet) {
	fl.Bool("force", false, "replace files already in DIR (directories always merge)")
	fl.Var(new(patterns), "exclude", "leave out entries whose name or path matches `PATTERN` (path.Match syntax; repeatable)")
	fl.Bool("v", false, "verbose: name each entry on standard output as it is extracted")
	fl.Bool("numeric-owner", false, "as root, give entries the pack's uids and gids even where the pack names owners this machine knows by other ids")
}

func cmdUnpack(fl *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	r, err := openPack(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	o := unpackOptions{
		force:   flagBool(fl, "force"),
		numeric: flagBool(fl, "numeric-owner"),
		exclude: *fl.Lookup("exclude").Value.(*patterns),
		bad:     func(err error) { fmt.Fprintf(stderr, "packfs unpack: %s\n", printable(err.Error())) },
	}
	for _, a := range args[2:] {
		p, err := packPath(a)
		if err == nil {
			err = needDir(r, a, p)
		}
		if err != nil {
			return err
		}
		o.paths = append(o.paths, p)
	}
	verbose := flagBool(fl, "v")
	bar := newBar(stderr, "unpacking", func() int64 {
		st, _ := r.Stats()
		return int64(st.Logical)
	})
	if bar != nil || verbose {
		o.progress = func(p string, size int64) {
			if verbose {
				fmt.Fprintln(stdout, p)
			}
			if bar != nil {
				bar.Add64(size)
			}
		}
	}
	err = unpack(r, args[1], o)
	if bar != nil {
		bar.Finish()
	}
	return err
}

func cmdCat(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	p, err := packPath(args[1])
	if err != nil {
		return err
	}
	r, err := openPack(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	if err := needDir(r, args[1], p); err != nil {
		return err
	}
	f, err := r.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.(io.WriterTo).WriteTo(stdout)
	return err
}

func cmdVerify(_ *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	r, err := openPack(args[0])
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

func infoFlags(fl *flag.FlagSet) {
	fl.Bool("json", false, "print the figures as a JSON object")
}

// compressionName says how r's contents are stored.
func compressionName(r interface{ Compressed() bool }) string {
	if r.Compressed() {
		return "zstd"
	}
	return "none"
}

func cmdInfo(fl *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	r, err := openPack(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	st, err := r.Stats()
	if err != nil {
		return err
	}
	saved := st.Saved()
	tables := "raw"
	if r.PackedTables() {
		tables = "packed"
	}
	if flagBool(fl, "json") {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"format": r.Version(), "compression": compressionName(r), "tables": tables,
			"entries": st.Entries, "files": st.Files, "dirs": st.Dirs, "symlinks": st.Symlinks, "whiteouts": st.Whiteouts,
			"contents": st.Contents, "file_bytes": st.Logical, "stored_bytes": st.Stored, "saved_bytes": saved, "pack_bytes": st.Size,
			"frames": st.Frames, "filtered_frames": st.Filtered,
		})
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 1, ' ', 0)
	fmt.Fprintf(tw, "format:\t%d, compression: %s, tables: %s\n", r.Version(), compressionName(r), tables)
	fmt.Fprintf(tw, "entries:\t%d (%d files, %d directories, %d symlinks, %d whiteouts)\n", st.Entries, st.Files, st.Dirs, st.Symlinks, st.Whiteouts)
	if r.Compressed() {
		fmt.Fprintf(tw, "frames:\t%d (%d through the x86-64 branch filter)\n", st.Frames, st.Filtered)
	}
	fmt.Fprintf(tw, "contents:\t%d distinct\n", st.Contents)
	fmt.Fprintf(tw, "file bytes:\t%d\n", st.Logical)
	fmt.Fprintf(tw, "stored bytes:\t%d (data region, with alignment)\n", st.Stored)
	pct := 0.0
	if st.Logical > 0 {
		pct = 100 * float64(saved) / float64(st.Logical)
	}
	fmt.Fprintf(tw, "dedup savings:\t%d bytes (%.1f%%)\n", saved, pct)
	fmt.Fprintf(tw, "pack size:\t%d\n", st.Size)
	return tw.Flush()
}
