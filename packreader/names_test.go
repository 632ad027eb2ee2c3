package packreader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"testing/fstest"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

type namedSys struct{}

func (namedSys) Owner() (uint32, uint32)      { return 5, 6 }
func (namedSys) OwnerNames() (string, string) { return "five", "six" }

func namedPack(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	m := fstest.MapFS{"f": {Data: []byte("data"), Sys: namedSys{}}}
	if err := packwriter.Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// refooter sets the footer's owner-names fields of pack and its CRC.
func refooter(pack []byte, pos, size uint64, first uint32) []byte {
	p := bytes.Clone(pack)
	foot := p[len(p)-packformat.FooterSize3:]
	binary.LittleEndian.PutUint64(foot[88:], pos)
	binary.LittleEndian.PutUint64(foot[96:], size)
	binary.LittleEndian.PutUint32(foot[104:], first)
	crc := crc32.Update(0, packformat.Castagnoli, p[:packformat.HeaderSize])
	crc = crc32.Update(crc, packformat.Castagnoli, foot[:packformat.FooterCRCLen3])
	binary.LittleEndian.PutUint32(foot[112:], crc)
	return p
}

// TestIssue16OwnerNamesHostile: footers that place the owner-names table
// outside the stream, or make it huge, fail at Open; a damaged table
// fails Verify and leaves Sys without names, never a panic.
func TestIssue16OwnerNamesHostile(t *testing.T) {
	pack := namedPack(t)
	r, err := packreader.OpenReaderAt(bytes.NewReader(pack), int64(len(pack)))
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := r.Stat("f")
	if s := fi.Sys().(*packreader.Sys); s.User != "five" || s.Group != "six" {
		t.Fatalf("names %q %q", s.User, s.Group)
	}
	foot, _ := packformat.DecodeFooter3(pack[len(pack)-packformat.FooterSize3:])
	r.Close()
	for name, p := range map[string][]byte{
		"past the stream": refooter(pack, foot.Stream, 8, 0),
		"huge":            refooter(pack, 0, 1<<40, 0),
		"bad frame":       refooter(pack, foot.NamesPos, foot.NamesSize, uint32(foot.FrameCount)),
		"size 0 at a pos": refooter(pack, 8, 0, 0),
	} {
		if _, err := packreader.OpenReaderAt(bytes.NewReader(p), int64(len(p))); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("%s: Open = %v, want ErrCorrupt", name, err)
		}
	}
	// A table of the wrong bytes: the file's content read as names.
	for name, p := range map[string][]byte{
		"not a table": refooter(pack, 0, 4, 0),
		"short":       refooter(pack, foot.NamesPos, foot.NamesSize-1, foot.NamesFirst),
	} {
		r, err := packreader.OpenReaderAt(bytes.NewReader(p), int64(len(p)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fi, err := r.Stat("f")
		if err != nil {
			t.Fatal(err)
		}
		if s := fi.Sys().(*packreader.Sys); s.Uid != 5 || s.User != "" {
			t.Errorf("%s: Sys %+v, want uid 5 without names", name, s)
		}
		if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
			t.Errorf("%s: Verify = %v, want ErrCorrupt", name, err)
		}
		r.Close()
	}
}
