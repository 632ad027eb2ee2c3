package mem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"time"

	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/treap"
)

// Copy is an entry for [FS.CopyIn] to create: a copy of another layer's.
type Copy struct {
	Name    string      // one path element
	Mode    fs.FileMode // a directory, regular file or symlink, with its permission bits
	ModTime time.Time   // zero: the layer's clock, now
	// Data is a regular file's content or a symlink's target; nil reads
	// as empty.
	Data io.Reader
	// Share, for a regular file, is its content, taken as it is from a
	// snapshot in place of Data: the copy shares the bytes, immutable,
	// and reads nothing.
	Share *Content
	// Owner is the copy's owner; nil gives it none (layer.NoOwner).
	Owner *layer.Sys
}

// CopyIn creates chain in the existing directory dir in one step: chain[0]
// in dir, and each next entry in the directory before it. A reader sees
// none of them or all of them, each whole, with its mode and mtime, and
// dir keeps its mtime: a union's copy-up adds to the upper layer what a
// lower layer already showed, which nobody must see half done. It reads
// the contents before taking the writers' lock, and fails with EEXIST,
// changing nothing, when dir already holds chain[0].
func (f *FS) CopyIn(dir string, chain []Copy) error { return f.copyIn("copyin", dir, chain, false) }

// CreateOver is CopyIn for a union's create of a name its upper layer
// holds a whiteout at: chain[0] replaces the whiteout dir/chain[0].Name in
// the same step, and dir's mtime is set, as a create sets it. A reader
// sees the whiteout or the new entries, never what the whiteout hides
// below. The last entry may itself be a whiteout (layer.ModeWhiteout):
// the opaque marker of a directory made where a lower one was removed.
// Anything at chain[0].Name but a whiteout fails with EEXIST.
func (f *FS) CreateOver(dir string, chain []Copy) error { return f.copyIn("create", dir, chain, true) }

func (f *FS) copyIn(op, dir string, chain []Copy, over bool) error {
	states := make([]*state, len(chain))
	for i, c := range chain {
		s, err := copyState(c, i == len(chain)-1)
		if err != nil {
			return layer.PathError(op, dir, err)
		}
		states[i] = s
	}
	err := f.update(func(root *entry, now int64) error {
		w, err := walk(root, dir, true, f)
		switch {
		case err != nil:
			return err
		case w.e == nil:
			return errNotExist
		case !w.e.state().isDir():
			return errNotDir
		}
		d := w.e
		if len(chain) == 0 {
			return nil
		}
		if old, ok := d.state().children().Get(chain[0].Name); ok && !(over && layer.IsWhiteout(old.state().mode)) {
			return errExist
		}
		if over {
			// A create, not a copy: in a setgid directory the new
			// entries take its group, as link gives it.
			parent := d.state()
			for i, s := range states {
				if chain[i].Owner == nil {
					inheritGroup(parent, s)
				}
				parent = s
			}
		}
		// Build the chain unlinked, bottom up, then link its top.
		var below, last *entry
		for i := len(chain) - 1; i >= 0; i-- {
			if chain[i].ModTime.IsZero() {
				states[i].mtime = now
			}
			e := f.create(*states[i])
			if last == nil {
				last = e
			}
			if below != nil {
				name := strings.Clone(chain[i+1].Name)
				below.ino.parent.Store(e.ino)
				below.name = name
				st := e.state()
				st.dir.kids = st.dir.kids.Set(name, below)
			}
			below = e
		}
		name := strings.Clone(chain[0].Name)
		below.ino.parent.Store(d.ino)
		below.name = name
		ds := d.ino.cur.Load().state().with()
		f.openIndexOf(ds)
		ds.dir.kids = ds.dir.kids.SetOwned(f.owner, name, below)
		f.indexPut(ds, name, below)
		if over {
			ds.mtime = now
		}
		f.set(d.ino, ds)
		f.note(layer.OpCreate, below.ino)
		if last != below {
			// The chain's end is what a union copied up a chain for (a
			// file it writes, chmods, renames): a watcher that forgets
			// what it knew of the top's name only (a FUSE mount's cache
			// of a directory's entry) must hear of it by its own name.
			op := layer.OpCreate
			if last.state().isRegular() {
				op |= layer.OpWrite
			}
			f.note(op, last.ino)
		}
		return nil
	})
	if err != nil {
		return layer.PathError(op, dir, err)
	}
	return nil
}

// maxName is Linux's NAME_MAX, the longest name of one element.
const maxName = 255

// zeroChunk is a chunk of zeros, which copyState compares chunks with.
var zeroChunk [chunkSize]byte

