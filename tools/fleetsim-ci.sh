#!/usr/bin/env bash
# The fleet simulator's CI matrix. Builds examples/fleetsim/cmd/fleetsim once
# and runs it:
#   - 10,000 machines, seeds 1, 2 and 3, with each fault knob alone (every
#     other fault off: -only KNOB) at 10 times its default (-fault-scale 10;
#     rates are capped at what a probability allows, see
#     fleetsim.Options.SetFaults), then every knob together at its default and
#     at 3 times, and every knob at its default with one of three zones down
#     for an hour, the limiter's zone protection on (-zone-outage 1h: the
#     zone's machines held, the other zones' replaced, the zone's own once
#     their hold is over);
#   - 10,000 machines without a target cluster (machines end Available);
#   - a limit of five replacements in flight per owner, with many machines
#     dying and the limiter's fleet view lagging (its default, 10 s): the
#     replacements an owner created within the lag are hidden from the view;
#   - two settings that once broke the lifecycle: stale node names with
#     unreadable nodes, and clock jumps of up to six hours on half the steps;
#   - the in-place update (-inplace: a third of the machines updated in place
#     by their node agents, which succeed, fail or stall; every fault at 3
#     times its default) and preservation (-preserve: a third annotated, one
#     Failed machine per owner auto-preserved, a 40-minute timeout; every
#     fault at its default), each alone and both together (faults at twice
#     their default);
#   - a million machines without teardown, whose end-state checks cover the
#     machines left Running.
# Every run must pass; the script prints one line per run (its verdict, wall
# time and flags) and the total time, and exits 1 when a run failed, after
# printing the violations of each failed run.
#
# Usage: tools/fleetsim-ci.sh   (from anywhere; it runs from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."

total_start=$EPOCHREALTIME
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/fleetsim
go build -o "$bin" ./examples/fleetsim/cmd/fleetsim

failed=()
runs=0

# elapsed START: seconds since START (an $EPOCHREALTIME), to the millisecond.
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

# run FLAGS...: one simulation; its report goes to $tmp/report.
run() {
	local start=$EPOCHREALTIME verdict=PASS
	if ! "$bin" "$@" >"$tmp/report" 2>"$tmp/stderr"; then
		verdict=FAIL
	fi
	if [ "$verdict" = PASS ] && [ "${require_running:-}" = 1 ] &&
		! grep -qE '^at the end .*phases:.* Running [1-9]' "$tmp/report"; then
		verdict="FAIL (no Running machine at the end to check)"
	fi
	runs=$((runs + 1))
	printf '%-4s %8ss  fleetsim %s\n' "$verdict" "$(elapsed "$start")" "$*"
	if [ "$verdict" != PASS ]; then
		failed+=("$*")
		{
			grep -E '^(VIOLATIONS|  shard )' "$tmp/report" | head -20 || true
			grep -vE '^wall ' "$tmp/stderr" | head -5 || true
		} | sed 's/^/      /'
	fi
}

knobs=$("$bin" -list-faults)
for seed in 1 2 3; do
	for knob in $knobs; do
		run -machines 10000 -seed "$seed" -only "$knob" -fault-scale 10
	done
	run -machines 10000 -seed "$seed"
	run -machines 10000 -seed "$seed" -fault-scale 3
	run -machines 10000 -seed "$seed" -zone-outage 1h
done
inplace=(-inplace 0.3)
preserve=(-preserve 0.3 -dead 0.05)
run -machines 10000 -seed 1 "${inplace[@]}" -fault-scale 3
run -machines 10000 -seed 2 "${preserve[@]}"
run -machines 10000 -seed 3 "${inplace[@]}" "${preserve[@]}" -fault-scale 2
run -machines 10000 -seed 1 -no-target-cluster
run -machines 10000 -seed 1 -replacements 5 -dead 0.3
run -machines 10000 -seed 2 -stale-node 0.05 -node-read-fail 0.05
run -machines 10000 -seed 2 -clock-jump 0.5 -clock-jump-max 6h
require_running=1 run -machines 1000000 -seed 1

echo "total: $runs runs in $(elapsed "$total_start")s, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'failed: fleetsim %s\n' "${failed[@]}"
	exit 1
fi
