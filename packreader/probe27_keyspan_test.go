package packreader_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/packfs/packfs/internal/packformat"
	"github.com/packfs/packfs/internal/pathwalk"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// probe27Model is an undamaged pack parsed by hand: its records, names
// and keys, and where its tables and check table lie.
type probe27Model struct {
	data                            []byte
	count                           uint64
	indexOff, keysOff, strOff, tabO uint64
	strSize                         uint64
	recs                            []packformat.Record
	names                           []string
	keyBase, strBase                uint64
	byPath                          map[string]uint64 // path -> record
	paths                           []string          // record -> path
}

func probe27Parse(t testing.TB, data []byte) *probe27Model {
	t.Helper()
	fs := packformat.FooterSizeOf(data[:packformat.HeaderSize])
	tl, ok := packformat.DecodeTail(data[:packformat.HeaderSize], data[uint64(len(data))-fs:], int64(len(data)))
	if !ok {
		t.Fatal("bad tail")
	}
	f := tl.Footer
	m := &probe27Model{data: data, count: f.Count, indexOff: f.IndexOff, keysOff: f.IndexOff + f.Count*packformat.RecordSize,
		strOff: f.StringsOff, strSize: f.StringsSize, tabO: tl.TableOff, byPath: map[string]uint64{}}
	m.keyBase = packformat.Blocks(f.Count * packformat.RecordSize)
	m.strBase = m.keyBase + packformat.Blocks(f.Count*packformat.KeySize)
	m.recs = make([]packformat.Record, f.Count)
	m.names = make([]string, f.Count)
	m.paths = make([]string, f.Count)
	for i := range f.Count {
		rc, _ := packformat.DecodeRecord(data[f.IndexOff+i*packformat.RecordSize:])
		m.recs[i] = rc
		m.names[i] = string(data[f.StringsOff+uint64(rc.NameOff) : f.StringsOff+uint64(rc.NameOff)+uint64(rc.NameLen)])
		if k := binary.BigEndian.Uint64(data[m.keysOff+8*i:]); i > 0 && k != packformat.Key(m.names[i]) {
			t.Fatalf("key %d does not match %q", i, m.names[i])
		}
	}
	for i := range f.Count {
		rc := m.recs[i]
		if rc.Type == packformat.TypeDir {
			for c := rc.Off; c < rc.Off+rc.Size; c++ {
				p := m.names[c]
				if i != 0 {
					p = m.paths[i] + "/" + p
				}
				m.paths[c] = p
				m.byPath[p] = c
			}
		}
	}
	return m
}

// block is a table block: region 0 index, 1 keys, 2 strings.
type probe27Block struct {
	region int
	k      uint64
}

func (b probe27Block) String() string {
	return fmt.Sprintf("%s block %d", []string{"index", "key", "string"}[b.region], b.k)
}

func (m *probe27Model) blocks(region int) uint64 {
	switch region {
	case 0:
		return packformat.Blocks(m.count * packformat.RecordSize)
	case 1:
		return packformat.Blocks(m.count * packformat.KeySize)
	}
	return packformat.Blocks(m.strSize)
}

// flipAt returns the offset of a byte of block b (data) or of its
// check-table entry (table).
func (m *probe27Model) flipAt(b probe27Block, table bool, rng *rand.Rand) uint64 {
	if table {
		base := []uint64{0, m.keyBase, m.strBase}[b.region]
		return m.tabO + 4*(base+b.k) + uint64(rng.IntN(4))
	}
	start := []uint64{m.indexOff, m.keysOff, m.strOff}[b.region]
	size := []uint64{m.count * packformat.RecordSize, m.count * packformat.KeySize, m.strSize}[b.region]
	lo := b.k * packformat.BlockSize
	hi := min(lo+packformat.BlockSize, size)
	return start + lo + uint64(rng.IntN(int(hi-lo)))
}

// probe27Result is what a lookup of the model gives: the record found
// (found), and whether the lookup must fail as corrupt (mapped packs:
// exactly the lookups whose probes read a damaged block) or may (lazy
// packs, which compare names rather than keys not yet fetched).
type probe27Result struct {
	i              uint64
	found          bool
	mustErr        bool
	mayErr         bool
	touchedDamaged []probe27Block
}

