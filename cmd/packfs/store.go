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
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/vfs"
)

const storeHelp = "Work on a store directory (packfs.Open): info, checkpoint, flatten, verify, export, import; 'packfs store help' lists them."

// storeSub is one subcommand of packfs store.
type storeSub struct {
	name, args, help string
	nargs            int // positional arguments after the subcommand, the store's included
	optional         int // of which this many may be left out
	run              func(args []string, stdout, stderr io.Writer) error
}

var storeSubs = []storeSub{
	{"info", "DIR", "generation, packs and log size (read-only: runs beside a writer)", 1, 0, storeInfo},
	{"checkpoint", "DIR", "write the log out as a new pack on top of the others", 1, 0, storeCheckpoint},
	{"flatten", "DIR", "write the whole tree as one pack, replacing the others", 1, 0, storeFlatten},
	{"verify", "DIR", "replay the log and check every pack in full (read-only)", 1, 0, storeVerify},
	{"export", "DIR OUT.pack", "write the store's tree as one pack (read-only; OUT '-' is standard output)", 2, 0, storeExport},
	{"import", "DIR SRC [PATH]", "copy the pack or directory SRC into the store at PATH (default: the root); a missing DIR becomes a new store", 3, 1, storeImport},
}

// importForce is the -force option of the running store command.
var importForce bool

func storeFlags(fl *flag.FlagSet) {
	fl.Bool("force", false, "import: replace files and symlinks the store already has (directories merge)")
}

func storeUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: packfs store SUBCOMMAND DIR [ARGS]\n\nsubcommands:\n")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, s := range storeSubs {
		fmt.Fprintf(tw, "  %s %s\t%s\n", s.name, s.args, s.help)
	}
	tw.Flush()
	fmt.Fprintf(w, "\noptions:\n  --force  replace files and symlinks on import (directories merge)\n")
	fmt.Fprintf(w, "\nimport checks every entry before it writes any, then commits in transactions of\n"+
		"up to %d entries or %d MiB (a larger file alone, renamed into place whole): an\n"+
		"import that fails midway keeps the transactions before it. Symlinks keep the\n"+
		"time of the import, as the store sets times through symlinks only.\n", importBatchEntries, importBatchBytes>>20)
}

func cmdStore(fl *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	if args[0] == "help" {
		storeUsage(stdout)
		return nil
	}
	i := slices.IndexFunc(storeSubs, func(s storeSub) bool { return s.name == args[0] })
	if i < 0 {
		storeUsage(stderr)
		return &statusError{code: 2, err: fmt.Errorf("unknown subcommand %q", args[0])}
	}
	sub := storeSubs[i]
	// The command line's parser has taken the options wherever they
	// stood, before or after the subcommand and its arguments.
	importForce = flagBool(fl, "force")
	rest := args[1:]
	if n := len(rest); n < sub.nargs-sub.optional || n > sub.nargs {
		return &statusError{code: 2, err: fmt.Errorf("usage: packfs store %s %s", sub.name, sub.args)}
	}
	return sub.run(rest, stdout, stderr)
}

func storeInfo(args []string, stdout, _ io.Writer) error {
	s, err := openStoreReadOnly(args[0])
	if err != nil {
		return err
	}
	defer s.Close()
	info := s.Info()
	fmt.Fprintf(stdout, "generation: %d\n", info.Generation)
	fmt.Fprintf(stdout, "log:        %d bytes from segment %d\n", info.LogBytes, info.LogSegment)
	fmt.Fprintf(stdout, "packs:      %d, top first\n", len(info.Packs))
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	for _, p := range info.Packs {
		size := "gone (a writer flattened it since)"
		if fi, err := os.Stat(filepath.Join(args[0], p)); err == nil {
			size = fmt.Sprintf("%d bytes", fi.Size())
		}
		fmt.Fprintf(tw, "  %s\t%s\n", p, size)
	}
	return tw.Flush()
}

// openStoreWritable opens a store for a change. With create, a missing
// or empty directory becomes a new store; a directory holding anything
// else is never made one.
func openStoreWritable(dir string, create bool, lowers ...fs.FS) (*packfs.Store, error) {
	if _, err := os.Stat(filepath.Join(dir, storeManifest)); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		ents, err := os.ReadDir(dir)
		if !create || err == nil && len(ents) > 0 || err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: not a store directory (no %s)", dir, storeManifest)
		}
	}
	s, err := packfs.Open(dir, &packfs.Options{Lowers: lowers})
	if errors.Is(err, vfs.ErrLocked) {
		return nil, storeBusy{dir: dir, err: err}
	}
	return s, lowersHint(err)
}

