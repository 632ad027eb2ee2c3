package suite

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Main runs the suite with command-line arguments args, writing the tables
// to stdout and progress to stderr, and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("bench", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		cats      = fl.String("cat", "all", "comma-separated `categories` to run (see -list)")
		list      = fl.Bool("list", false, "list the categories and exit")
		quick     = fl.Bool("quick", false, "fast pass: N = 1,000, 3 runs, 1 and 16 MiB files, scaling to 16N (each unless set)")
		n         = fl.Int("n", 0, "small files in the metadata workloads (default 20,000; with -quick 1,000); other sizes scale with it")
		runs      = fl.Int("runs", 0, "runs of each timed section; tables show the median (default 5; with -quick 3)")
		seq       = fl.String("sizes", "", "sequential file `sizes` in MiB, comma-separated (default 1,16,64; with -quick 1,16)")
		scales    = fl.String("scale", "", "multiples of N for the scaling category, comma-separated (default 1,4,16,64; with -quick 1,4,16)")
		hostScale = fl.Int("hostscale", 4, "largest multiple of N at which host file systems run in the scaling category")
		memN      = fl.Int("mem", 0, "entries for the memory-per-entry measurement (default 50 N: 1,000,000)")
		tmp       = fl.String("tmp", os.TempDir(), "the default temporary `directory`, the baseline place")
		shm       = fl.String("shm", "/dev/shm", "a tmpfs `directory` where host write workloads run too (\"\" for none)")
		outFile   = fl.String("o", "", "write the report to this `file` (BENCH.md), with the plot next to it")
		quiet     = fl.Bool("q", false, "no progress lines on standard error")
		render    = fl.String("render", "", "write the report (-o) again from the results `file` (BENCH.json) of an earlier run, without running anything")
	)
	fl.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run . [flags]   (in bench/)\n\nRuns PackFS's benchmark suite and prints a Markdown table per category.\n\n")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *list {
		for _, c := range Categories() {
			fmt.Fprintf(stdout, "%-12s %s\n", c.Name, c.Title)
		}
		return 0
	}
	if *render != "" {
		if *outFile == "" {
			fmt.Fprintln(stderr, "-render needs -o")
			return 2
		}
		res, err := LoadResults(*render)
		if err == nil {
			err = writeOutputs(res, *outFile, false)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return 0
	}
	sel, err := selectCategories(*cats)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	cfg := &Config{N: *n, Runs: *runs, Quick: *quick, HostScale: *hostScale, MemEntries: *memN, Workers: 8}
	if !*quiet {
		cfg.Log = stderr
	}
	if cfg.N <= 0 {
		cfg.N = 20_000
		if cfg.Quick {
			cfg.N = 1_000
		}
	}
	if cfg.Runs <= 0 {
		cfg.Runs = 5
		if cfg.Quick {
			cfg.Runs = 3
		}
	}
	if *scales == "" {
		*scales = "1,4,16,64"
		if cfg.Quick {
			*scales = "1,4,16"
		}
	}
	if cfg.MemEntries <= 0 {
		cfg.MemEntries = 50 * cfg.N
	}
	sizes := *seq
	if sizes == "" {
		sizes = "1,16,64"
		if cfg.Quick {
			sizes = "1,16"
		}
	}
	if cfg.SeqMB, err = ints(sizes); err != nil {
		fmt.Fprintln(stderr, "-sizes:", err)
		return 2
	}
	if cfg.Scales, err = ints(*scales); err != nil {
		fmt.Fprintln(stderr, "-scale:", err)
		return 2
	}
	cfg.Places = append(cfg.Places, Place{Name: "tmp", Dir: *tmp, FSType: FSType(*tmp)})
	if st, err := os.Stat(*shm); *shm != "" && err == nil && st.IsDir() {
		cfg.Places = append(cfg.Places, Place{Name: "shm", Dir: *shm, FSType: FSType(*shm)})
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "bench: N=%d runs=%d places=%v\n", cfg.N, cfg.Runs, cfg.Places)
	}

	// With -o, the report is rewritten after each category, so that an
	// interrupted run still leaves the categories it finished.
	var after func(*Results) error
	if *outFile != "" {
		after = func(res *Results) error { return writeOutputs(res, *outFile, true) }
	}
	res := run(cfg, sel, args, stdout, after)
	fmt.Fprintf(stdout, "wall time %s\n", res.End.Sub(res.Start).Round(time.Second))
	for _, e := range res.Errors {
		fmt.Fprintln(stderr, "error:", e)
	}
	if *outFile != "" {
		if err := writeOutputs(res, *outFile, true); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "wrote %s\n", *outFile)
		}
	}
	if len(res.Errors) > 0 {
		return 1
	}
	return 0
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// writeOutputs writes the report to name, the plot next to it and, if
// save is set, the results as JSON next to it, for -render.
func writeOutputs(res *Results, name string, save bool) error {
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	if save {
		if err := SaveResults(res, stem+".json"); err != nil {
			return err
		}
	}
	plotName := filepath.Base(stem) + "-scaling.svg"
	hasPlot, err := WritePlot(res, filepath.Join(filepath.Dir(name), plotName))
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if !hasPlot {
		plotName = ""
	}
	var buf bytes.Buffer
	WriteReport(&buf, res, plotName)
	return os.WriteFile(name, buf.Bytes(), 0o644)
}
