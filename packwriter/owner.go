package packwriter

import (
	"io/fs"
	"os/user"
	"strconv"

	"github.com/packfs/packfs/internal/packformat"
)

// srcInode names an inode of the source with more than one link; the
// zero value names none.
type srcInode struct{ dev, ino uint64 }

// The owner and inode of an entry come from its FileInfo's Sys: a
// *syscall.Stat_t from a host directory (sys_unix.go), or any value with
// these methods, such as what packreader's FileInfo.Sys returns, so that
// repacking a pack keeps them.
type (
	ownerSys      interface{ Owner() (uid, gid uint32) }
	ownerNamesSys interface {
		OwnerNames() (user, group string)
	}
	inodeSys interface {
		Inode() (ino uint64, nlink uint32)
	}
)

// owner returns fi's owner and, for a regular file with more than one
// link, its inode in the source; sys is fi.Sys().
func owner(fi fs.FileInfo, sys any) (packformat.Attr, srcInode) {
	unknown := packformat.Attr{Uid: packformat.NoOwner, Gid: packformat.NoOwner}
	if sys == nil {
		return unknown, srcInode{}
	}
	if a, src, ok := hostOwner(sys); ok {
		if !fi.Mode().IsRegular() {
			src = srcInode{}
		}
		return a, src
	}
	a := unknown
	var src srcInode
	if o, ok := sys.(ownerSys); ok {
		a.Uid, a.Gid = o.Owner()
	}
	if in, ok := sys.(inodeSys); ok && fi.Mode().IsRegular() {
		if ino, nlink := in.Inode(); nlink > 1 {
			src = srcInode{ino: ino}
		}
	}
	return a, src
}

// names gathers the owner names of a format-3 pack: from the source's
// Sys where it has them (OwnerNames, as a pack's does), and for a host
// file from this machine's user and group databases (os/user), each id
// looked up once. The first name given to an id is kept.
type names struct {
	users, groups map[uint32]string
	looked        map[[2]uint32]bool // {0, uid} and {1, gid} already asked
}

func (n *names) any() bool { return len(n.users)+len(n.groups) > 0 }

func (n *names) add(group bool, id uint32, name string) {
	m := &n.users
	if group {
		m = &n.groups
	}
	if id == packformat.NoOwner || name == "" || !packformat.ValidOwnerName(name) {
		return
	}
	if *m == nil {
		*m = map[uint32]string{}
	}
	if _, ok := (*m)[id]; !ok {
		(*m)[id] = name
	}
}

// lookup records the names this machine gives uid and gid.
func (n *names) lookup(uid, gid uint32) {
	if n.looked == nil {
		n.looked = map[[2]uint32]bool{}
	}
	if k := [2]uint32{0, uid}; !n.looked[k] && uid != packformat.NoOwner {
		n.looked[k] = true
		if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
			n.add(false, uid, u.Username)
		}
	}
	if k := [2]uint32{1, gid}; !n.looked[k] && gid != packformat.NoOwner {
		n.looked[k] = true
		if g, err := user.LookupGroupId(strconv.FormatUint(uint64(gid), 10)); err == nil {
			n.add(true, gid, g.Name)
		}
	}
}

// noteNames records the names of owner a, if known, from sys, the
// entry's FileInfo.Sys().
func (w *writer) noteNames(sys any, a packformat.Attr) {
	if !w.v3 || sys == nil {
		return
	}
	if s, ok := sys.(ownerNamesSys); ok {
		u, g := s.OwnerNames()
		w.names.add(false, a.Uid, u)
		w.names.add(true, a.Gid, g)
		return
	}
	if _, _, ok := hostOwner(sys); ok {
		w.names.lookup(a.Uid, a.Gid)
	}
}

// subdirs counts the directories among n's live children.
func subdirs(n *node) int {
	c := 0
	for i := range n.kids {
		if !n.kids[i].gone && n.kids[i].rec.Type == packformat.TypeDir {
			c++
		}
	}
	return c
}

// links gathers the entries that are one inode in the source. Entries
// become one inode in the pack only when everything an inode holds is
// the same (content, mode, time, owner): a source whose inode numbers are
// not unique (a union of two packs) must not fuse different files.
type links struct {
	first map[srcInode]int // the group of each source inode
	group [][]linked
}

type linked struct {
	n   *node
	idx uint32
}

func newLinks() *links { return &links{first: map[srcInode]int{}} }

// add adds entry idx, n, whose inode in the source is src.
func (l *links) add(n *node, src srcInode, idx uint32) {
	if src == (srcInode{}) || n.rec.Type != packformat.TypeFile {
		return
	}
	g, ok := l.first[src]
	if !ok {
		g = len(l.group)
		l.first[src] = g
		l.group = append(l.group, nil)
	}
	l.group[g] = append(l.group[g], linked{n, idx})
}

// apply sets the inode number and link count of the grouped entries in
// attrs, the attribute table.
func (l *links) apply(attrs []byte) {
	for _, g := range l.group {
		// Split the group by what the inode holds; each part is one
		// inode, numbered after its first entry.
		type key struct {
			off, size uint64
			mode      uint32
			mtime     int64
			uid, gid  uint32
		}
		parts := map[key][]uint32{}
		var order []key
		for _, e := range g {
			r := &e.n.rec
			k := key{r.Off, r.Size, r.Mode, r.Mtime, e.n.attr.Uid, e.n.attr.Gid}
			if _, ok := parts[k]; !ok {
				order = append(order, k)
			}
			parts[k] = append(parts[k], e.idx)
		}
		for _, k := range order {
			p := parts[k]
			for _, idx := range p {
				b := attrs[uint64(idx)*packformat.AttrSize:]
				a := packformat.DecodeAttr(b)
				a.Ino, a.Nlink = p[0]+1, uint32(len(p))
				a.Put(b)
			}
		}
	}
}
