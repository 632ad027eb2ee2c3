package suite

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

type tableKind int

const (
	kindTime    tableKind = iota // one row per backend, place and size
	kindScaling                  // cost per operation by size, pivoted
	kindValue                    // one value per row, not a time
	kindMatrix                   // workloads down, backends across
)

// Where a row's backend keeps its data, when it is not a host place:
// Memory for the heap, File for a pack or zip file read through a mapping
// or the page cache (kept in the first place). File rows compare with
// each other and with os in the first place.
const (
	Memory = "memory"
	File   = "file"
)

// Table is one table of the report.
type Table struct {
	ID, Title, Unit string
	Cat             *Category
	// Notes are printed under the table.
	Notes  []string
	Rows   []*Row
	kind   tableKind
	places []Place
	// NoBaseline drops the "vs os" column, for tables without an os row.
	NoBaseline bool
	// Base names the baseline backend when it is not "os".
	Base string
	// Paired makes a ratio the median over runs of the two rows' ratio in
	// the same run (their k-th samples), which bursts of load on a shared
	// machine disturb less than a ratio of medians. It needs rows timed
	// side by side, once each per run.
	Paired bool
}

// Spec names a row and says how much work each of its runs does.
type Spec struct {
	// Backend is the file system's label.
	Backend string
	// Where is Memory or a Place's Name.
	Where string
	// N is the size parameter shown in the row (entries, MiB, mounts).
	N int
	// Ours marks PackFS's backends.
	Ours bool
	// Ops is the number of operations in one run, for per-operation cost
	// and operations per second.
	Ops int
	// Bytes is the number of bytes moved in one run, for MB/s; 0 when
	// throughput in bytes means nothing.
	Bytes int64
	// Case names the workload of a row in a matrix table.
	Case string `json:",omitempty"`
}

// Row is one line of a table: a spec and its samples.
type Row struct {
	Spec
	Samples []time.Duration
	// Value is a kindValue table's measurement.
	Value float64
}

func (t *Table) row(s Spec) *Row {
	for _, r := range t.Rows {
		if r.Backend == s.Backend && r.Where == s.Where && r.N == s.N && r.Case == s.Case {
			return r
		}
	}
	r := &Row{Spec: s}
	t.Rows = append(t.Rows, r)
	return r
}

// Time runs fn once, timed, after a garbage collection, and records the
// duration as a sample of the row s.
func (t *Table) Time(s Spec, fn func() error) error {
	runtime.GC()
	start := time.Now()
	err := fn()
	d := time.Since(start)
	if err != nil {
		return fmt.Errorf("%s, %s on %s at %d: %w", t.Title, s.Backend, s.Where, s.N, err)
	}
	r := t.row(s)
	r.Samples = append(r.Samples, d)
	return nil
}

// Record records d as a sample of the row s, for sections a category
// times itself.
func (t *Table) Record(s Spec, d time.Duration) {
	r := t.row(s)
	r.Samples = append(r.Samples, d)
}

// SetValue records the value of row s in a value table.
func (t *Table) SetValue(s Spec, v float64) { t.row(s).Value = v }

// Note adds a line printed under the table.
func (t *Table) Note(format string, args ...any) {
	t.Notes = append(t.Notes, fmt.Sprintf(format, args...))
}

// Median returns the median sample.
func (r *Row) Median() time.Duration {
	if len(r.Samples) == 0 {
		return 0
	}
	s := slices.Clone(r.Samples)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Spread returns (max - min) / median.
func (r *Row) Spread() float64 {
	m := r.Median()
	if m == 0 {
		return 0
	}
	return float64(slices.Max(r.Samples)-slices.Min(r.Samples)) / float64(m)
}

// PerOp returns the median cost of one operation in nanoseconds.
func (r *Row) PerOp() float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.Median().Nanoseconds()) / float64(r.Ops)
}

// OpsPerSec returns operations per second at the median.
func (r *Row) OpsPerSec() float64 {
	m := r.Median().Seconds()
	if m == 0 {
		return 0
	}
	return float64(r.Ops) / m
}

