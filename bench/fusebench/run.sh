#!/bin/sh
# run.sh: the fusebench run. Few iterations: the machine is shared; take
# the median of the -count runs (benchstat, or by eye).
# Run from bench/:  sh fusebench/run.sh [out]   (default /tmp/fusebench.txt)
set -e
out=${1:-/tmp/fusebench.txt}
go test -run '^$' -count 5 -benchtime 2x -bench '^Benchmark(FindStat|ReadAll|Grep)$' ./fusebench/ | tee "$out"
go test -run '^$' -count 5 -benchtime 1x -bench '^Benchmark(SmallFiles|Write64MiB)$' ./fusebench/ | tee -a "$out"
go test -run '^$' -count 5 -benchtime 1x -bench '^BenchmarkLowerFiles$' ./fusebench/ | tee -a "$out"