// lowersHint adds to an error wrapping packfs.ErrLowers how such a store
// is opened.
func lowersHint(err error) error {
	if errors.Is(err, packfs.ErrLowers) {
		return fmt.Errorf("%w (a store made by mount --upper opens only over the SOURCE it was made over: packfs mount --upper DIR SOURCE MOUNTPOINT)", err)
	}
	return err
}

// storeBusy says a store's lock is held by another writer, without the
// prefixes of the packages it went through.
type storeBusy struct {
	dir string
	err error
}

func (e storeBusy) Error() string {
	return e.dir + ": the store is open for writing elsewhere (a program or another packfs command); try again once it is closed"
}
func (e storeBusy) Unwrap() error { return e.err }

// storeEmpty reports whether s holds nothing: no checkpoint, no pack, no
// entry. Only such a store may be removed by an import that failed
// after making it; another import may have filled it meanwhile.
func storeEmpty(s *packfs.Store) bool {
	info := s.Info()
	ents, err := fs.ReadDir(s, ".")
	return err == nil && len(ents) == 0 && info.Generation == 0 && len(info.Packs) == 0
}

func storeCheckpoint(args []string, stdout, _ io.Writer) error {
	return storeChange(args[0], stdout, (*packfs.Store).Checkpoint)
}

func storeFlatten(args []string, stdout, _ io.Writer) error {
	return storeChange(args[0], stdout, (*packfs.Store).Flatten)
}

func storeChange(dir string, stdout io.Writer, change func(*packfs.Store) error) error {
	s, err := openStoreWritable(dir, false)
	if err != nil {
		return err
	}
	if err := change(s); err != nil {
		s.Close()
		return err
	}
	info := s.Info()
	if err := s.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: generation %d, %d packs\n", dir, info.Generation, len(info.Packs))
	return nil
}

func storeVerify(args []string, stdout, _ io.Writer) error {
	// Opening replays the log, checking every record's checksum.
	s, err := openStoreReadOnly(args[0])
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Verify(); err != nil {
		return err
	}
	// Reading every file checks that the log's changes and the packs
	// make one tree that reads back whole.
	snap, err := s.Snapshot()
	if err != nil {
		return err
	}
	var entries, bytes int64
	err = fs.WalkDir(snap, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		entries++
		if d.Type().IsRegular() {
			f, err := snap.Open(p)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, f)
			f.Close()
			bytes += n
			if err != nil {
				return &fs.PathError{Op: "read", Path: p, Err: err}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	info := s.Info()
	fmt.Fprintf(stdout, "%s: ok, generation %d, %d packs, %d log bytes, %d entries, %d bytes of files read\n",
		args[0], info.Generation, len(info.Packs), info.LogBytes, entries, bytes)
	return nil
}

func storeExport(args []string, stdout, _ io.Writer) error {
	dir, out := args[0], args[1]
	s, err := openStoreReadOnly(dir)
	if err != nil {
		return err
	}
	defer s.Close()
	snap, err := s.Snapshot()
	if err != nil {
		return err
	}
	return exportPackTo(out, dir, snap, stdout)
}

// exportPackTo writes a pack of fsys to out: "-" streams it to stdout,
// a FIFO is streamed into, a regular file or a new name is written
// atomically (through a symlink, which stays), and anything else is
// refused. So is a name in the store directory dir, which a writer
// would take for a pack of its own left over and remove.
func exportPackTo(out, dir string, fsys fs.FS, stdout io.Writer) error {
	if out == "-" {
		if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return errTerminal
		}
		return packwriter.Write(stdout, fsys)
	}
	fi, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case fi.Mode().Type() == fs.ModeNamedPipe:
		f, err := os.OpenFile(out, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return errors.Join(packwriter.Write(f, fsys), f.Close())
	case !fi.Mode().IsRegular():
		return &fs.PathError{Op: "export", Path: out, Err: fmt.Errorf("is a %s, not a regular file", entryKindName(fi))}
	}
	target, err := followLinks(out)
	if err != nil {
		return err
	}
	pd, err := os.Stat(filepath.Dir(target))
	if err != nil {
		return err
	}
	if sd, err := os.Stat(dir); err == nil && os.SameFile(pd, sd) {
		return &fs.PathError{Op: "export", Path: out, Err: errors.New("is in the store directory: write the pack elsewhere")}
	}
	return packwriter.WriteFile(target, fsys)
}

// followLinks returns the name that name's final symlinks lead to, so
// that a file replaced through a symlink leaves the link in place.
func followLinks(name string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(name)
		if err != nil || fi.Mode().Type() != fs.ModeSymlink {
			return name, nil
		}
		t, err := os.Readlink(name)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(name), t)
		}
		name = t
	}
	return "", &fs.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
}

