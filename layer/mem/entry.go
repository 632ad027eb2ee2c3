package mem

import (
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/treap"
)

// inode is a file's identity. An open handle holds the inode, so that it
// keeps reaching its file after a rename or an unlink.
type inode struct {
	// cur is the entry that stands for the file in the latest state;
	// handles load it without locking.
	cur atomic.Pointer[entry]
	// parent is the directory that holds the file, nil for the root and
	// for an unlinked file; only the writer changes it, under FS.mu. A
	// reader may load it to learn whether a directory is still linked.
	// The file's name there is its latest entry's.
	parent atomic.Pointer[inode]
}

// entry is what a directory's index holds for a file: a cell whose state
// the writer may replace in place until the next snapshot. A snapshot bumps
// the layer's epoch, which freezes every entry made before it; changing a
// frozen entry means making a new one and linking it into a new version of
// its parent, and so on up to the first entry still of the current epoch.
// So a run of writes between snapshots changes states in place, and a
// snapshot costs O(1) when taken plus, later, one path copy per changed
// path.
type entry struct {
	ino   *inode
	epoch uint64 // the epoch it was made in
	// name is the name it stands under in its directory. It never
	// changes once the entry is reachable, so that a reader may compare
	// it without a lock: a rename links a new entry.
	name string
	st   atomic.Pointer[state]
	// fi is the description last handed out for it, which a Stat or a
	// lookup of the same name and state hands out again instead of
	// allocating one: a file is stat'ed far more often than it changes.
	// It fits the room the allocation of an inode and its entry has.
	fi atomic.Pointer[fileInfo]
}

// info returns a description of s, a state of e, under name.
func (e *entry) info(name string, s *state) *fileInfo {
	if name == e.name {
		// Keep the entry's own copy, which the lookup has just read,
		// rather than one into a caller's path.
		name = e.name
	}
	if fi := e.fi.Load(); fi != nil && fi.s == s && fi.name == name {
		return fi
	}
	fi := &fileInfo{name: name, s: s}
	e.fi.Store(fi)
	return fi
}

// describe makes fi, which the caller allocated with ns, the description
// of ns under the name of ino's latest entry, which set has just given
// state ns: the Stat or lookup that follows a write then allocates none,
// and a file's description costs the heap no object of its own for the
// garbage collector to mark.
func describe(ino *inode, ns *state, fi *fileInfo) {
	e := ino.cur.Load()
	if e.state() != ns {
		return
	}
	*fi = fileInfo{name: e.name, s: ns}
	e.fi.Store(fi)
}

// state is one immutable version of a file's metadata and contents.
type state struct {
	mode fs.FileMode
	// own names the owner's ids in the table of owners (see ownerIDs),
	// in the room mode leaves: 0, a state's zero value, is no owner.
	own   uint32
	mtime int64    // Unix nanoseconds
	data  *content // regular file: bytes; symlink: target
	// dir is a directory's own dirState, the allocation this state is
	// the first part of; nil for anything else. So a file's state holds
	// no directory fields and fits 32 bytes.
	dir *dirState
}

// dirState is a directory's state: its state, then what only a directory
// has, in one allocation.
type dirState struct {
	state
	kids treap.Map[string, *entry] // entries by name
	// idx is the hash index of a large live directory (see kidIndex),
	// nil for a small one and for a large one no reader has asked of
	// yet. It is atomic because a reader that takes the writer's lock
	// without waiting builds it for the directory's published state.
	idx atomic.Pointer[kidIndex]
}

// newDir returns a directory state of s's metadata with no entries.
func newDir(s state) *state {
	d := &dirState{state: s, kids: emptyDir}
	d.dir = d
	return &d.state
}

// children returns a directory's entries; anything else has none.
func (s *state) children() treap.Map[string, *entry] {
	if s.dir == nil {
		return treap.Map[string, *entry]{}
	}
	return s.dir.kids
}

// emptyDir is every new directory's index. Its NewOrdered order compares
// names as strings.Compare does, byte by byte, which is the order
// fs.ReadDir promises.
var emptyDir = treap.NewOrdered[string, *entry]()

