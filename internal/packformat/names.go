package packformat

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strings"
)

// The owner-names table of a version-3 pack maps the uids and gids its
// entries carry to the user and group names the source machine gave
// them, as tar's uname and gname do. It is stored as a content of the raw
// stream (so it is framed, compressed and checked like one), located by
// the footer's NamesPos, NamesSize and NamesFirst:
//
//	| 4 | users: count U of user entries     |
//	| 4 | groups: count G of group entries   |
//	| U entries, then G entries, each:       |
//	|   4 | id                               |
//	|   1 | length L of the name, 1 to 255   |
//	|   L | the name                         |
//
// Ids increase strictly within each list; a name holds no NUL, '/', ':'
// or newline, the separators of /etc/passwd and /etc/group.

// MaxNamesSize bounds the owner-names table.
const MaxNamesSize = 1 << 20

var errNames = errors.New("bad owner-names table")

// EncodeNames encodes the owner-names table of users and groups; names
// that could not be decoded back are left out.
func EncodeNames(users, groups map[uint32]string) []byte {
	var b []byte
	lists := [2]map[uint32]string{users, groups}
	var counts [2]int
	var body []byte
	for l, m := range lists {
		for _, id := range slices.Sorted(maps.Keys(m)) {
			name := m[id]
			if !ValidOwnerName(name) || len(body)+len(name)+5+8 > MaxNamesSize {
				continue
			}
			body = binary.LittleEndian.AppendUint32(body, id)
			body = append(body, byte(len(name)))
			body = append(body, name...)
			counts[l]++
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(counts[0]))
	b = binary.LittleEndian.AppendUint32(b, uint32(counts[1]))
	return append(b, body...)
}

// ValidOwnerName reports whether a user or group name can be recorded.
func ValidOwnerName(name string) bool {
	return len(name) > 0 && len(name) <= 255 && !strings.ContainsAny(name, "\x00/:\n")
}

// DecodeNames decodes an owner-names table.
func DecodeNames(b []byte) (users, groups map[uint32]string, err error) {
	if len(b) < 8 || len(b) > MaxNamesSize {
		return nil, nil, errNames
	}
	counts := [2]uint32{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])}
	b = b[8:]
	var lists [2]map[uint32]string
	for l := range lists {
		// Each entry takes at least 6 bytes: no count can claim more
		// than the table holds.
		if uint64(counts[l])*6 > uint64(len(b)) {
			return nil, nil, errNames
		}
		m := make(map[uint32]string, counts[l])
		last := int64(-1)
		for range counts[l] {
			if len(b) < 5 {
				return nil, nil, errNames
			}
			id, n := binary.LittleEndian.Uint32(b), int(b[4])
			if int64(id) <= last || len(b) < 5+n {
				return nil, nil, errNames
			}
			name := string(b[5 : 5+n])
			if !ValidOwnerName(name) {
				return nil, nil, errNames
			}
			m[id], last, b = name, int64(id), b[5+n:]
		}
		lists[l] = m
	}
	if len(b) != 0 {
		return nil, nil, errNames
	}
	return lists[0], lists[1], nil
}
