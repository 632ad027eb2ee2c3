package mem

import (
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/treap"
)

// FS is a writable in-memory layer. The zero FS is not usable; call [New].
type FS struct {
	mu      sync.Mutex            // serializes writers
	root    atomic.Pointer[entry] // the root directory; readers load it
	rootIno *inode                // the root directory's identity
	epoch   uint64                // guarded by mu; see entry
	// owner is the treap.Owner of the directory index nodes made since
	// the last snapshot, which a writer may change in place. Guarded by
	// mu; every snapshot moves on to a new one.
	owner treap.Owner
	now   func() time.Time
	feed  layer.Feed // the changes, for Watch
	// opened holds the indexes whose windows the operation in progress
	// opened (see kidIndex); guarded by mu.
	opened []*kidIndex
	// indexMin and indexDrop are the sizes at which a directory gets and
	// loses its hash index: the constants of the same names, which tests
	// lower to index every directory.
	indexMin, indexDrop int
}

var (
	_ layer.FS      = (*FS)(nil)
	_ layer.WatchFS = (*FS)(nil)
	_ fs.GlobFS     = (*Snapshot)(nil)
	_ fs.GlobFS     = (*FS)(nil)
)

// New returns an empty in-memory layer whose root directory has mode 0755.
func New() *FS { return NewWithClock(time.Now) }

// NewWithClock returns an empty in-memory layer that takes every
// modification time it records from now. A store that replays a log of
// changes sets the clock to each change's recorded time, so that the
// replayed tree matches the original to the nanosecond.
func NewWithClock(now func() time.Time) *FS {
	f := &FS{rootIno: &inode{}, now: now, owner: 1, indexMin: indexMin, indexDrop: indexDrop}
	e := &entry{ino: f.rootIno}
	e.st.Store(newDir(state{mode: fs.ModeDir | 0o755, mtime: f.now().UnixNano()}))
	f.rootIno.cur.Store(e)
	f.root.Store(e)
	return f
}

// Snapshot returns the current state as an immutable file system, in O(1).
// Later writes to f never show in it, and reading it never blocks a writer.
// Taking it waits for a write in progress to finish.
func (f *FS) Snapshot() *Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.freeze()
	return &Snapshot{root: f.root.Load()}
}

// freeze makes everything reachable now immutable: later writes copy the
// entries and index nodes they change instead of changing them in place.
// The caller holds f.mu.
func (f *FS) freeze() {
	f.epoch++
	if f.owner == treap.MaxOwner {
		// Owners are about to come round again: clear the claims of the
		// old ones on what the live tree holds, once per 2^32 snapshots.
		disown(f.root.Load())
		f.owner = 0
	}
	f.owner++
}

// disown clears every owner's claim on the index nodes below dir.
func disown(dir *entry) {
	kids := dir.state().children()
	kids.Disown()
	for _, e := range kids.All() {
		if e.state().isDir() {
			disown(e)
		}
	}
}

func (f *FS) view() view { return view{f.root.Load(), f} }

// linked reports whether ino is still reachable from the root.
func (f *FS) linked(ino *inode) bool {
	for ino != f.rootIno {
		if ino = ino.parent.Load(); ino == nil {
			return false
		}
	}
	return true
}

// Open opens name for reading, following symlinks. A file opened through
// the live layer sees later writes to it, as on Linux.
func (f *FS) Open(name string) (fs.File, error) {
	return f.OpenFile(name, 0, 0)
}

// Stat returns a description of name, following symlinks.
func (f *FS) Stat(name string) (fs.FileInfo, error) { return f.view().stat("stat", name, true) }

// Lstat returns a description of name without following a final symlink.
func (f *FS) Lstat(name string) (fs.FileInfo, error) { return f.view().stat("lstat", name, false) }

// ReadDir returns the entries of the directory name, sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) { return f.view().readDir(name) }

// ReadFile returns a copy of the contents of name.
func (f *FS) ReadFile(name string) ([]byte, error) { return f.view().readFile(name) }