// lookup simulates packreader's binary search of name among directory
// d's children, as the undamaged pack steers it, noting which damaged
// blocks the probes read.
func (m *probe27Model) lookup(d uint64, name string, handle bool, bad map[probe27Block]bool) (res probe27Result) {
	if handle && bad[probe27Block{0, d / packformat.RecordsPerBlock}] {
		res.mustErr, res.mayErr = true, true
	}
	dr := m.recs[d]
	lo, hi := dr.Off, dr.Off+dr.Size
	key := packformat.Key(name)
	for lo < hi {
		mid := lo + (hi-lo)/2
		kb := probe27Block{1, mid / (packformat.BlockSize / packformat.KeySize)}
		ib := probe27Block{0, mid / packformat.RecordsPerBlock}
		var sbs []probe27Block
		rc := m.recs[mid]
		if rc.NameLen > 0 {
			for s := uint64(rc.NameOff) / packformat.BlockSize; s <= (uint64(rc.NameOff)+uint64(rc.NameLen)-1)/packformat.BlockSize; s++ {
				sbs = append(sbs, probe27Block{2, s})
			}
		}
		// Lazy: any of these may be read by the probe.
		for _, b := range append([]probe27Block{kb, ib}, sbs...) {
			if bad[b] {
				res.mayErr = true
				res.touchedDamaged = append(res.touchedDamaged, b)
			}
		}
		// Mapped: exactly these.
		if !res.mustErr {
			if bad[kb] {
				res.mustErr = true
			}
		}
		k := binary.BigEndian.Uint64(m.data[m.keysOff+8*mid:])
		c := 0
		switch {
		case k < key:
			c = -1
		case k > key:
			c = 1
		}
		if c == 0 {
			if !res.mustErr && bad[ib] {
				res.mustErr = true
			}
			for _, s := range sbs {
				if !res.mustErr && bad[s] {
					res.mustErr = true
				}
			}
			c = strings.Compare(m.names[mid], name)
		}
		switch {
		case c < 0:
			lo = mid + 1
		case c > 0:
			hi = mid
		default:
			res.i, res.found = mid, true
			return res
		}
	}
	return res
}

// probe27Tree is a tree with directories of 1 to 3,000 entries, a root
// of nroot files beside them (which shifts where each directory's key
// span falls against block boundaries), and a directory of names that
// share their first 8 bytes.
func probe27Tree(nroot int) (fstest.MapFS, []string) {
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	m := fstest.MapFS{}
	n := 0
	add := func(p string) {
		m[p] = &fstest.MapFile{Mode: 0o644, ModTime: t0.Add(time.Duration(n) * time.Second)}
		n++
	}
	for i := range nroot {
		add(fmt.Sprintf("r%05d", i))
	}
	var dirs []string
	for _, size := range []int{1, 2, 3, 5, 63, 64, 65, 500, 511, 512, 513, 1000, 1024, 1536, 2000, 2047, 2048, 2049, 3000} {
		d := fmt.Sprintf("s%04d", size)
		dirs = append(dirs, d)
		for i := range size {
			add(fmt.Sprintf("%s/n%05d", d, 2*i+1)) // odd numbers: the even ones fall between
		}
	}
	dirs = append(dirs, "samepfx")
	for i := range 600 {
		add(fmt.Sprintf("samepfx/prefix8_%04d", 2*i+1))
	}
	add("samepfx/prefix8_")
	add("samepfx/prefix8")
	add("samepfx/prefix")
	add("samepfx/prefix8_~")
	return m, dirs
}

// probe27Queries returns the names to look up in directory d of the
// model: its names (all of them or a sample), names before, after and
// among them, names sharing 8-byte prefixes with them, and names of
// other directories.
func (m *probe27Model) probe27Queries(d uint64, rng *rand.Rand) []string {
	dr := m.recs[d]
	var q []string
	q = append(q, "0", "A", "a", "n", "n0", "n00000", "n99999", "zzzzzzzzzzzz", "~", "~~~~~~~~~~", "prefix8_0000",
		"prefix8_", "prefix8_\x7f", "prefix8_99999", "prefix7", "prefi", "r00000", "r99999", "s0001", "s9999", "samepfx")
	for c := dr.Off; c < dr.Off+dr.Size; c++ {
		if dr.Size <= 70 || rng.IntN(int(dr.Size)) < 25 || c == dr.Off || c == dr.Off+dr.Size-1 {
			n := m.names[c]
			q = append(q, n, n+"0", n+"~", n[:len(n)-1])
			if len(n) > 8 {
				q = append(q, n[:8], n[:8]+"\x01", n[:8]+"~")
			}
		}
	}
	return q
}

type probe27Pack struct {
	name string
	data []byte
	dirs []string
}

var probe27Packs = sync.OnceValues(func() ([]probe27Pack, error) {
	var out []probe27Pack
	for _, c := range []struct {
		name  string
		nroot int
		opts  []packwriter.Option
	}{
		{"v2-root1500", 1500, []packwriter.Option{packwriter.WithFormat(2)}},
		{"v3-root1237", 1237, nil},
		{"v3zstd-unpacked-root100", 100, []packwriter.Option{packwriter.WithCompression(3)}},
	} {
		tree, dirs := probe27Tree(c.nroot)
		var buf bytes.Buffer
		if err := packwriter.Write(&buf, tree, c.opts...); err != nil {
			return nil, err
		}
		data, err := packformat.UnpackTables(buf.Bytes())
		if err != nil {
			return nil, err
		}
		out = append(out, probe27Pack{c.name, data, dirs})
	}
	return out, nil
})

