package remote

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// diskCache is the local-directory level of the block cache
// (Options.CacheDir), shared by every object of a Bucket and by later
// processes given the same directory. Each block is one file,
//
//	DIR/OBJECT/BLOCK
//
// where OBJECT is a hash of the endpoint, bucket, key, ETag and block
// size, so that a replaced object never meets its predecessor's blocks,
// and BLOCK the block's number in decimal. A file holds the block's
// bytes and then their CRC-32C (4 bytes, little-endian). A file that is
// not exactly that long or whose CRC does not match is removed and the
// block fetched again: damage in the directory costs a request, never a
// wrong byte (and everything a pack reads is checked again by its own
// CRCs). Files are written whole under a temporary name and renamed.
//
// The directory is bounded: at a process's first write and after each
// eighth of the bound it writes, it looks at what the directory holds
// and, past the bound, removes the least recently used files (by
// modification time, which a hit refreshes) until three quarters of the
// bound remain; so it never holds more than 1.125 times the bound for
// long. Several processes may share a directory; each enforces the bound
// on what it finds there.
//
// A cache that cannot be written (a full disk, a read-only directory)
// is only a slower one: reads go on from the network.
type diskCache struct {
	dir   string
	limit int64

	// writers bounds the runs being written in the background; a run
	// that finds them all busy is not cached.
	writers chan struct{}
	pending sync.WaitGroup

	mu    sync.Mutex
	added int64 // bytes written since the last trim; the first put trims
}

const (
	diskCRCSize = 4
	// tmpPrefix begins the names of files being written; a scan removes
	// those left for over an hour by a process that died.
	tmpPrefix = ".tmp-"
)

func newDiskCache(dir string, limit int64) *diskCache {
	return &diskCache{dir: dir, limit: limit, added: limit, writers: make(chan struct{}, 4)}
}

// putRun stores the blocks of run, which begins with block lo, in the
// background, from a copy: the reader that fetched them does not wait
// for the disk, and may reuse run.
func (c *diskCache) putRun(id string, lo, bs int64, run []byte) {
	select {
	case c.writers <- struct{}{}:
	default:
		return
	}
	run = bytes.Clone(run)
	c.pending.Add(1)
	go func() {
		defer c.pending.Done()
		defer func() { <-c.writers }()
		for b := lo; len(run) > 0; b++ {
			n := min(int64(len(run)), bs)
			c.put(id, b, run[:n])
			run = run[n:]
		}
	}()
}

// objectID names one object's blocks.
func objectID(endpoint, bucket, key, etag string, bs int64) string {
	h := sha256.Sum256([]byte(endpoint + "\x00" + bucket + "\x00" + key + "\x00" + etag + "\x00" + strconv.FormatInt(bs, 10)))
	return hex.EncodeToString(h[:16])
}

func (c *diskCache) path(id string, b int64) string {
	return filepath.Join(c.dir, id, strconv.FormatInt(b, 10))
}

// get fills p with block b of object id and reports whether the
// directory held it, sound.
func (c *diskCache) get(id string, b int64, p []byte) bool {
	name := c.path(id, b)
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(p))+diskCRCSize {
		os.Remove(name)
		return false
	}
	var sum [diskCRCSize]byte
	if _, err := io.ReadFull(f, p); err != nil {
		return false
	}
	if _, err := io.ReadFull(f, sum[:]); err != nil || binary.LittleEndian.Uint32(sum[:]) != crc32.Checksum(p, castagnoli) {
		os.Remove(name)
		return false
	}
	now := time.Now()
	os.Chtimes(name, now, now) // least recently used goes first
	return true
}

// put stores block b of object id; failures are ignored (see diskCache).
func (c *diskCache) put(id string, b int64, p []byte) {
	size := int64(len(p)) + diskCRCSize
	if size > c.limit {
		return
	}
	dir := filepath.Join(c.dir, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return
	}
	var sum [diskCRCSize]byte
	binary.LittleEndian.PutUint32(sum[:], crc32.Checksum(p, castagnoli))
	_, err = f.Write(p)
	if err == nil {
		_, err = f.Write(sum[:])
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(id, b))
	}
	if err != nil {
		os.Remove(f.Name())
		return
	}
	c.mu.Lock()
	c.added += size
	trim := c.added > c.limit/8
	if trim {
		c.added = 0
	}
	c.mu.Unlock()
	if trim {
		c.trim()
	}
}

// trim removes the least recently used blocks while the directory holds
// more than its bound, down to three quarters of it.
func (c *diskCache) trim() {
	c.mu.Lock() // one trim at a time in this process
	defer c.mu.Unlock()
	type file struct {
		name  string
		size  int64
		mtime time.Time
	}
	var files []file
	var total int64
	objs, _ := os.ReadDir(c.dir)
	for _, o := range objs {
		if !o.IsDir() {
			continue
		}
		dir := filepath.Join(c.dir, o.Name())
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			name := filepath.Join(dir, e.Name())
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				if time.Since(fi.ModTime()) > time.Hour {
					os.Remove(name)
				}
				continue
			}
			files = append(files, file{name, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
		if len(ents) == 0 {
			os.Remove(dir)
		}
	}
	if total <= c.limit {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return a.mtime.Compare(b.mtime) })
	for _, f := range files {
		if total <= c.limit/4*3 {
			break
		}
		if err := os.Remove(f.name); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= f.size
		}
	}
}
