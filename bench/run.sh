#!/usr/bin/env bash
# Runs the performance comparison of doc/performance.md with one command, by
# the method that page describes: the library side by side with
# github.com/looplab/fsm, github.com/qmuntal/stateless and the pure
# baselines, in one go test process per run; then the flow, fleet and part
# benchmarks of this module and the core's own benchmarks. It records the
# Go version, the CPU line, GOMAXPROCS and the load average (sampled every
# 5 s) next to the numbers, and summarises with benchstat and with
# cmd/benchratio, which prints the ratios the targets are stated in.
#
# Usage: bench/run.sh [-quick] [-count N] [-interleave] [-compare-only] [-o DIR]
#
#   -quick         count 1 everywhere (a smoke run, about 2 minutes)
#   -count N       runs of the comparison (default 10: benchstat gives
#                  confidence intervals from 6 on)
#   -interleave    run the comparison N times with -count 1 instead of once
#                  with -count N, so a burst of background load cannot hit
#                  one implementation's samples in a row (use it on a
#                  shared machine)
#   -compare-only  skip the flow, fleet, part and core benchmarks
#   -o DIR         keep the raw outputs in DIR (default: a new temp dir)
#
# The other benchmarks run with count min(N, 5). Needs the Go module proxy
# for the peers and benchstat (pinned below).
set -euo pipefail

benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da # golang.org/x/perf, latest on 2026-11-22
compare='^Benchmark(Reuse|Fresh|Rehydrate|Sim)$'
others='^Benchmark(Flow|FleetScale|Part)$'

count=10
interleave=0
compare_only=0
out=""
while [ $# -gt 0 ]; do
	case "$1" in
	-quick) count=1 ;;
	-count)
		count="$2"
		shift
		;;
	-interleave) interleave=1 ;;
	-compare-only) compare_only=1 ;;
	-o)
		out="$2"
		shift
		;;
	-h | -help | --help)
		sed -n '2,27p' "$0"
		exit 0
		;;
	*)
		echo "run.sh: unknown argument $1 (try -help)" >&2
		exit 2
		;;
	esac
	shift
done
case "$count" in '' | *[!0-9]* | 0)
	echo "run.sh: -count needs a positive number" >&2
	exit 2
	;;
esac
other_count=$((count < 5 ? count : 5))

case "$out" in
'' | /*) ;;
*) out="$PWD/$out" ;; # -o is relative to where the script was called from
esac
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
if [ -z "$out" ]; then
	out="$(mktemp -d "${TMPDIR:-/tmp}/purelifecycle-bench.XXXXXX")"
fi
mkdir -p "$out"

# The environment, recorded before anything runs.
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "go: $(go version)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //' || echo unknown)"
	echo "cpus online: $(getconf _NPROCESSORS_ONLN)"
	echo "GOMAXPROCS: ${GOMAXPROCS:-unset (defaults to the CPUs online)}"
	echo "kernel: $(uname -sr)"
	echo "commit: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo none)$(git -C "$here/.." diff --quiet HEAD -- . 2>/dev/null || echo ' (work tree differs)')"
	echo "count: $count (others $other_count), interleave: $interleave"
} | tee "$out/env.txt"

# The load average, every 5 seconds, while the benchmarks run.
(
	while :; do
		echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"
		sleep 5
	done
) >"$out/load.txt" &
sampler=$!
trap 'kill "$sampler" 2>/dev/null || true' EXIT

echo "== checks: the implementations take the same edges, the library allocates nothing"
go vet ./...
go test -count=1 ./...

echo "== comparison ($count runs) -> $out/compare.txt"
: >"$out/compare.txt"
if [ "$interleave" = 1 ]; then
	for i in $(seq "$count"); do
		echo "   run $i of $count"
		go test -run '^$' -bench "$compare" -benchmem -count 1 . >>"$out/compare.txt"
	done
else
	go test -run '^$' -bench "$compare" -benchmem -count "$count" . >"$out/compare.txt"
fi

if [ "$compare_only" = 0 ]; then
	echo "== flows, fleet functions, parts ($other_count runs) -> $out/others.txt"
	go test -run '^$' -bench "$others" -benchmem -count "$other_count" . >"$out/others.txt"
	echo "== the core's own benchmarks ($other_count runs) -> $out/core.txt"
	(cd .. && go test -run '^$' -bench . -benchmem -count "$other_count" ./lifecycle ./retry) >"$out/core.txt"
fi

kill "$sampler" 2>/dev/null || true
trap - EXIT

benchstat() { go run "golang.org/x/perf/cmd/benchstat@$benchstat_version" "$@"; }

echo
echo "== benchstat -col /impl (columns: the implementations; deltas against the first, impl=lifecycle)"
benchstat -col /impl "$out/compare.txt"
if [ "$compare_only" = 0 ]; then
	echo
	echo "== benchstat: flows, fleet functions, parts, core"
	benchstat "$out/others.txt"
	benchstat "$out/core.txt"
fi

echo
echo "== ratios (cmd/benchratio)"
if [ "$compare_only" = 0 ]; then
	go run ./cmd/benchratio "$out/compare.txt" "$out/others.txt" "$out/core.txt"
else
	go run ./cmd/benchratio "$out/compare.txt"
fi

echo
echo "== environment"
cat "$out/env.txt"
awk '{ if (min == "" || $2 < min) min = $2; if ($2 > max) max = $2 } END { print "load average (1 min) during the runs: " min "-" max " (" NR " samples, " FILENAME ")" }' "$out/load.txt"
echo "raw outputs: $out"
