#!/bin/sh
# run.sh: the packbench run. Short benchtimes: the machine is shared.
# Run from bench/:  sh packbench/run.sh [out]   (default /tmp/packbench.txt)
set -e
out=${1:-/tmp/packbench.txt}
go test -run '^$' -count 1 -benchtime 300ms -bench '^Benchmark(Read|ReadFirstTouch|Stat|ReadDir|Open)$' ./packbench/ | tee "$out"
go test -run '^$' -count 1 -benchtime 5x -bench '^Benchmark(Open1M|Compact)$' ./packbench/ | tee -a "$out"
