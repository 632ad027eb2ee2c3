#!/bin/sh
# run.sh: the memfsbench run, -count 5, appended to one file for benchstat.
# The test binary is built once so that every pass measures the same code.
# Benchtimes fit each workload's cost so that the whole run takes about ten
# minutes on a 2-core machine: the light workloads by time, the batch ones
# (one iteration = a whole batch of 4,000 to 320,000 operations) 3 times on
# the in-memory backends and once on os, whose batches take seconds.
# Run from bench/:  sh memfsbench/run.sh [out]   (default /tmp/memfsbench.txt)
set -e
out=${1:-/tmp/memfsbench.txt}
bin=$(mktemp /tmp/memfsbench.test.XXXXXX)
trap 'rm -f "$bin"' EXIT
go test -c -o "$bin" ./memfsbench/
cd memfsbench # the package directory, as go test runs it
: >"$out"
pass() { "$bin" -test.run '^$' -test.count 5 "$@" | tee -a "$out"; }
batch='^Benchmark(Remove|Mkdir|Rmdir|Concurrent|ReadMostly)$'
nested='^Benchmark(Create|SeqWrite64MBFirstTouch)$'
pass -test.benchtime=300ms -test.bench '^Benchmark(Read|Stat|ReadDir|SeqWrite|SeqRead)$'
pass -test.benchtime=3x -test.bench "$batch/^backend=(mem|afero)\$"
pass -test.benchtime=3x -test.bench "$nested//^backend=(mem|afero)\$"
pass -test.benchtime=1x -test.bench "$batch/^backend=os"
pass -test.benchtime=1x -test.bench "$nested//^backend=os"
pass -test.benchtime=1x -test.bench '^BenchmarkMemory$'