// MBPerSec returns MB (10^6 bytes) per second at the median, or 0.
func (r *Row) MBPerSec() float64 {
	m := r.Median().Seconds()
	if m == 0 || r.Bytes == 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / m
}

// metric is what ratios compare: the cost per operation, or the value.
func (t *Table) metric(r *Row) float64 {
	if t.kind == kindValue {
		return r.Value
	}
	return r.PerOp()
}

// Baseline returns the row that r is compared with as "vs os": the os row
// of the same size in the same place (for an in-memory backend, the
// default temporary directory); failing the size, any os row there.
func (t *Table) Baseline(r *Row) *Row {
	if t.NoBaseline {
		return nil
	}
	where := r.Where
	if (where == Memory || where == File) && len(t.places) > 0 {
		where = t.places[0].Name
	}
	base := t.base()
	var any *Row
	for _, o := range t.Rows {
		if o.Backend == base && o.Case == r.Case && t.kind == kindMatrix {
			return o // a matrix compares each place with the one base
		}
		if o.Backend != base || (o.Where != where && o.Where != r.Where) || o.Case != r.Case {
			continue
		}
		if o.N == r.N {
			return o
		}
		if any == nil {
			any = o
		}
	}
	return any
}

func (t *Table) base() string {
	if t.Base != "" {
		return t.Base
	}
	return "os"
}

// BestAlt returns the alternative (a backend not PackFS's) of the same
// size with the lowest cost per operation: among those in the same place
// for a host row, among all for an in-memory row.
func (t *Table) BestAlt(r *Row) *Row {
	var best *Row
	for _, o := range t.Rows {
		if o.Ours || o.N != r.N || o.Case != r.Case || (r.Where != Memory && o.Where != r.Where) {
			continue
		}
		if t.metric(o) <= 0 {
			continue
		}
		if best == nil || t.metric(o) < t.metric(best) {
			best = o
		}
	}
	return best
}

// Ratio returns metric(r) / metric(o), or NaN. In a Paired table of
// times it is the median over runs of the ratio of cost per operation in
// the same run.
func (t *Table) Ratio(r, o *Row) float64 {
	if r == nil || o == nil || t.metric(o) == 0 {
		return math.NaN()
	}
	if t.Paired && t.kind != kindValue && len(r.Samples) == len(o.Samples) && r.Ops > 0 && o.Ops > 0 {
		ratios := make([]float64, len(r.Samples))
		for i := range ratios {
			if o.Samples[i] <= 0 {
				return math.NaN()
			}
			ratios[i] = float64(r.Samples[i]) / float64(r.Ops) / (float64(o.Samples[i]) / float64(o.Ops))
		}
		slices.Sort(ratios)
		if n := len(ratios); n%2 == 0 {
			return (ratios[n/2-1] + ratios[n/2]) / 2
		}
		return ratios[len(ratios)/2]
	}
	return t.metric(r) / t.metric(o)
}

// WhereLabel returns the label of a place name: "tmp (ext4)".
func (t *Table) WhereLabel(w string) string {
	for _, p := range t.places {
		if p.Name == w {
			return p.Name + " (" + p.FSType + ")"
		}
	}
	if w == File && len(t.places) > 0 {
		return "file in " + t.places[0].Name
	}
	return w
}

// WriteMarkdown writes the table.
func (t *Table) WriteMarkdown(w io.Writer) {
	switch t.kind {
	case kindScaling:
		t.writeScaling(w)
	case kindValue:
		t.writeValue(w)
	case kindMatrix:
		t.writeMatrix(w)
	default:
		t.writeTime(w)
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "%s\n", n)
	}
	if len(t.Notes) > 0 {
		fmt.Fprintln(w)
	}
}

