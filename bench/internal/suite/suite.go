// Package suite is the benchmark runner behind bench/main.go: a table of
// categories, each timing one group of workloads over PackFS's backends
// and the alternatives, and the report they make (Markdown tables on
// standard output, and BENCH.md with a plot of cost against size).
//
// # Categories
//
// A category is a Category value passed to Register from an init function,
// one file per group of categories (cat_*.go). Its Run method gets a Ctx
// that holds the sizes to use and records timings: Ctx.Table names a
// table, and Table.Time times one run of one backend. Run repeats each
// timed section Ctx.Runs times; the report shows the median, the spread
// and the ratios. Ctx.MatrixTable sets workloads against backends in one
// table (the afero category's); a table with Paired set divides times
// taken in the same run before it takes the median, for backends timed
// side by side. Adding a category is adding a file.
package suite

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Category is one group of workloads with its tables.
type Category struct {
	// Name selects the category with -cat.
	Name string
	// Title heads its section of the report.
	Title string
	// Order places the section in the report, lowest first.
	Order int
	// Doc is Markdown for BENCH.md: what the category measures, what its
	// numbers mean, where PackFS loses and why.
	Doc string
	// Run runs the workloads, recording each timed section in c.
	Run func(c *Ctx) error
}

var registry []*Category

// Register adds a category to the runner. It is called from init.
func Register(c *Category) {
	for _, o := range registry {
		if o.Name == c.Name {
			panic("suite: category " + c.Name + " registered twice")
		}
	}
	registry = append(registry, c)
	slices.SortStableFunc(registry, func(a, b *Category) int { return a.Order - b.Order })
}

// Categories returns every registered category in report order.
func Categories() []*Category { return slices.Clone(registry) }

// Place is a host directory in which host file systems run.
type Place struct {
	// Name is the short label: "tmp" for the default temporary directory,
	// "shm" for /dev/shm.
	Name string
	// Dir is the directory under which each run makes its own.
	Dir string
	// FSType names its file system ("ext4", "tmpfs", ...).
	FSType string
}

// Config holds the sizes and the repetitions of one run of the suite.
type Config struct {
	// N is the number of small files in the metadata workloads (20,000).
	N int
	// Runs is how many times each timed section runs; tables show the
	// median.
	Runs int
	// Quick marks the fast pass (smaller N).
	Quick bool
	// SeqMB are the sizes of the sequential files, in MiB.
	SeqMB []int
	// Scales are the multiples of N for the scaling category.
	Scales []int
	// HostScale is the largest multiple of N at which host file systems
	// run in the scaling category.
	HostScale int
	// MemEntries is the number of entries for the memory-per-entry
	// measurement.
	MemEntries int
	// Workers is the number of goroutines in the concurrent workload.
	Workers int
	// Places are the host directories for host file systems; the first is
	// the default temporary directory, the baseline of "vs os".
	Places []Place
	// Log receives progress lines.
	Log io.Writer `json:"-"`
}

// Small is the size of each small file, in bytes.
const Small = 128

// Ctx is what a category's Run gets: the configuration and the tables it
// fills.
type Ctx struct {
	*Config
	cat *Category
	res *Results
}

// Logf writes a progress line.
func (c *Ctx) Logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "  [%s] %s\n", c.cat.Name, fmt.Sprintf(format, args...))
	}
}

// TempDir makes a new directory under place p; the caller removes it.
func (c *Ctx) TempDir(p Place) (string, error) {
	return os.MkdirTemp(p.Dir, "packfs-bench-"+c.cat.Name+"-")
}

// Table returns the table id of the category, making it with the title
// and per-operation unit (such as "file", "entry" or "MB") the first time.
func (c *Ctx) Table(id, title, unit string) *Table {
	return c.res.table(c.cat, id, title, unit, kindTime)
}

// ScalingTable returns a table whose report sets each backend's cost per
// operation at every size side by side, and which the plot draws.
func (c *Ctx) ScalingTable(id, title, unit string) *Table {
	return c.res.table(c.cat, id, title, unit, kindScaling)
}

// MatrixTable returns a table with one line per workload (Spec.Case) and
// one column per backend and place, each cell a cost per operation and
// its ratio to the Base backend's in the same workload.
func (c *Ctx) MatrixTable(id, title, unit string) *Table {
	return c.res.table(c.cat, id, title, unit, kindMatrix)
}

// ValueTable returns a table of one measured value per row (not a time),
// such as bytes per entry.
func (c *Ctx) ValueTable(id, title, unit string) *Table {
	return c.res.table(c.cat, id, title, unit, kindValue)
}

// Scratch returns a table that is not reported, for warm-up runs.
func (c *Ctx) Scratch() *Table { return &Table{Cat: c.cat} }

// Scale returns n scaled with N against the full run's 20,000, at least
// lo.
func (c *Ctx) Scale(n, lo int) int {
	return max(lo, n*c.N/20_000)
}

// Results holds every table of a run, in the order they were made.
type Results struct {
	Start, End time.Time
	Tables     []*Table
	Config     *Config
	Cats       []*Category
	Errors     []string
	// Args are the command-line arguments of the run.
	Args []string
	// Machine describes the machine at the start; EndLoad is its load
	// average at the end.
	Machine Machine
	EndLoad string
}

func (r *Results) table(cat *Category, id, title, unit string, kind tableKind) *Table {
	for _, t := range r.Tables {
		if t.Cat == cat && t.ID == id {
			return t
		}
	}
	t := &Table{ID: id, Title: title, Unit: unit, Cat: cat, kind: kind, places: r.Config.Places}
	r.Tables = append(r.Tables, t)
	return t
}

// Lookup returns the table id of category cat, or nil.
func (r *Results) Lookup(cat, id string) *Table {
	for _, t := range r.Tables {
		if t.Cat.Name == cat && t.ID == id {
			return t
		}
	}
	return nil
}

// run runs the selected categories in order, calling after (if not nil)
// when each is done.
func run(cfg *Config, cats []*Category, args []string, out io.Writer, after func(*Results) error) *Results {
	res := &Results{Start: time.Now(), Config: cfg, Cats: cats, Machine: machine(), Args: args}
	for _, cat := range cats {
		t0 := time.Now()
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "== %s (%s)\n", cat.Title, cat.Name)
		}
		c := &Ctx{Config: cfg, cat: cat, res: res}
		if err := cat.Run(c); err != nil {
			msg := fmt.Sprintf("%s: %v", cat.Name, err)
			res.Errors = append(res.Errors, msg)
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "  error: %s\n", msg)
			}
		}
		if out != nil {
			fmt.Fprintf(out, "## %s\n\n", cat.Title)
			for _, t := range res.Tables {
				if t.Cat == cat {
					t.WriteMarkdown(out)
				}
			}
		}
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "  (%s in %.1fs)\n", cat.Name, time.Since(t0).Seconds())
		}
		res.End = time.Now()
		res.EndLoad = machine().LoadAvg
		if after != nil {
			if err := after(res); err != nil {
				res.Errors = append(res.Errors, err.Error())
				break
			}
		}
	}
	res.End = time.Now()
	res.EndLoad = machine().LoadAvg
	return res
}

// selectCategories returns the categories named in list (comma-separated;
// "" or "all" for every one).
func selectCategories(list string) ([]*Category, error) {
	if list == "" || list == "all" {
		return Categories(), nil
	}
	var out []*Category
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(registry, func(c *Category) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown category %q (see -list)", name)
		}
		out = append(out, registry[i])
	}
	return out, nil
}
