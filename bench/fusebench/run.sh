#!/bin/sh
# run.sh: the fusebench run. The tools alternate: each of the -count 1
# runs measures every tool on every row, one after the other, so that a
# change of the machine's load falls on all columns alike; the table is
# the median of the runs (table.awk). The machine is shared: few
# iterations, and the load average is printed before and after.
# Run from bench/:  sh fusebench/run.sh [out] [runs]
#   (default /tmp/fusebench.txt, 5 runs)
set -e
out=${1:-/tmp/fusebench.txt}
runs=${2:-5}
: >"$out"
echo "load before: $(cat /proc/loadavg)" | tee -a "$out"
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	go test -run '^$' -count 1 -benchtime 2x -bench '^Benchmark(FindStat|ReadAll|Grep)$' ./fusebench/ | tee -a "$out"
	go test -run '^$' -count 1 -benchtime 1x -bench '^Benchmark(SmallFiles|Write64MiB|LowerFiles)$' ./fusebench/ | tee -a "$out"
	echo "load after run $i: $(cat /proc/loadavg)" | tee -a "$out"
done
awk -f fusebench/table.awk "$out"