func (s *state) isDir() bool     { return s.mode.IsDir() }
func (s *state) isSymlink() bool { return s.mode&fs.ModeSymlink != 0 }
func (s *state) isRegular() bool { return s.mode.IsRegular() }

func (s *state) size() int64 {
	if s.isDir() {
		return 0
	}
	return s.data.Size()
}

// owner returns the file's ids, layer.NoOwner where it has none.
func (s *state) owner() (uid, gid uint32) {
	ids := ownerIDs(s.own)
	return ids[0], ids[1]
}

// setOwner gives the file the ids uid and gid.
func (s *state) setOwner(uid, gid uint32) { s.own = ownerIndex(uid, gid) }

// owners is the table of the (uid, gid) pairs files have, shared by every
// layer of the process: a state holds an index into it, 4 bytes that fit
// its padding, where the two ids would take 8 and move every state to a
// larger allocation. The table only grows, by one entry per pair ever
// given (a few in practice); readers index it without a lock.
var owners struct {
	mu    sync.Mutex
	index map[[2]uint32]uint32
	list  atomic.Pointer[[][2]uint32] // list[0] is no owner
}

func init() {
	l := [][2]uint32{{layer.NoOwner, layer.NoOwner}}
	owners.list.Store(&l)
	owners.index = map[[2]uint32]uint32{l[0]: 0}
}

// ownerIndex returns the index of the pair uid, gid, adding it if new.
func ownerIndex(uid, gid uint32) uint32 {
	k := [2]uint32{uid, gid}
	owners.mu.Lock()
	defer owners.mu.Unlock()
	if i, ok := owners.index[k]; ok {
		return i
	}
	l := *owners.list.Load()
	i := uint32(len(l))
	// Appending in place writes past every published length, which no
	// reader indexes: only a state made after the Store below holds i.
	l = append(l, k)
	owners.list.Store(&l)
	owners.index[k] = i
	return i
}

// ownerIDs returns the pair at index i.
func ownerIDs(i uint32) [2]uint32 { return (*owners.list.Load())[i] }

func (s *state) target() string { return string(s.data.bytes()) }

// with returns a copy of s: the start of every new state of its file.
func (s *state) with() *state {
	if s.dir != nil {
		d := &dirState{state: *s, kids: s.dir.kids}
		d.idx.Store(s.dir.idx.Load())
		d.dir = d
		return &d.state
	}
	n := *s
	return &n
}

func (e *entry) state() *state { return e.st.Load() }

// fileInfo describes one state of a file as fs.FileInfo and fs.DirEntry.
type fileInfo struct {
	name string
	s    *state
}

func (fi *fileInfo) Name() string               { return fi.name }
func (fi *fileInfo) Size() int64                { return fi.s.size() }
func (fi *fileInfo) Mode() fs.FileMode          { return fi.s.mode }
func (fi *fileInfo) ModTime() time.Time         { return time.Unix(0, fi.s.mtime) }
func (fi *fileInfo) IsDir() bool                { return fi.s.isDir() }
func (fi *fileInfo) Type() fs.FileMode          { return fi.s.mode.Type() }
func (fi *fileInfo) Info() (fs.FileInfo, error) { return fi, nil }
func (fi *fileInfo) String() string             { return fs.FormatDirEntry(fi) }

// Sys returns a *layer.Sys with the file's owner, or nil when it has none.
func (fi *fileInfo) Sys() any {
	if fi.s.own == 0 {
		return nil
	}
	uid, gid := fi.s.owner()
	return &layer.Sys{Uid: uid, Gid: gid}
}

// list returns up to n entries of dir after name after (all when n <= 0,
// from the start when first).
func list(kids treap.Map[string, *entry], after string, first bool, n int) []fs.DirEntry {
	size := kids.Len()
	if n > 0 && n < size {
		size = n
	}
	infos := make([]fileInfo, 0, size)
	seq := kids.All()
	if !first {
		seq = kids.After(after)
	}
	for name, e := range seq {
		if n > 0 && len(infos) == n {
			break
		}
		infos = append(infos, fileInfo{name, e.state()})
	}
	out := make([]fs.DirEntry, len(infos))
	for i := range infos {
		out[i] = &infos[i]
	}
	return out
}