// Import batches: each batch is one transaction, of at most this many
// entries and about this many bytes of content; a larger file is written
// through a file handle by itself, in chunks, so that memory stays
// bounded whatever the source holds.
const (
	importBatchEntries = 4096
	importBatchBytes   = 16 << 20
)

// importItem is one source entry and where it goes in the store.
type importItem struct {
	src, dst string
	info     fs.FileInfo
	replace  bool // an entry the store has there goes first (--force)
}

func storeImport(args []string, stdout, stderr io.Writer) error {
	dir, srcName := args[0], args[1]
	at := "."
	if len(args) > 2 {
		var err error
		if at, err = storePath(args[2]); err != nil {
			return err
		}
	}
	src, closeSrc, err := openPackOrDir(srcName)
	if err != nil {
		return err
	}
	defer closeSrc()
	// A store this import creates goes again if the import fails.
	ents, rerr := os.ReadDir(dir)
	created := errors.Is(rerr, fs.ErrNotExist) || rerr == nil && len(ents) == 0
	s, err := openStoreWritable(dir, true)
	if err != nil {
		return err
	}
	// Under the store's lock: the directory looked new before it, but
	// another import may have made and filled the store in between.
	created = created && storeEmpty(s)
	items, err := planImport(s, src, srcName, dir, at, stderr)
	if err == nil {
		err = runImport(s, src, items)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if created {
			removeNewStore(dir, rerr == nil)
		}
		return err
	}
	var files, total int64
	for _, it := range items {
		if it.info.Mode().IsRegular() {
			files++
			total += it.info.Size()
		}
	}
	fmt.Fprintf(stdout, "%s: imported %d entries (%d files, %d bytes) at %s\n", dir, len(items), files, total, at)
	return nil
}

// removeNewStore removes the store an import made in dir: dir itself, or
// only what is in it when it existed before, empty.
func removeNewStore(dir string, keepDir bool) {
	if !keepDir {
		os.RemoveAll(dir)
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// storePath turns a path as a user writes it into the store's name for it.
func storePath(p string) (string, error) {
	c := path.Clean("/" + filepath.ToSlash(p))
	name := strings.TrimPrefix(c, "/")
	if name == "" {
		name = "."
	}
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: "import", Path: p, Err: fs.ErrInvalid}
	}
	return name, nil
}

// planImport walks src and checks every entry against the store before
// anything is written: a kind the store cannot hold, or a name the store
// has with another kind (or at all, without --force) fails the import
// as a whole. A host directory's walk skips the store's own directory.
func planImport(s *packfs.Store, src fs.FS, srcName, dir, at string, stderr io.Writer) ([]importItem, error) {
	var items []importItem
	storeDir, _ := os.Stat(dir)
	_, isPack := src.(*packreader.Reader)
	if fi, err := s.Lstat(at); err == nil && !fi.IsDir() {
		return nil, &fs.PathError{Op: "import", Path: at, Err: syscall.ENOTDIR}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if nerr := checkUTF8Name(p); nerr != nil {
			return fmt.Errorf("%s: %w", srcName, nerr)
		}
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !isPack && storeDir != nil && info.IsDir() && os.SameFile(info, storeDir) {
			fmt.Fprintf(stderr, "packfs store import: %s: skipping the store's own directory\n", printable(filepath.Join(srcName, p)))
			return fs.SkipDir
		}
		dst := at
		if p != "." {
			dst = path.Join(at, p)
		}
		m := info.Mode()
		switch t := m.Type(); {
		case t == 0, t == fs.ModeDir, t == fs.ModeSymlink:
		case layer.IsWhiteoutInfo(info):
			return &fs.PathError{Op: "import", Path: p, Err: errors.New("a whiteout: the source is a delta pack; import a flattened one")}
		default:
			return &fs.PathError{Op: "import", Path: p, Err: fmt.Errorf("a %s: a store holds files, directories and symlinks", entryKindName(info))}
		}
		it := importItem{src: p, dst: dst, info: info}
		have, err := s.Lstat(dst)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case have.IsDir() && info.IsDir():
		case have.IsDir() || info.IsDir():
			return &fs.PathError{Op: "import", Path: dst, Err: fmt.Errorf("the store has a %s where %s has a %s", entryKindName(have), srcName, entryKindName(info))}
		case !importForce:
			return &fs.PathError{Op: "import", Path: dst, Err: fmt.Errorf("%w (--force replaces it)", fs.ErrExist)}
		default:
			it.replace = true
		}
		items = append(items, it)
		return nil
	})
	return items, err
}