// copyState reads c into the state of a new entry; only the last entry
// of a chain may be other than a directory.
func copyState(c Copy, last bool) (*state, error) {
	if c.Name == "" || c.Name == "." || c.Name == ".." || strings.ContainsAny(c.Name, "/\x00") {
		return nil, errInvalid
	}
	if len(c.Name) > maxName {
		return nil, syscall.ENAMETOOLONG
	}
	s := &state{mode: c.Mode & (fs.ModeType | fileModeMask), mtime: c.ModTime.UnixNano()}
	if c.Owner != nil {
		s.setOwner(c.Owner.Uid, c.Owner.Gid)
	}
	switch t := c.Mode.Type(); {
	case t == fs.ModeDir:
		// A copy keeps its setuid and setgid bits, which Mkdir's perm
		// cannot give.
		s.mode = fs.ModeDir | c.Mode&(dirModeMask|fs.ModeSetuid|fs.ModeSetgid)
		return s, nil
	case !last:
		return nil, errNotDir
	case layer.IsWhiteout(c.Mode):
		return &state{mode: layer.ModeWhiteout, mtime: s.mtime}, nil
	case t != 0 && t != fs.ModeSymlink:
		return nil, errInvalid
	}
	if c.Share != nil {
		if !s.isRegular() {
			return nil, errInvalid
		}
		s.data = c.Share.c
		return s, nil
	}
	if c.Data == nil {
		return s, nil
	}
	// Stream the bytes in chunks: the copy costs its size once. A chunk
	// of zeros stays a hole, so that a sparse file (a pack's holes, or
	// the durable store's file reopened over the pack a checkpoint
	// wrote) costs its data, not its size; a source that says where its
	// data is is read there only, and costs its data in time too.
	buf := make([]byte, chunkSize)
	if data, size, ok := extentsOf(c.Data); ok {
		err := data(func(off, end int64) error {
			for off < end {
				n, err := c.Data.(io.ReaderAt).ReadAt(buf[:min(int64(len(buf)), end-off)], off)
				if n > 0 && !bytes.Equal(buf[:n], zeroChunk[:n]) {
					s.data = s.data.writeAt(buf[:n], off)
				}
				off += int64(n)
				if err == io.EOF && off >= end {
					break
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		s.data = s.data.truncate(size)
		return s, nil
	}
	var off int64
	for {
		n, err := io.ReadFull(c.Data, buf)
		if !bytes.Equal(buf[:n], zeroChunk[:n]) {
			s.data = s.data.writeAt(buf[:n], off)
		}
		off += int64(n)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	s.data = s.data.truncate(off) // the holes at the end
	if s.isSymlink() && pathwalk.TooLong(s.data.Size()) {
		return nil, syscall.ENAMETOOLONG
	}
	return s, nil
}

// extentsOf returns, for a source that can say where its data is (a
// layer.HoleSeeker with ReadAt and Stat, such as a pack's file), its size
// and a walk that calls fn with each extent of data, [off, end).
func extentsOf(r io.Reader) (walk func(fn func(off, end int64) error) error, size int64, ok bool) {
	hs, ok := r.(layer.HoleSeeker)
	if !ok || !hs.SeeksHoles() {
		return nil, 0, false
	}
	st, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if _, isRA := r.(io.ReaderAt); !ok || !isRA {
		return nil, 0, false
	}
	fi, err := st.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, 0, false
	}
	size = fi.Size()
	return func(fn func(off, end int64) error) error {
		for off := int64(0); off < size; {
			d, err := hs.Seek(off, layer.SeekData)
			if errors.Is(err, syscall.ENXIO) {
				return nil // holes to the end
			}
			if err != nil {
				return err
			}
			h, err := hs.Seek(d, layer.SeekHole)
			if err != nil {
				return err
			}
			if d < off || h <= d || h > size {
				return fmt.Errorf("data at %d to %d of a file of %d bytes, looked for from %d: %w", d, h, size, off, errInvalid)
			}
			if err := fn(d, h); err != nil {
				return err
			}
			off = h
		}
		return nil
	}, size, true
}

// Content is the bytes of a regular file of a [Snapshot], which a copy
// made with CopyIn may share (Copy.Share) rather than read: they never
// change.
type Content struct{ c *content }

// Size returns the number of bytes.
func (c *Content) Size() int64 { return c.c.Size() }

// Content returns the bytes of the regular file name, a final symlink
// not followed, as s holds them; false for anything else. The durable
// store's checkpoint gives them to the copy-up of a file its new upper
// layer takes over, which would otherwise read them whole from the pack
// it just wrote from s.
func (s *Snapshot) Content(name string) (*Content, bool) {
	w, err := s.view().resolve("open", name, false)
	if err != nil {
		return nil, false
	}
	st := w.e.state()
	if !st.isRegular() {
		return nil, false
	}
	return &Content{st.data}, true
}

// RenameUnion is Rename for a union's upper layer, in one step whatever
// it does: a whiteout at newname counts as no entry and is replaced, and
// with whiteout set a whiteout takes oldname's place, as renameat2's
// RENAME_WHITEOUT does for overlayfs. A union that moves an entry hides
// what the lowers hold at the old name, and shows nothing of theirs at
// the new one, without a moment in between for a reader to see them.
func (f *FS) RenameUnion(oldname, newname string, whiteout bool) error {
	err := f.update(func(root *entry, now int64) error {
		var left *entry
		if whiteout {
			left = f.create(state{mode: layer.ModeWhiteout, mtime: now})
		}
		return f.rename(root, oldname, newname, now, left, true)
	})
	if err != nil {
		return layer.LinkError("rename", oldname, newname, err)
	}
	return nil
}

// leave puts left, when there is one, in kids under its name.
func leave(kids treap.Map[string, *entry], left *entry) treap.Map[string, *entry] {
	if left == nil {
		return kids
	}
	return kids.Set(left.name, left)
}
