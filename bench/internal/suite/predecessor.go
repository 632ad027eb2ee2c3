package suite

import (
	"fmt"
	"io"
	"math"
)

// predRow is one line of the C predecessor's "After" table (its BENCH.md,
// the run after its treap fix): throughputs of its in-memory backend, its
// contained-directory backend and the raw host file system, in operations
// or MB per second, and where our number for the same workload is.
type predRow struct {
	label          string
	mem, dir, raw  float64
	cat, table     string
	n              func(cfg *Config) int
	ours, oursDirs string // our backends for the mem and dir columns
}

// The predecessor ran on 12 logical CPUs (Ryzen 5 3600) on an overlay
// root file system, one run per number.
var predRows = []predRow{
	{"create 20,000 files", 499_809, 17_517, 20_114, "small", "create", smallN, "mem", "dirfs"},
	{"read 20,000 files", 2_011_901, 130_705, 124_543, "small", "read", smallN, "mem", "dirfs"},
	{"stat 20,000 files", 2_598_241, 145_056, 286_222, "small", "stat", smallN, "mem", "dirfs"},
	{"readdir (20,000 entries)", 4_845_826, 5_465_162, 2_894_815, "small", "readdir", smallN, "mem", "dirfs"},
	{"unlink 20,000 files", 1_117_742, 40_724, 42_141, "small", "unlink", smallN, "mem", "dirfs"},
	{"mkdir 4,000 dirs", 719_696, 23_386, 29_122, "dirs", "mkdir", dirsN, "mem", "dirfs"},
	{"rmdir 4,000 dirs", 993_724, 31_827, 42_043, "dirs", "rmdir", dirsN, "mem", "dirfs"},
	{"write 1MB", 7_058.1, 0, 2_759.4, "seq", "write", mb(1), "mem", ""},
	{"read 1MB", 50_050.9, 0, 16_812.4, "seq", "read", mb(1), "mem", ""},
	{"write 16MB", 1_458.2, 0, 3_656.4, "seq", "write", mb(16), "mem", ""},
	{"read 16MB", 16_920.1, 0, 15_827.9, "seq", "read", mb(16), "mem", ""},
	{"write 64MB", 1_091.3, 0, 3_449.7, "seq", "write", mb(64), "mem", ""},
	{"read 64MB", 20_056.5, 0, 13_633.1, "seq", "read", mb(64), "mem", ""},
	{"random-read 20,000 entries (pack)", 2_435_930, 0, 122_749, "pack", "random", smallN, "pack", ""},
	{"concurrent create+read+unlink (8×4,000)", 349_127, 0, 16_992, "concurrent", "crr", crrN, "mem", ""},
}

func smallN(cfg *Config) int { return cfg.N }
func dirsN(cfg *Config) int  { return max(20, 4_000*cfg.N/20_000) }
func crrN(cfg *Config) int   { return cfg.Workers * max(10, 4_000*cfg.N/20_000) }
func mb(n int) func(*Config) int {
	return func(*Config) int { return n }
}

// ourRatio returns the cost per operation of backend (in memory, or else in
// the first place) over that of os in place where, in table cat/table at
// size n.
func ourRatio(res *Results, cat, table, backend string, n int, where string) float64 {
	t := res.Lookup(cat, table)
	if t == nil || backend == "" {
		return math.NaN()
	}
	var r, base *Row
	for _, o := range t.Rows {
		if o.N != n {
			continue
		}
		if o.Backend == backend && (r == nil || o.Where == Memory || o.Where == res.Config.Places[0].Name) {
			r = o
		}
		if o.Backend == "os" && o.Where == where {
			base = o
		}
	}
	return t.Ratio(r, base)
}

// writePredecessor writes the table that sets our ratios against os beside
// the predecessor's against its raw file system.
func writePredecessor(w io.Writer, res *Results) {
	cfg := res.Config
	tmp := cfg.Places[0]
	hdr := []string{"workload", "predecessor mem / raw", fmt.Sprintf("mem / os, %s", tmp.FSType)}
	var shm *Place
	if len(cfg.Places) > 1 {
		shm = &cfg.Places[1]
		hdr = append(hdr, fmt.Sprintf("mem / os, %s", shm.FSType))
	}
	hdr = append(hdr, "predecessor dir / raw", fmt.Sprintf("dirfs / os, %s", tmp.FSType))
	writeRow(w, hdr)
	writeSep(w, len(hdr))
	for _, p := range predRows {
		n := p.n(cfg)
		cells := []string{p.label, fmtRatio(p.raw / p.mem), fmtRatio(ourRatio(res, p.cat, p.table, p.ours, n, tmp.Name))}
		if shm != nil {
			cells = append(cells, fmtRatio(ourRatio(res, p.cat, p.table, p.ours, n, shm.Name)))
		}
		pd := ""
		if p.dir > 0 {
			pd = fmtRatio(p.raw / p.dir)
		}
		cells = append(cells, pd, fmtRatio(ourRatio(res, p.cat, p.table, p.oursDirs, n, tmp.Name)))
		writeRow(w, cells)
	}
	fmt.Fprintln(w)
}

// writeComplexity writes the growth checks against the predecessor's.
func writeComplexity(w io.Writer, res *Results) {
	cfg := res.Config
	growth := func(cat, table, backend, where string, n int) float64 {
		t := res.Lookup(cat, table)
		if t == nil {
			return math.NaN()
		}
		for _, s := range t.Series() {
			if len(s.Rows) > 0 && s.Rows[0].Backend == backend && s.Rows[0].Where == where {
				return s.Growth(n)
			}
		}
		return math.NaN()
	}
	tmp := cfg.Places[0].Name
	mounts := 2_000
	if cfg.N < 2_000 {
		mounts = 4 * max(5, 500*cfg.N/20_000)
	}
	rows := []struct {
		label string
		pred  float64
		ours  float64
	}{
		{"mount, 2,000 → 8,000 mounts", 17.7 / 4, growth("mounts", "mount", "union", Memory, mounts)},
		{"resolve through, 2,000 → 8,000 mounts", 16.7 / 4, growth("mounts", "resolve", "union", Memory, mounts)},
		{"unmount, 2,000 → 8,000 mounts", 20.0 / 4, growth("mounts", "unmount", "union", Memory, mounts)},
		{"compaction, distinct content, N → 4N", 3.35 / 4, growth("pack", "compact-distinct", "pack", tmp, cfg.N)},
		{"compaction, identical content, N → 4N", math.NaN(), growth("pack", "compact-same", "pack", tmp, cfg.N)},
		{"create (mem), N → 4N", math.NaN(), growth("scaling", "create", "mem", Memory, cfg.N)},
		{"create (mem), 16N → 64N", math.NaN(), growth("scaling", "create", "mem", Memory, 16*cfg.N)},
	}
	writeRow(w, []string{"cost per operation, growth over a 4x step", "predecessor (after its fixes)", "ours"})
	writeSep(w, 3)
	for _, r := range rows {
		writeRow(w, []string{r.label, fmtRatio(r.pred), fmtRatio(r.ours)})
	}
	fmt.Fprintln(w)
}
