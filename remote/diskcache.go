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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// bytes and then a CRC-32C of its name and bytes (4 bytes,
// little-endian). A file that is not exactly that long, is not a
// regular file, or whose CRC does not match is removed and the block
// fetched again: damage in the directory, or a file under another
// block's name, costs a request, not a wrong byte (and everything a pack
// reads is checked again by its own CRCs). The CRC guards against
// accidents, not forgery: the directory is trusted as the user's own
// files are (it is made with mode 0700). Files are written whole under
// a temporary name and renamed, and every access goes through an
// os.Root, so that no symlink leads out of the directory.
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

	once sync.Once
	root *os.Root // nil if dir could not be made or opened

	// writers bounds the runs being written in the background; a run
	// that finds them all busy is not cached.
	writers chan struct{}
	pending sync.WaitGroup

	mu    sync.Mutex
	added int64 // bytes written since the last trim; the first put trims
	tmp   atomic.Uint64
}

const (
	diskCRCSize = 4
	// tmpPrefix begins the names of files being written; a trim removes
	// those left for over an hour by a process that died.
	tmpPrefix = ".tmp-"
)

func newDiskCache(dir string, limit int64) *diskCache {
	return &diskCache{dir: dir, limit: limit, added: limit, writers: make(chan struct{}, 4)}
}

// open makes and opens the directory on first use. Every later access
// goes through the os.Root, so a symlink in the directory cannot lead a
// read or a write out of it.
func (c *diskCache) open() *os.Root {
	c.once.Do(func() {
		if err := os.MkdirAll(c.dir, 0o700); err != nil {
			return
		}
		c.root, _ = os.OpenRoot(c.dir)
	})
	return c.root
}

// objectID names one object's blocks.
func objectID(endpoint, bucket, key, etag string, bs int64) string {
	h := sha256.Sum256([]byte(endpoint + "\x00" + bucket + "\x00" + key + "\x00" + etag + "\x00" + strconv.FormatInt(bs, 10)))
	return hex.EncodeToString(h[:16])
}

// blockName is block b's file, relative to the directory.
func blockName(id string, b int64) string { return id + "/" + strconv.FormatInt(b, 10) }

// blockSum is the CRC-32C a block file ends with: of its name, then its
// bytes, so that a file copied or linked under another block's name
// does not pass.
func blockSum(name string, p []byte) uint32 {
	return crc32.Update(crc32.Checksum([]byte(name), castagnoli), castagnoli, p)
}

// get fills p with block b of object id and reports whether the
// directory held it, sound.
func (c *diskCache) get(id string, b int64, p []byte) bool {
	root := c.open()
	if root == nil {
		return false
	}
	name := blockName(id, b)
	fi, err := root.Lstat(name)
	if err != nil {
		return false
	}
	if !fi.Mode().IsRegular() || fi.Size() != int64(len(p))+diskCRCSize {
		root.RemoveAll(name)
		return false
	}
	f, err := root.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var sum [diskCRCSize]byte
	if _, err := io.ReadFull(f, p); err != nil {
		return false
	}
	if _, err := io.ReadFull(f, sum[:]); err != nil || binary.LittleEndian.Uint32(sum[:]) != blockSum(name, p) {
		root.Remove(name)
		return false
	}
	now := time.Now()
	root.Chtimes(name, now, now) // least recently used goes first
	return true
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

// put stores block b of object id; failures are ignored (see diskCache).
func (c *diskCache) put(id string, b int64, p []byte) {
	size := int64(len(p)) + diskCRCSize
	root := c.open()
	if root == nil || size > c.limit {
		return
	}
	if err := root.MkdirAll(id, 0o700); err != nil {
		return
	}
	name := blockName(id, b)
	tmp := id + "/" + tmpPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(c.tmp.Add(1), 10)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return
	}
	var sum [diskCRCSize]byte
	binary.LittleEndian.PutUint32(sum[:], blockSum(name, p))
	_, err = f.Write(p)
	if err == nil {
		_, err = f.Write(sum[:])
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
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
		c.trim(root)
	}
}

// trim removes the least recently used blocks while the directory holds
// more than its bound, down to three quarters of it.
func (c *diskCache) trim(root *os.Root) {
	c.mu.Lock() // one trim at a time in this process
	defer c.mu.Unlock()
	type file struct {
		name  string
		size  int64
		mtime time.Time
	}
	var files []file
	var total int64
	fsys := root.FS()
	objs, _ := fs.ReadDir(fsys, ".")
	for _, o := range objs {
		if !o.IsDir() {
			continue
		}
		ents, _ := fs.ReadDir(fsys, o.Name())
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			name := o.Name() + "/" + e.Name()
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				if time.Since(fi.ModTime()) > time.Hour {
					root.Remove(name)
				}
				continue
			}
			files = append(files, file{name, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
		if len(ents) == 0 {
			root.Remove(o.Name())
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
		if err := root.Remove(f.name); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= f.size
		}
	}
}