// probe27Good is the undamaged reader's answer to a lookup.
type probe27Good struct {
	e   pathwalk.Entry
	err error
}

// probe27Check looks up qs in directory d of r (handle: through the
// directory's LookupAt handle, else the root's nil) and compares each
// answer with the model's and the undamaged reader's (goods).
func probe27Check(t *testing.T, label string, m *probe27Model, r *packreader.Reader, goods []probe27Good, d uint64, qs []string, bad map[probe27Block]bool, lazy bool, stats *[3]int) (fails int) {
	var dir pathwalk.Dir
	if d != 0 {
		dir = d
	}
	for k, q := range qs {
		want := m.lookup(d, q, d != 0, bad)
		ge, gerr := goods[k].e, goods[k].err
		if (gerr == nil) != want.found {
			t.Errorf("%s: model: %q in %q found %v, undamaged reader: %v", label, q, m.paths[d], want.found, gerr)
			fails++
			continue
		}
		e, err := r.LookupAt(dir, q)
		switch {
		case err != nil && errors.Is(err, packreader.ErrCorrupt):
			stats[0]++
			if !(want.mustErr || lazy && want.mayErr) {
				t.Errorf("%s: LookupAt(%q, %q) = %v; its probes read no damaged block (found %v)", label, m.paths[d], q, err, want.found)
				fails++
			}
		case want.mustErr && !lazy:
			t.Errorf("%s: LookupAt(%q, %q) = %v, want ErrCorrupt (a probe reads a damaged block: %v)", label, m.paths[d], q, err, want.touchedDamaged)
			fails++
		case err != nil:
			stats[1]++
			if !errors.Is(err, syscall.ENOENT) || want.found {
				t.Errorf("%s: LookupAt(%q, %q) = %v, want found %v", label, m.paths[d], q, err, want.found)
				fails++
			}
		default:
			stats[2]++
			if !want.found {
				t.Errorf("%s: LookupAt(%q, %q) found an entry, want none", label, m.paths[d], q)
				fails++
			} else if !e.Info.ModTime().Equal(ge.Info.ModTime()) || e.Info.Mode() != ge.Info.Mode() || e.Dir != ge.Dir {
				t.Errorf("%s: LookupAt(%q, %q) = %v %v %v, undamaged %v %v %v", label, m.paths[d], q,
					e.Info.ModTime(), e.Info.Mode(), e.Dir, ge.Info.ModTime(), ge.Info.Mode(), ge.Dir)
				fails++
			}
		}
		if fails > 10 {
			return fails
		}
	}
	return fails
}

// TestProbe27KeySpanDamageModel: for each key block (and a sample of
// index and string blocks, and of check-table entries) of packs of
// formats 2 and 3 (uncompressed, and compressed with its tables
// unpacked so that Open maps them), damaged one at a time, every lookup
// in every directory, and the root, gives ErrCorrupt exactly when a
// probe of its binary search reads the damaged block (mapped), or only
// then (lazy), and otherwise the undamaged pack's answer; lookups are
// repeated, in a random order, on several goroutines.
func TestProbe27KeySpanDamageModelV2(t *testing.T)     { probe27DamageModel(t, 0) }
func TestProbe27KeySpanDamageModelV3(t *testing.T)     { probe27DamageModel(t, 1) }
func TestProbe27KeySpanDamageModelV3Zstd(t *testing.T) { probe27DamageModel(t, 2) }

