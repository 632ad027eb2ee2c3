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
// tree, and where in the log replay starts. It is replaced atomically.
type manifest struct {
	gen   uint64   // bumped by each checkpoint
	wal   uint64   // the first log segment to replay
	root  int64    // the root directory's mtime at the checkpoint, Unix ns
	mode  uint32   // the root directory's mode at the checkpoint (fs.FileMode)
	packs []string // the packs, top first
}

// encode writes the manifest as text, one field a line, its last line a
// CRC-32C of the ones before.
func (m *manifest) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "packfs-manifest 1\ngeneration %d\nwal %d\nroot %d\nmode %d\n", m.gen, m.wal, m.root, m.mode)
	for _, p := range m.packs {
		fmt.Fprintf(&b, "pack %s\n", p)
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
			if sc.Text() != "packfs-manifest 1" {
				return bad("unknown version line " + strconv.Quote(sc.Text()))
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
		case key == "pack" && vfs.ValidName(val) && strings.HasSuffix(val, ".pack"):
			m.packs = append(m.packs, val)
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

// readManifest reads the store's manifest.
func readManifest(dir vfs.FS) (manifest, error) {
	data, err := vfs.ReadFile(dir, manifestName)
	if err != nil {
		return manifest{}, err
	}
	return decodeManifest(data)
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
