package packreader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"
	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// fillCounter counts the reads and bytes through it, and fails the
// reads while fail is set.
type fillCounter struct {
	ra           io.ReaderAt
	reads, bytes atomic.Int64
	fail         atomic.Bool
}

var errInjected = errors.New("injected read error")

func (c *fillCounter) ReadAt(p []byte, off int64) (int, error) {
	if c.fail.Load() {
		return 0, errInjected
	}
	c.reads.Add(1)
	c.bytes.Add(int64(len(p)))
	return c.ra.ReadAt(p, off)
}

// TestIssue18TablesOnFirstTouch: a pack opened through an io.ReaderAt
// reads header, footer, the root block and its check-table entry at open,
// whatever its number of entries; a walk then reads each 64 KiB of the
// tables it touches once, and a second walk reads nothing.
func TestIssue18TablesOnFirstTouch(t *testing.T) {
	data := packOf(t, wideTree(20000))
	f, _, _ := packLayout3(data)
	tables := int64(len(data)) - int64(f.IndexOff)
	c := &fillCounter{ra: bytes.NewReader(data)}
	r, err := packreader.OpenReaderAt(c, int64(len(data)))
	must(t, err)
	defer r.Close()
	if n, b := c.reads.Load(), c.bytes.Load(); n > 4 || b > 4096+256 {
		t.Errorf("open: %d reads, %d bytes; want ≤ 4 reads, ≤ 4,352 bytes (tables: %d bytes)", n, b, tables)
	}
	walk := func() int {
		n := 0
		must(t, fs.WalkDir(r, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			_, err = d.Info()
			n++
			return err
		}))
		return n
	}
	if n := walk(); n != 20000+6 {
		t.Fatalf("walk: %d entries", n)
	}
	reads, moved := c.reads.Load(), c.bytes.Load()
	t.Logf("open and walk: %d reads, %d bytes of %d", reads, moved, tables)
	if moved > tables+4096+256 {
		t.Errorf("walk read %d bytes, more than the tables' %d", moved, tables)
	}
	walk()
	if c.reads.Load() != reads {
		t.Errorf("second walk: %d more reads, want 0", c.reads.Load()-reads)
	}
	got, err := r.ReadFile("d/f01234")
	if err != nil || string(got) != "content 34\n" {
		t.Fatalf("ReadFile: %q, %v", got, err)
	}
	if n := c.reads.Load() - reads; n != 1 {
		t.Errorf("a small file after the walk: %d reads, want 1 (its content)", n)
	}
	must(t, r.Verify())
}

// TestIssue18FillError: a read that fails while a table is filled gives
// its error, not ErrCorrupt, and leaves the pack as it was: the next
// touch reads the tables again and succeeds.
func TestIssue18FillError(t *testing.T) {
	data := packOf(t, wideTree(5000))
	c := &fillCounter{ra: bytes.NewReader(data)}
	r, err := packreader.OpenReaderAt(c, int64(len(data)))
	must(t, err)
	defer r.Close()
	c.fail.Store(true)
	if _, err := r.Stat("d/f04000"); !errors.Is(err, errInjected) || errors.Is(err, packreader.ErrCorrupt) {
		t.Fatalf("Stat with failing reads: %v, want the read's error", err)
	}
	if _, err := r.ReadDir("d"); !errors.Is(err, errInjected) {
		t.Fatalf("ReadDir with failing reads: %v, want the read's error", err)
	}
	c.fail.Store(false)
	if fi, err := r.Stat("d/f04000"); err != nil || fi.Size() != int64(len("content 0\n")) {
		t.Fatalf("Stat after: %v, %v", fi, err)
	}
	ents, err := r.ReadDir("d")
	if err != nil || len(ents) != 5000 {
		t.Fatalf("ReadDir after: %d entries, %v", len(ents), err)
	}
	must(t, r.Verify())
}

// TestIssue18ConcurrentFills has goroutines race to the first touch of
// every table group of a pack read through an io.ReaderAt (run with
// -race): every answer is right, and no group is read twice.
func TestIssue18ConcurrentFills(t *testing.T) {
	var zbuf bytes.Buffer
	must(t, packwriter.Write(&zbuf, wideTree(8000), packwriter.WithCompression(3)))
	t.Run("raw", func(t *testing.T) { concurrentFills(t, packOf(t, wideTree(8000)), false) })
	t.Run("packed", func(t *testing.T) { concurrentFills(t, zbuf.Bytes(), false) })
	t.Run("packed-mapped", func(t *testing.T) { concurrentFills(t, zbuf.Bytes(), true) })
}

