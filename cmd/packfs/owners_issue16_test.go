package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/packwriter"
)

// namedOwner is a FileInfo.Sys with an owner and its names.
type namedOwner struct {
	uid, gid    uint32
	user, group string
}

func (s *namedOwner) Owner() (uint32, uint32)      { return s.uid, s.gid }
func (s *namedOwner) OwnerNames() (string, string) { return s.user, s.group }

// TestIssue16OwnerNamesCLI: ls -l shows the names a pack records, else
// the ids, else "-"; unpack as root gives an entry the id this machine
// has for its owner's name (tar's behaviour), the pack's id for a name it
// lacks, and the pack's ids throughout with -numeric-owner.
func TestIssue16OwnerNamesCLI(t *testing.T) {
	m := fstest.MapFS{
		"known":   {Data: []byte("k"), Mode: 0o644, Sys: &namedOwner{777, 778, "nobody", "nogroup"}},
		"unknown": {Data: []byte("u"), Mode: 0o644, Sys: &namedOwner{888, 889, "no-such-user-here", "no-such-group-here"}},
		"ids":     {Data: []byte("i"), Mode: 0o644, Sys: &namedOwner{uid: 4242, gid: 4343}},
		"none":    {Data: []byte("n"), Mode: 0o644},
	}
	pack := filepath.Join(t.TempDir(), "o.pack")
	if err := packwriter.WriteFile(pack, m); err != nil {
		t.Fatal(err)
	}
	out := runOK(t, "ls", "-l", pack)
	for _, want := range []string{" nobody            nogroup ", " no-such-user-here no-such-group-here ", " 4242              4343 ", " -                 - "} {
		if !strings.Contains(out, want) {
			t.Errorf("ls -l lacks %q:\n%s", want, out)
		}
	}
	if os.Geteuid() != 0 {
		return // unpack restores owners as root only
	}
	owner := func(dir, name string) [2]uint32 {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return [2]uint32{st.Uid, st.Gid}
	}
	byName := filepath.Join(t.TempDir(), "out")
	runOK(t, "unpack", pack, byName)
	numeric := filepath.Join(t.TempDir(), "out")
	runOK(t, "unpack", "-numeric-owner", pack, numeric)
	for _, c := range []struct {
		name            string
		byName, numeric [2]uint32
	}{
		{"known", [2]uint32{localID(t, false, "nobody", 777), localID(t, true, "nogroup", 778)}, [2]uint32{777, 778}},
		{"unknown", [2]uint32{888, 889}, [2]uint32{888, 889}},
		{"ids", [2]uint32{4242, 4343}, [2]uint32{4242, 4343}},
	} {
		if got := owner(byName, c.name); got != c.byName {
			t.Errorf("unpack: %s owned by %v, want %v", c.name, got, c.byName)
		}
		if got := owner(numeric, c.name); got != c.numeric {
			t.Errorf("unpack -numeric-owner: %s owned by %v, want %v", c.name, got, c.numeric)
		}
	}
}

// localID returns this machine's id for the user (or group) name, or def
// where it has none.
func localID(t *testing.T, group bool, name string, def uint32) uint32 {
	var id string
	if group {
		g, err := user.LookupGroup(name)
		if err != nil {
			return def
		}
		id = g.Gid
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return def
		}
		id = u.Uid
	}
	v, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}
