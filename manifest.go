package packfs

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/vfs"
)

// The files of a store directory.
const (
	manifestName = "MANIFEST"
	lockName     = "LOCK"
	tmpSuffix    = ".tmp"
)

func packName(gen uint64) string { return fmt.Sprintf("pack-%016x.pack", gen) }

// manifest is the store's durable root: which packs hold the checkpointed
// tree, and where in the log replay starts. It is replaced atomically
// (writeAtomic). Its format is text, one field a line, in this order:
//
//	packfs-manifest 2       the version: 1 or 2
//	generation 7            bumped by each checkpoint
//	wal 12                  the first log segment to replay (decimal id)
//	root 1764582000000000000  the root directory's mtime, Unix ns
//	mode 2147484141         the root directory's fs.FileMode
//	pack pack-…07.pack 4096 1a2b3c4d   one line a pack, top first
//	lower pack 8192 9c8d7e6f  version 3: one line a lower layer, top first
//	crc32c 5e6f7a8b         CRC-32C of every byte before this line
//
// Version 2 records what must exist for no acknowledged change to be
// missing: each pack's size in bytes and its sum (packSum) in eight hex
// digits, and, by its version alone, that segment wal was made durable
// before the manifest, which Open then requires of the log
// (wal.Options.FirstExists). Version 1 lists packs by name alone and
// promises nothing of the segment; it is still read, with neither check,
// and the next checkpoint writes version 2. Code that reads only version
// 1 refuses version 2 as an unknown version line (ErrCorrupt).
//
// Version 3 is version 2 with the store's read-only lower layers
// (Options.Lowers), which the log's changes were made over: a lower that
// can say which pack it is (a Sum method, as packreader.Reader has) is
// "lower pack SIZE SUM", any other "lower other". It is written only for
// a store that has lowers, so that code reading versions 1 and 2 refuses
// a store it would show without them, and reads every other.
type manifest struct {
	version int
	gen     uint64     // bumped by each checkpoint
	wal     uint64     // the first log segment to replay
	root    int64      // the root directory's mtime at the checkpoint, Unix ns
	mode    uint32     // the root directory's mode at the checkpoint (fs.FileMode)
	packs   []packRef  // the packs, top first
	lowers  []lowerRef // the lower layers beneath the packs, top first
}

// lowerRef is what the manifest records of a lower layer: a pack's size
// and sum (see packreader.Reader.Sum), or nothing but that one is there.
type lowerRef struct {
	pack bool
	size int64
	sum  uint32
}

func (l lowerRef) String() string {
	if l.pack {
		return fmt.Sprintf("a pack of %d bytes, sum %08x", l.size, l.sum)
	}
	return "a layer other than a pack"
}

// manifestVersion is the version this code writes for a store without
// lowers; one with lowers takes version 3.
const manifestVersion = 2

// packRef names a pack and, from version 2, what it must be: its size,
// and the CRC-32C of its check table and footer (see packSum).
type packRef struct {
	name  string
	size  int64
	sum   uint32
	known bool // size and sum were recorded
}

// has reports whether the manifest lists the pack name.
func (m *manifest) has(name string) bool {
	for _, p := range m.packs {
		if p.name == name {
			return true
		}
	}
	return false
}