func probe27DamageModel(t *testing.T, which int) {
	packs, err := probe27Packs()
	must(t, err)
	p := packs[which]
	m := probe27Parse(t, p.data)
	good, err := packreader.OpenReaderAt(bytes.NewReader(p.data), int64(len(p.data)))
	must(t, err)
	defer good.Close()
	rng := rand.New(rand.NewPCG(27, uint64(len(p.data))))
	dirs := []uint64{0}
	for _, d := range p.dirs {
		dirs = append(dirs, m.byPath[d])
	}
	queries := map[uint64][]string{}
	goods := map[uint64][]probe27Good{}
	for _, d := range dirs {
		queries[d] = m.probe27Queries(d, rng)
		var dir pathwalk.Dir
		if d != 0 {
			dir = d
		}
		for _, q := range queries[d] {
			e, err := good.LookupAt(dir, q)
			goods[d] = append(goods[d], probe27Good{e, err})
		}
	}
	type variant struct {
		b     probe27Block
		table bool
	}
	var vs []variant
	for k := range m.blocks(1) {
		vs = append(vs, variant{probe27Block{1, k}, k%5 == 3})
	}
	for k := uint64(1); k < m.blocks(0); k += 1 + uint64(rng.IntN(60)) {
		vs = append(vs, variant{probe27Block{0, k}, false})
	}
	for k := uint64(0); k < m.blocks(2); k += 1 + uint64(rng.IntN(8)) {
		vs = append(vs, variant{probe27Block{2, k}, k%3 == 0})
	}
	path := filepath.Join(t.TempDir(), "bad.pack")
	fails := 0
	var stats [3]int
	for _, v := range vs {
		bad := bytes.Clone(p.data)
		bad[m.flipAt(v.b, v.table, rng)] ^= 1 << rng.IntN(8)
		damaged := map[probe27Block]bool{v.b: true}
		must(t, os.WriteFile(path, bad, 0o644))
		for _, lazy := range []bool{false, true} {
			var r *packreader.Reader
			if lazy {
				r, err = packreader.OpenReaderAt(bytes.NewReader(bad), int64(len(bad)))
			} else {
				r, err = packreader.Open(path)
			}
			must(t, err)
			label := fmt.Sprintf("%s: %v (table %v) lazy=%v", p.name, v.b, v.table, lazy)
			// Twice: the first lookups check blocks, later ones find
			// them checked (or failed).
			for round := range 2 {
				order := rng.Perm(len(dirs))
				var wg sync.WaitGroup
				var mu sync.Mutex
				for w := range 3 {
					wg.Go(func() {
						var st [3]int
						f := 0
						for k, o := range order {
							if k%3 == w {
								d := dirs[o]
								f += probe27Check(t, fmt.Sprintf("%s round %d", label, round), m, r, goods[d], d, queries[d], damaged, lazy, &st)
							}
						}
						mu.Lock()
						fails += f
						for i := range st {
							stats[i] += st[i]
						}
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			r.Close()
			if fails > 20 {
				t.Fatal("too many failures")
			}
		}
	}
	t.Logf("%d variants: %d lookups corrupt, %d absent, %d found", len(vs), stats[0], stats[1], stats[2])
	if stats[0] == 0 || stats[2] == 0 {
		t.Fatal("the probe saw no corrupt or no found lookup")
	}
}

// TestProbe27KeySpanStat: Stat of paths two deep in a pack whose key
// blocks are damaged one at a time fails as corrupt exactly when the
// model's lookups along the path read a damaged block, for a mapped
// pack, and gives the undamaged answer otherwise.
func TestProbe27KeySpanStat(t *testing.T) {
	packs, err := probe27Packs()
	must(t, err)
	p := packs[0]
	m := probe27Parse(t, p.data)
	good, err := packreader.OpenReaderAt(bytes.NewReader(p.data), int64(len(p.data)))
	must(t, err)
	defer good.Close()
	rng := rand.New(rand.NewPCG(2, 7))
	var paths []string
	for _, d := range append([]string{}, p.dirs...) {
		di := m.byPath[d]
		for _, q := range m.probe27Queries(di, rng) {
			if fs.ValidPath(d+"/"+q) && !strings.ContainsAny(q, "\x01\x7f") {
				paths = append(paths, d+"/"+q)
			}
		}
		paths = append(paths, d+"0/x", "0"+d+"/x")
	}
	sort.Strings(paths)
	path := filepath.Join(t.TempDir(), "bad.pack")
	fails := 0
	for k := range m.blocks(1) {
		b := probe27Block{1, k}
		bad := bytes.Clone(p.data)
		bad[m.flipAt(b, false, rng)] ^= 0x10
		must(t, os.WriteFile(path, bad, 0o644))
		r, err := packreader.Open(path)
		must(t, err)
		damaged := map[probe27Block]bool{b: true}
		for _, pth := range paths {
			dname, base, _ := strings.Cut(pth, "/")
			w1 := m.lookup(0, dname, false, damaged)
			mustErr := w1.mustErr
			found := false
			if !mustErr && w1.found && m.recs[w1.i].Type == packformat.TypeDir {
				w2 := m.lookup(w1.i, base, false, damaged)
				mustErr, found = w2.mustErr, w2.found
			}
			_, err := r.Stat(pth)
			gfi, gerr := good.Stat(pth)
			switch {
			case mustErr != errors.Is(err, packreader.ErrCorrupt):
				t.Errorf("%v: Stat(%q) = %v, want corrupt %v", b, pth, err, mustErr)
				fails++
			case !mustErr && (err == nil) != found:
				t.Errorf("%v: Stat(%q) = %v, want found %v (undamaged: %v %v)", b, pth, err, found, gfi, gerr)
				fails++
			case !mustErr && (err == nil) != (gerr == nil):
				t.Errorf("%v: Stat(%q) = %v, undamaged %v", b, pth, err, gerr)
				fails++
			}
		}
		r.Close()
		if fails > 20 {
			t.Fatal("too many failures")
		}
	}
}