// ReadLink returns the target of the symbolic link name.
func (f *FS) ReadLink(name string) (string, error) { return f.view().readLink(name) }

// Readlink is ReadLink with [os.Root]'s spelling.
func (f *FS) Readlink(name string) (string, error) { return f.view().readLink(name) }

// Glob returns the names matching pattern, as [fs.Glob] does, over one
// consistent state.
func (f *FS) Glob(pattern string) ([]string, error) { return fs.Glob(f.Snapshot(), pattern) }

// Snapshot is an immutable state of an [FS]. It is safe for concurrent use.
type Snapshot struct {
	root *entry
}

func (s *Snapshot) view() view { return view{s.root, nil} }

// Open opens name for reading, following symlinks.
func (s *Snapshot) Open(name string) (fs.File, error) {
	w, err := s.view().resolve("open", name, true)
	if err == nil {
		err = checkOpen(w.e.state(), 0)
	}
	if err != nil {
		return nil, err
	}
	return &file{name: name, frozen: w.e.state(), flag: 0}, nil
}

// Stat returns a description of name, following symlinks.
func (s *Snapshot) Stat(name string) (fs.FileInfo, error) { return s.view().stat("stat", name, true) }

// Lstat returns a description of name without following a final symlink.
func (s *Snapshot) Lstat(name string) (fs.FileInfo, error) {
	return s.view().stat("lstat", name, false)
}

// ReadDir returns the entries of the directory name, sorted by name.
func (s *Snapshot) ReadDir(name string) ([]fs.DirEntry, error) { return s.view().readDir(name) }

// ReadFile returns a copy of the contents of name.
func (s *Snapshot) ReadFile(name string) ([]byte, error) { return s.view().readFile(name) }

// ReadLink returns the target of the symbolic link name.
func (s *Snapshot) ReadLink(name string) (string, error) { return s.view().readLink(name) }

// Glob returns the names matching pattern, as [fs.Glob] does.
func (s *Snapshot) Glob(pattern string) ([]string, error) { return fs.Glob(onlyFS{s}, pattern) }

// onlyFS hides GlobFS so that fs.Glob does not call back into Glob.
type onlyFS struct{ fs.ReadDirFS }

// view holds the read operations over one state: the live layer's, or a
// snapshot's.
type view struct {
	root *entry
	live *FS // the layer, for the live layer's; nil for a snapshot's
}

func (v view) resolve(op, name string, follow bool) (where, error) {
	w, err := walk(v.root, name, follow, v.live)
	if err == nil && w.e == nil {
		err = errNotExist
	}
	if err != nil {
		return w, layer.PathError(op, name, err)
	}
	return w, nil
}

func (v view) stat(op, name string, follow bool) (fs.FileInfo, error) {
	w, err := v.resolve(op, name, follow)
	if err != nil {
		return nil, err
	}
	return w.e.info(baseName(name), w.e.state()), nil
}

func (v view) readDir(name string) ([]fs.DirEntry, error) {
	w, err := v.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	st := w.e.state()
	if !st.isDir() {
		return nil, layer.PathError("open", name, errNotDir)
	}
	return list(st.children(), "", true, -1), nil
}

func (v view) readFile(name string) ([]byte, error) {
	w, err := v.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	st := w.e.state()
	if err := checkOpen(st, 0); err != nil {
		return nil, layer.PathError("open", name, err)
	}
	if st.isDir() {
		return nil, layer.PathError("read", name, errIsDir)
	}
	return st.data.bytes(), nil
}

func (v view) readLink(name string) (string, error) {
	w, err := v.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	st := w.e.state()
	if !st.isSymlink() {
		return "", layer.PathError("readlink", name, errInvalid)
	}
	return st.target(), nil
}

// baseName is the name a FileInfo reports for name: its last element, as
// os reports it, or "." for the root.
func baseName(name string) string {
	if name == "." {
		return "."
	}
	if i := lastSlash(name); i >= 0 {
		return name[i+1:]
	}
	return name
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
