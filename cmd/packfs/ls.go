package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"time"

	"github.com/packfs/packfs/layer"
	"github.com/packfs/packfs/packreader"
)

func lsFlags(fl *flag.FlagSet) {
	fl.Bool("l", false, "long listing: mode, owner, group (names where the pack records them, else ids; - for none), size, modification time (local, with its zone), name, symlink target")
	fl.Bool("R", false, "list the whole subtree, one path from the pack's root a line, as find does")
	fl.Bool("json", false, "print a JSON array of entries: path, type, mode, perm, size, mtime, target, uid, gid, user, group")
	fl.Bool("0", false, "end each name with a NUL byte instead of a newline (for names holding newlines)")
}

// lsEntry is one line of a listing.
type lsEntry struct {
	name string // as printed
	path string // in the pack
	info fs.FileInfo
}

func cmdLs(fl *flag.FlagSet, args []string, stdout, _ io.Writer) error {
	p := "."
	if len(args) > 1 {
		var err error
		if p, err = packPath(args[1]); err != nil {
			return err
		}
	}
	r, err := openPack(args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	if len(args) > 1 {
		if err := needDir(r, args[1], p); err != nil {
			return err
		}
	}
	ents, err := listing(r, p, flagBool(fl, "R"))
	if err != nil {
		return err
	}
	switch {
	case flagBool(fl, "json"):
		return lsJSON(r, ents, stdout)
	case flagBool(fl, "l"):
		return lsLong(r, ents, stdout)
	}
	end := "\n"
	if flagBool(fl, "0") {
		end = "\x00"
	}
	for _, e := range ents {
		if _, err := io.WriteString(stdout, e.name+end); err != nil {
			return err
		}
	}
	return nil
}

// listing returns what ls prints for p: a directory's entries (its whole
// subtree when recursive, named from the pack's root), or p itself.
func listing(r *packreader.Reader, p string, recursive bool) ([]lsEntry, error) {
	fi, err := r.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		lfi, err := r.Lstat(p)
		if err != nil {
			return nil, err
		}
		return []lsEntry{{name: p, path: p, info: lfi}}, nil
	}
	var ents []lsEntry
	if recursive {
		err := fs.WalkDir(r, p, func(q string, d fs.DirEntry, err error) error {
			if err != nil || q == p {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			ents = append(ents, lsEntry{name: q, path: q, info: info})
			return nil
		})
		return ents, err
	}
	des, err := r.ReadDir(p)
	if err != nil {
		return nil, err
	}
	for _, d := range des {
		info, err := d.Info()
		if err != nil {
			return nil, err
		}
		q := d.Name()
		if p != "." {
			q = p + "/" + q
		}
		ents = append(ents, lsEntry{name: d.Name(), path: q, info: info})
	}
	return ents, nil
}

// lsLong prints ents as ls -l does: owner and group left-aligned, sizes
// right-aligned, each column as wide as its widest cell.
func lsLong(r *packreader.Reader, ents []lsEntry, w io.Writer) error {
	type row struct{ user, group, size string }
	rows := make([]row, len(ents))
	var wu, wg, ws int
	for i, e := range ents {
		u, g := ownerColumns(e.info)
		rows[i] = row{u, g, strconv.FormatInt(e.info.Size(), 10)}
		wu, wg, ws = max(wu, len(u)), max(wg, len(g)), max(ws, len(rows[i].size))
	}
	bw := bufio.NewWriter(w)
	for i, e := range ents {
		line := fmt.Sprintf("%s %-*s %-*s %*s %s %s", lsMode(e.info.Mode()), wu, rows[i].user, wg, rows[i].group, ws, rows[i].size,
			e.info.ModTime().Local().Format("2006-01-02 15:04:05 MST"), e.name)
		if e.info.Mode()&fs.ModeSymlink != 0 {
			if t, err := r.ReadLink(e.path); err == nil {
				line += " -> " + t
			}
		}
		fmt.Fprintln(bw, line)
	}
	return bw.Flush()
}

// ownerColumns returns the owner and group ls -l shows for info: the
// names the pack records, else the ids, and "-" for none.
func ownerColumns(info fs.FileInfo) (user, group string) {
	uid, gid, _ := layer.OwnerOf(info)
	var uname, gname string
	if s, ok := info.Sys().(layer.OwnerNamesSys); ok {
		uname, gname = s.OwnerNames()
	}
	column := func(name string, id uint32) string {
		switch {
		case name != "":
			return name
		case id == layer.NoOwner:
			return "-"
		}
		return strconv.FormatUint(uint64(id), 10)
	}
	return column(uname, uid), column(gname, gid)
}

// jsonEntry is an entry of ls --json.
type jsonEntry struct {
	Path   string  `json:"path"`
	Type   string  `json:"type"`
	Mode   string  `json:"mode"`
	Perm   uint32  `json:"perm"`
	Size   int64   `json:"size"`
	Mtime  string  `json:"mtime,omitempty"`
	Target string  `json:"target,omitempty"`
	Uid    *uint32 `json:"uid,omitempty"`
	Gid    *uint32 `json:"gid,omitempty"`
	User   string  `json:"user,omitempty"`
	Group  string  `json:"group,omitempty"`
}

func lsJSON(r *packreader.Reader, ents []lsEntry, w io.Writer) error {
	out := make([]jsonEntry, 0, len(ents))
	for _, e := range ents {
		m := e.info.Mode()
		j := jsonEntry{Path: e.path, Type: typeName(m), Mode: lsMode(m), Perm: uint32(m & (fs.ModePerm)), Size: e.info.Size()}
		if m&fs.ModeSetuid != 0 {
			j.Perm |= 0o4000
		}
		if m&fs.ModeSetgid != 0 {
			j.Perm |= 0o2000
		}
		if m&fs.ModeSticky != 0 {
			j.Perm |= 0o1000
		}
		if t := e.info.ModTime(); !t.IsZero() {
			j.Mtime = t.UTC().Format(time.RFC3339Nano)
		}
		if m&fs.ModeSymlink != 0 {
			t, err := r.ReadLink(e.path)
			if err != nil {
				return err
			}
			j.Target = t
		}
		if uid, gid, ok := layer.OwnerOf(e.info); ok {
			if uid != layer.NoOwner {
				j.Uid = &uid
			}
			if gid != layer.NoOwner {
				j.Gid = &gid
			}
		}
		if s, ok := e.info.Sys().(layer.OwnerNamesSys); ok {
			j.User, j.Group = s.OwnerNames()
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// typeName names an entry's type in ls --json.
func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case layer.IsWhiteout(m):
		return "whiteout"
	case m.IsRegular():
		return "file"
	}
	return "other"
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