// runImport copies the planned items into the store: batches of entries
// and small files, each batch one transaction; large files through a
// handle; last, one transaction that sets every directory's mode and
// time, deepest first, since adding entries changed them. The import as
// a whole is not atomic: a failure leaves the batches committed before
// it, each one whole.
func runImport(s *packfs.Store, src fs.FS, items []importItem) error {
	type write struct {
		it   importItem
		data []byte
	}
	var batch []write
	var batchBytes int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.Update(func(tx *packfs.Tx) error {
			for _, w := range batch {
				if err := importOne(tx, w.it, w.data); err != nil {
					return err
				}
			}
			return nil
		})
		batch, batchBytes = batch[:0], 0
		return err
	}
	for _, it := range items {
		m := it.info.Mode()
		var data []byte
		switch {
		case m.IsRegular() && it.info.Size() > importBatchBytes:
			if err := flush(); err != nil {
				return err
			}
			if err := importLarge(s, src, it); err != nil {
				return err
			}
			continue
		case m.IsRegular():
			var err error
			if data, err = fs.ReadFile(src, it.src); err != nil {
				return err
			}
		case m.Type() == fs.ModeSymlink:
			t, err := fs.ReadLink(src, it.src)
			if err != nil {
				return err
			}
			data = []byte(t)
		}
		batch = append(batch, write{it, data})
		batchBytes += int64(len(data))
		if len(batch) >= importBatchEntries || batchBytes >= importBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return s.Update(func(tx *packfs.Tx) error {
		for _, it := range slices.Backward(items) {
			if it.info.IsDir() {
				if err := tx.Chmod(it.dst, it.info.Mode()&keptModeBits); err != nil {
					return err
				}
				if err := tx.Chtimes(it.dst, it.info.ModTime(), it.info.ModTime()); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// importOne makes one entry in a transaction. A symlink keeps the time
// of its making: the store sets times through symlinks only.
func importOne(tx *packfs.Tx, it importItem, data []byte) error {
	m := it.info.Mode()
	if it.replace {
		if err := tx.Remove(it.dst); err != nil {
			return err
		}
	}
	switch m.Type() {
	case fs.ModeDir:
		if it.src == "." {
			return tx.MkdirAll(it.dst, m&keptModeBits) // the import's target, and its parents
		}
		if err := tx.Mkdir(it.dst, m&keptModeBits); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	case fs.ModeSymlink:
		return tx.Symlink(string(data), it.dst)
	}
	if err := tx.WriteFile(it.dst, data, m&keptModeBits); err != nil {
		return err
	}
	if err := tx.Chmod(it.dst, m&keptModeBits); err != nil {
		return err
	}
	return tx.Chtimes(it.dst, it.info.ModTime(), it.info.ModTime())
}

// importLarge streams one large file into the store through a handle,
// under a temporary name in the same directory that a rename replaces
// the file's with: a failure leaves no part of it under its own name.
func importLarge(s *packfs.Store, src fs.FS, it importItem) (err error) {
	in, err := src.Open(it.src)
	if err != nil {
		return err
	}
	defer in.Close()
	m := it.info.Mode()
	var out layer.File
	var tmp string
	for i := 0; ; i++ {
		tmp = path.Join(path.Dir(it.dst), fmt.Sprintf(".packfs-import-%d-%d", os.Getpid(), i))
		out, err = s.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, m&keptModeBits)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			s.Remove(tmp)
		}
	}()
	buf := make([]byte, 1<<20)
	_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, buf)
	if err != nil {
		err = &fs.PathError{Op: "copy", Path: it.src, Err: err}
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := s.Chmod(tmp, m&keptModeBits); err != nil {
		return err
	}
	if err := s.Chtimes(tmp, it.info.ModTime(), it.info.ModTime()); err != nil {
		return err
	}
	if err := s.Rename(tmp, it.dst); err != nil {
		return err
	}
	return s.Sync()
}