func (t *Table) writeTime(w io.Writer) {
	fmt.Fprintf(w, "**%s**\n\n", t.Title)
	hasMB := slices.ContainsFunc(t.Rows, func(r *Row) bool { return r.Bytes > 0 })
	hdr := []string{"backend", "on", "N", "median", "per " + t.Unit, "ops/s"}
	if hasMB {
		hdr = append(hdr, "MB/s")
	}
	if !t.NoBaseline {
		hdr = append(hdr, "vs "+t.base())
	}
	hasAlt := slices.ContainsFunc(t.Rows, func(r *Row) bool { return !r.Ours })
	if hasAlt {
		hdr = append(hdr, "vs best alt")
	}
	hdr = append(hdr, "spread", "runs")
	writeRow(w, hdr)
	writeSep(w, len(hdr))
	for _, r := range t.Rows {
		cells := []string{backendLabel(r), t.WhereLabel(r.Where), commas(r.N), fmtDur(r.Median()),
			fmtNs(r.PerOp()), fmtRate(r.OpsPerSec())}
		if hasMB {
			cells = append(cells, fmtMB(r.MBPerSec()))
		}
		if !t.NoBaseline {
			cells = append(cells, fmtRatio(t.Ratio(r, t.Baseline(r))))
		}
		if hasAlt {
			cells = append(cells, fmtRatio(t.Ratio(r, t.BestAlt(r))))
		}
		cells = append(cells, fmt.Sprintf("%.0f%%", 100*r.Spread()), fmt.Sprint(len(r.Samples)))
		writeRow(w, cells)
	}
	fmt.Fprintln(w)
}

// writeMatrix writes one line per workload (Case) and one column per
// backend and place: the median cost per operation and, but for the base
// column, the ratio to the base's cost in the same workload.
func (t *Table) writeMatrix(w io.Writer) {
	fmt.Fprintf(w, "**%s**\n\n", t.Title)
	var cases, cols []string
	label := func(r *Row) string {
		if r.Where == Memory {
			return backendLabel(r)
		}
		return backendLabel(r) + " on " + t.WhereLabel(r.Where)
	}
	cell := map[[2]string]*Row{}
	runs := 0
	for _, r := range t.Rows {
		if !slices.Contains(cases, r.Case) {
			cases = append(cases, r.Case)
		}
		if l := label(r); !slices.Contains(cols, l) {
			cols = append(cols, l)
		}
		cell[[2]string{r.Case, label(r)}] = r
		runs = max(runs, len(r.Samples))
	}
	hdr := append([]string{"workload (per " + t.Unit + ", ×" + t.base() + ")"}, cols...)
	hdr = append(hdr, "spread", "runs")
	writeRow(w, hdr)
	writeSep(w, len(hdr))
	for _, c := range cases {
		cells := []string{c}
		spread := 0.0
		for _, l := range cols {
			r := cell[[2]string{c, l}]
			switch {
			case r == nil:
				cells = append(cells, "")
				continue
			case r.Backend == t.base():
				cells = append(cells, fmtNs(r.PerOp()))
			default:
				cells = append(cells, strings.TrimSpace(fmtNs(r.PerOp())+" "+fmtRatio(t.Ratio(r, t.Baseline(r)))))
			}
			spread = max(spread, r.Spread())
		}
		cells = append(cells, fmt.Sprintf("%.0f%%", 100*spread), fmt.Sprint(runs))
		writeRow(w, cells)
	}
	fmt.Fprintln(w)
}

func (t *Table) writeValue(w io.Writer) {
	fmt.Fprintf(w, "**%s**\n\n", t.Title)
	hdr := []string{"backend", "N", t.Unit, "vs best alt"}
	writeRow(w, hdr)
	writeSep(w, len(hdr))
	for _, r := range t.Rows {
		writeRow(w, []string{backendLabel(r), commas(r.N), fmt.Sprintf("%.0f", r.Value),
			fmtRatio(t.Ratio(r, t.BestAlt(r)))})
	}
	fmt.Fprintln(w)
}

// Series is one line of a scaling table: a backend in a place, with its
// cost per operation at each size.
type Series struct {
	Label string
	Ours  bool
	N     []int
	PerOp []float64 // nanoseconds
	Rows  []*Row
}

