// Command bench runs PackFS's benchmark suite: the C predecessor's
// categories and PackFS's own, over PackFS's backends and the alternatives
// (os, os.Root, afero, go-billy, archive/zip, fstest.MapFS), and prints a
// Markdown table per category.
//
//	cd bench && go run . -quick          # a fast pass, under 2 minutes
//	cd bench && go run . -o BENCH.md     # the full run, and the report
//	cd bench && go run . -list           # the categories, for -cat
//
// See BENCH.md for what each category measures and the last full run.
package main

import (
	"os"

	"github.com/packfs/packfs/bench/internal/suite"
)

func main() {
	os.Exit(suite.Main(os.Args[1:], os.Stdout, os.Stderr))
}