func concurrentFills(t *testing.T, data []byte, mapped bool) {
	f, _, _ := packLayout3(data)
	tables := int64(len(data)) - int64(f.IndexOff)
	for range 4 {
		c := &fillCounter{ra: bytes.NewReader(data)}
		r, err := packreader.OpenReaderAt(c, int64(len(data)))
		if mapped {
			r.Close()
			r = openBoth(t, data)["mmap"]
		}
		must(t, err)
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 8000 {
					k := (i*7 + g*1331) % 8000
					p := fmt.Sprintf("d/f%05d", k)
					if g%2 == 0 {
						if _, err := r.Stat(p); err != nil {
							t.Errorf("Stat(%s): %v", p, err)
							return
						}
						continue
					}
					if k%97 == 0 {
						b, err := r.ReadFile(p)
						if want := fmt.Sprintf("content %d\n", k%50); err != nil || string(b) != want {
							t.Errorf("ReadFile(%s): %q, %v", p, b, err)
							return
						}
					}
				}
				if _, err := r.ReadDir("d"); err != nil {
					t.Errorf("ReadDir: %v", err)
				}
			}()
		}
		wg.Wait()
		must(t, r.Verify())
		// Verify read the contents; the tables were read once.
		if !mapped {
			must(t, r.Close())
		}
		if c.bytes.Load() > tables+int64(len(data)) {
			t.Errorf("read %d bytes for a pack of %d", c.bytes.Load(), len(data))
		}
	}
}

// packLayout3 decodes the layout of a pack of either version.
func packLayout3(data []byte) (packformat.Footer, uint64, uint64) {
	tl, ok, err := packformat.ReadTail(bytes.NewReader(data), int64(len(data)))
	if !ok || err != nil {
		panic(fmt.Sprintf("not a pack: %v", err))
	}
	return tl.Footer, tl.TableOff, tl.TableSize
}

// TestIssue16CraftedGroupHeader: a group of packed tables whose zstd
// frame decodes to more than the group's raw size fails as corrupt,
// without the reader allocating what the frame claims, and a group
// directory entry out of order fails too.
func TestIssue16CraftedGroupHeader(t *testing.T) {
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, wideTree(3000), packwriter.WithCompression(3)))
	orig := buf.Bytes()
	tl, ok, err := packformat.ReadTail(bytes.NewReader(orig), int64(len(orig)))
	if !ok || err != nil || binary.LittleEndian.Uint32(orig[16:])&packformat.FlagPackedTables == 0 {
		t.Fatalf("not a pack with packed tables: %v", err)
	}
	f := tl.Footer
	end0 := binary.LittleEndian.Uint64(orig[f.GroupsOff:])
	enc, err := zstd.NewWriter(nil)
	must(t, err)
	bomb := enc.EncodeAll(make([]byte, packformat.MaxFrame), nil)
	if uint64(len(bomb)) > end0 {
		t.Fatalf("bomb of %d bytes does not fit in group 0's %d", len(bomb), end0)
	}
	data := bytes.Clone(orig)
	copy(data[f.IndexOff:], bomb)
	clear(data[f.IndexOff+uint64(len(bomb)) : f.IndexOff+end0])
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, packreader.ErrCorrupt) {
		t.Fatalf("open with a bomb in group 0: %v, want ErrCorrupt", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2<<20 && !raceEnabled {
		t.Errorf("refusing the group allocated %d bytes", got)
	}
	// Group 1 ending before group 0.
	data = bytes.Clone(orig)
	binary.LittleEndian.PutUint64(data[f.GroupsOff+packformat.GroupEntrySize:], end0-1)
	r, err := packreader.OpenReaderAt(bytes.NewReader(data), int64(len(data)))
	must(t, err)
	defer r.Close()
	if err := r.Verify(); !errors.Is(err, packreader.ErrCorrupt) {
		t.Errorf("Verify with a group out of order: %v, want ErrCorrupt", err)
	}
	if _, err := r.ReadDir("d"); !errors.Is(err, packreader.ErrCorrupt) {
		t.Errorf("ReadDir with a group out of order: %v, want ErrCorrupt", err)
	}
}

// TestIssue16PackedTables: a compressed pack stores its tables in
// compressed groups, smaller than them raw (a quarter here, where the
// writer pads to MaxTablesRatio); it reads the same mapped and through
// an io.ReaderAt, and its raw-table equivalent reads the same.
func TestIssue16PackedTables(t *testing.T) {
	tree := wideTree(20000)
	var buf bytes.Buffer
	must(t, packwriter.Write(&buf, tree, packwriter.WithCompression(3)))
	packed := buf.Bytes()
	raw, err := packformat.UnpackTables(packed)
	must(t, err)
	t.Logf("packed tables: pack of %d bytes; with raw tables %d", len(packed), len(raw))
	if len(packed)*4 > len(raw) {
		t.Errorf("pack of %d bytes, %d with raw tables: want under a quarter", len(packed), len(raw))
	}
	want := dump(t, tree)
	for how, r := range openBoth(t, packed) {
		must(t, r.Verify())
		if diff := cmp.Diff(want, dump(t, r)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", how, diff)
		}
	}
	// (It has no SHA-256 prefixes, which Verify asks of raw tables.)
	for how, r := range openBoth(t, raw) {
		if diff := cmp.Diff(want, dump(t, r)); diff != "" {
			t.Errorf("raw tables, %s (-want +got):\n%s", how, diff)
		}
	}
}