// encode writes the manifest as text, one field a line, its last line a
// CRC-32C of the ones before. It writes version 2, which needs every
// pack's size and sum.
func (m *manifest) encode() []byte {
	var b bytes.Buffer
	version := manifestVersion
	if len(m.lowers) > 0 {
		version = 3
	}
	fmt.Fprintf(&b, "packfs-manifest %d\ngeneration %d\nwal %d\nroot %d\nmode %d\n", version, m.gen, m.wal, m.root, m.mode)
	for _, p := range m.packs {
		fmt.Fprintf(&b, "pack %s %d %08x\n", p.name, p.size, p.sum)
	}
	for _, l := range m.lowers {
		if l.pack {
			fmt.Fprintf(&b, "lower pack %d %08x\n", l.size, l.sum)
		} else {
			b.WriteString("lower other\n")
		}
	}
	fmt.Fprintf(&b, "crc32c %08x\n", crc32.Checksum(b.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	return b.Bytes()
}

func decodeManifest(data []byte) (manifest, error) {
	var m manifest
	bad := func(why string) (manifest, error) {
		return manifest{}, fmt.Errorf("%w: %s: %s", ErrCorrupt, manifestName, why)
	}
	i := bytes.LastIndex(data, []byte("crc32c "))
	if i < 0 || !bytes.HasSuffix(data, []byte("\n")) {
		return bad("no checksum line")
	}
	sum, err := strconv.ParseUint(strings.TrimSpace(string(data[i+7:])), 16, 32)
	if err != nil || uint32(sum) != crc32.Checksum(data[:i], crc32.MakeTable(crc32.Castagnoli)) {
		return bad("checksum mismatch")
	}
	sc := bufio.NewScanner(bytes.NewReader(data[:i]))
	line := 0
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		var err error
		switch {
		case line == 0:
			switch sc.Text() {
			case "packfs-manifest 1":
				m.version = 1
			case "packfs-manifest 2":
				m.version = 2
			case "packfs-manifest 3":
				m.version = 3
			default:
				return bad("unknown version line " + strconv.Quote(sc.Text()) + " (this code reads versions 1 to 3)")
			}
		case key == "generation":
			m.gen, err = strconv.ParseUint(val, 10, 64)
		case key == "wal":
			m.wal, err = strconv.ParseUint(val, 10, 64)
		case key == "root":
			m.root, err = strconv.ParseInt(val, 10, 64)
		case key == "mode":
			var v uint64
			v, err = strconv.ParseUint(val, 10, 32)
			m.mode = uint32(v)
		case key == "pack":
			p, ok := parsePackRef(val, m.version)
			if !ok {
				return bad("bad pack line " + strconv.Quote(sc.Text()))
			}
			m.packs = append(m.packs, p)
		case key == "lower" && m.version >= 3:
			l, ok := parseLowerRef(val)
			if !ok {
				return bad("bad lower line " + strconv.Quote(sc.Text()))
			}
			m.lowers = append(m.lowers, l)
		default:
			return bad("unknown line " + strconv.Quote(sc.Text()))
		}
		if err != nil {
			return bad(err.Error())
		}
		line++
	}
	if line < 5 || !fs.FileMode(m.mode).IsDir() {
		return bad("missing fields")
	}
	return m, nil
}

// parseLowerRef parses a lower line's value: "pack SIZE SUM" or "other".
func parseLowerRef(val string) (lowerRef, bool) {
	f := strings.Fields(val)
	switch {
	case strings.Join(f, " ") != val:
	case len(f) == 1 && f[0] == "other":
		return lowerRef{}, true
	case len(f) == 3 && f[0] == "pack" && len(f[2]) == 8:
		size, err1 := strconv.ParseInt(f[1], 10, 64)
		sum, err2 := strconv.ParseUint(f[2], 16, 32)
		if err1 == nil && err2 == nil && size >= 0 {
			return lowerRef{pack: true, size: size, sum: uint32(sum)}, true
		}
	}
	return lowerRef{}, false
}

// parsePackRef parses a pack line's value: a name, and from version 2 a
// size in decimal and a sum in hexadecimal.
func parsePackRef(val string, version int) (packRef, bool) {
	f := strings.Fields(val)
	if len(f) == 0 || !vfs.ValidName(f[0]) || !strings.HasSuffix(f[0], ".pack") || strings.Join(f, " ") != val {
		return packRef{}, false
	}
	p := packRef{name: f[0]}
	switch {
	case version == 1 && len(f) == 1:
		return p, true
	case version >= 2 && len(f) == 3:
		size, err1 := strconv.ParseInt(f[1], 10, 64)
		sum, err2 := strconv.ParseUint(f[2], 16, 32)
		if err1 != nil || err2 != nil || size < 0 || len(f[2]) != 8 {
			return packRef{}, false
		}
		p.size, p.sum, p.known = size, uint32(sum), true
		return p, true
	}
	return packRef{}, false
}

// packSum returns the size of the pack name and its sum: the CRC-32C of
// its check table and footer. The footer pins the pack's layout, and the
// check table holds a CRC-32C of every block of its index, which holds
// the CRC-32C of every content: so another pack, even one of the same
// tree shape, has another sum, while computing it reads only a few bytes
// per 4 KiB of index (O(1) in the contents). A pack whose footer is not
// one gives ErrCorrupt.
func packSum(dir vfs.FS, name string) (int64, uint32, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, 0, err
	}
	bad := func(why string) (int64, uint32, error) {
		return 0, 0, fmt.Errorf("%w: %s: %s", ErrCorrupt, name, why)
	}
	if size < packformat.HeaderSize+packformat.FooterSize {
		return bad(fmt.Sprintf("%d bytes, too short for a pack", size))
	}
	tableOff, _, ok, err := packformat.CheckTable(f, size)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return bad("no pack footer, or one that places the check table outside the file (truncated?)")
	}
	tail := make([]byte, uint64(size)-tableOff)
	if _, err := f.ReadAt(tail, int64(tableOff)); err != nil {
		return 0, 0, err
	}
	return size, crc32.Checksum(tail, packformat.Castagnoli), nil
}

// writeAtomic replaces the file name by data, or by what write writes,
// atomically and durably: it writes a temporary file, syncs it, renames it
// over name and syncs the directory.
func writeAtomic(dir vfs.FS, name string, write func(io.Writer) error) error {
	tmp := name + tmpSuffix
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		dir.Remove(tmp)
		return err
	}
	return dir.SyncDir()
}

func writeManifest(dir vfs.FS, m manifest) error {
	return writeAtomic(dir, manifestName, func(w io.Writer) error {
		_, err := w.Write(m.encode())
		return err
	})
}