// Series returns the table's lines, in the order their backends first
// appear.
func (t *Table) Series() []*Series {
	var out []*Series
	idx := map[string]*Series{}
	for _, r := range t.Rows {
		label := backendLabel(r)
		if r.Where != Memory {
			label += " (" + r.Where + ")"
		}
		s := idx[label]
		if s == nil {
			s = &Series{Label: label, Ours: r.Ours}
			idx[label] = s
			out = append(out, s)
		}
		s.N = append(s.N, r.N)
		s.PerOp = append(s.PerOp, r.PerOp())
		s.Rows = append(s.Rows, r)
	}
	return out
}

// Growth returns cost per operation at 4n over that at n, or NaN.
func (s *Series) Growth(n int) float64 {
	i, j := slices.Index(s.N, n), slices.Index(s.N, 4*n)
	if i < 0 || j < 0 || s.PerOp[i] == 0 {
		return math.NaN()
	}
	return s.PerOp[j] / s.PerOp[i]
}

func (t *Table) sizes() []int {
	var ns []int
	for _, r := range t.Rows {
		if !slices.Contains(ns, r.N) {
			ns = append(ns, r.N)
		}
	}
	slices.Sort(ns)
	return ns
}

func (t *Table) writeScaling(w io.Writer) {
	fmt.Fprintf(w, "**%s** (cost per %s at each N; growth is cost(4N)/cost(N); spread is the largest of the row)\n\n", t.Title, t.Unit)
	ns := t.sizes()
	hdr := []string{"backend"}
	for _, n := range ns {
		hdr = append(hdr, commas(n))
	}
	for i := 0; i+1 < len(ns); i++ {
		if ns[i+1] == 4*ns[i] {
			hdr = append(hdr, fmt.Sprintf("growth %s→%s", short(ns[i]), short(ns[i+1])))
		}
	}
	hdr = append(hdr, "spread")
	writeRow(w, hdr)
	writeSep(w, len(hdr))
	for _, s := range t.Series() {
		cells := []string{s.Label}
		spread := 0.0
		for _, n := range ns {
			i := slices.Index(s.N, n)
			if i < 0 {
				cells = append(cells, "")
				continue
			}
			cells = append(cells, fmtNs(s.PerOp[i]))
			spread = max(spread, s.Rows[i].Spread())
		}
		for i := 0; i+1 < len(ns); i++ {
			if ns[i+1] == 4*ns[i] {
				cells = append(cells, fmtRatio(s.Growth(ns[i])))
			}
		}
		cells = append(cells, fmt.Sprintf("%.0f%%", 100*spread))
		writeRow(w, cells)
	}
	fmt.Fprintln(w)
}

func backendLabel(r *Row) string {
	if r.Ours {
		return "**" + r.Backend + "**"
	}
	return r.Backend
}

func writeRow(w io.Writer, cells []string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

func writeSep(w io.Writer, n int) {
	fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", n))
}

// commas formats n with thousands separators.
func commas(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// short formats n as 20k or 1.28M.
func short(n int) string {
	switch {
	case n >= 1_000_000:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", float64(n)/1e6), "0"), ".") + "M"
	case n >= 1_000:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", float64(n)/1e3), "0"), ".") + "k"
	}
	return fmt.Sprint(n)
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}

// fmtNs formats a cost in nanoseconds.
func fmtNs(ns float64) string {
	switch {
	case ns == 0:
		return ""
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e4:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

func fmtRate(v float64) string {
	switch {
	case v == 0:
		return ""
	case v >= 100:
		return commas(int(math.Round(v)))
	}
	return fmt.Sprintf("%.1f", v)
}

func fmtMB(v float64) string {
	if v == 0 {
		return ""
	}
	if v >= 100 {
		return commas(int(math.Round(v)))
	}
	return fmt.Sprintf("%.1f", v)
}

func fmtRatio(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return ""
	case v >= 100:
		return fmt.Sprintf("%.0f×", v)
	case v >= 10:
		return fmt.Sprintf("%.1f×", v)
	case v < 0.1:
		return fmt.Sprintf("%.3f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}
