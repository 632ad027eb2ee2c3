package packreader

import (
	"sync"

	"github.com/packfs/packfs/internal/packformat"
)

// ownerNames is the pack's owner-names table (FORMAT.md), read and
// checked at its first use.
type ownerNames struct {
	once          sync.Once
	users, groups map[uint32]string
	err           error
}

// names returns the owner-names table; nil maps when the pack has none
// or it is damaged (err says which; Verify reports it). The caller holds
// r.mu.
func (r *Reader) names() (users, groups map[uint32]string, err error) {
	n := &r.ownerNames
	n.once.Do(func() {
		f := r.footer
		if r.version != packformat.Version3 || f.NamesSize == 0 {
			return
		}
		buf := make([]byte, f.NamesSize) // bounded by MaxNamesSize at Open
		rc := packformat.Record{Type: packformat.TypeFile, Off: f.NamesPos, Size: f.NamesSize, CRC: f.NamesFirst}
		if n.err = r.readContent(buf, rc, 0); n.err != nil {
			return
		}
		if n.users, n.groups, n.err = packformat.DecodeNames(buf); n.err != nil {
			n.err = corrupt("%v", n.err)
		}
	})
	return n.users, n.groups, n.err
}

// OwnerNames returns the names of the entry's owner that the pack
// records ("" where it records none): the names the source machine gave
// Uid and Gid when the pack was made.
func (s *Sys) OwnerNames() (user, group string) { return s.User, s.Group }
