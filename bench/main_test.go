package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/packfs/packfs/bench/internal/suite"
)

// TestRunner runs every category at tiny sizes, once, and checks that the
// output has every category's tables and that the report and the plot are
// written.
func TestRunner(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "BENCH.md")
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-n", "40", "-runs", "1", "-sizes", "1", "-scale", "1,4", "-hostscale", "1",
		"-mem", "2000", "-tmp", dir, "-q", "-o", out}
	if code := suite.Main(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr.String())
	}
	report, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range suite.Categories() {
		if !strings.Contains(stdout.String(), "## "+c.Title) {
			t.Errorf("no section %q in the output", c.Title)
		}
		if !strings.Contains(string(report), "## "+c.Title) {
			t.Errorf("no section %q in the report", c.Title)
		}
	}
	for _, table := range []string{"create N small files", "mkdir N/5 directories", "sequential write",
		"random read of N entries", "compaction, distinct content", "create+read+unlink", "mount M mounts",
		"open and close N/4 files", "merged ReadDir", "afero: create", "afero: small-file workloads", "union over a pack against the pack", "first lookup", "while a writer runs", "heap per entry"} {
		if !strings.Contains(stdout.String(), table) {
			t.Errorf("no table %q in the output", table)
		}
	}
	for _, want := range []string{"## Against the C predecessor", "## Where PackFS loses", "BENCH-scaling.svg"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("no %q in the report", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "BENCH-scaling.svg")); err != nil {
		t.Error(err)
	}
}
