#!/usr/bin/env bash
# Mutation checks (issue 5): each mutation breaks one rule of the lifecycle on
# purpose, behind a build tag (lifecycle/mutation_*_on.go). The property
# tests, the model check and the fleet simulator must each fail on every
# one; a mutation that one of them lets through means that check has gone
# blind to the promise the mutation breaks.
#
# Usage: tools/mutations.sh [mutation ...]   (default: all of them)
set -euo pipefail
cd "$(dirname "$0")/.."

mutations=("$@")
if [ ${#mutations[@]} -eq 0 ]; then
	mutations=($(ls lifecycle/mutation_*_on.go | sed 's|lifecycle/mutation_||; s|_on.go||'))
fi

# expect_failure NAME COMMAND...: the command must fail, and not for a build
# error (its output must not say "build failed" or "cannot").
expect_failure() {
	local name=$1
	shift
	local out
	if out=$("$@" 2>&1); then
		echo "mutation $tag: $name PASSED, so it does not see the broken rule:"
		echo "  $*"
		return 1
	fi
	if grep -qE '\[build failed\]|^# |cannot use|undefined:' <<<"$out"; then
		echo "mutation $tag: $name did not build:"
		echo "$out" | head -20
		return 1
	fi
	echo "mutation $tag: $name fails, as it must: $(grep -m1 -oE '(VIOLATION|promise broken|--- FAIL).{0,140}' <<<"$out" || true)"
}

# The failing property tests leave rapid's .fail files behind; they record
# the mutants' failures, not the library's, so they are removed at the end.
before_fail_files=$(find lifecycle/testdata/rapid -name '*.fail' 2>/dev/null | sort)
cleanup() {
	comm -13 <(echo "$before_fail_files") <(find lifecycle/testdata/rapid -name '*.fail' 2>/dev/null | sort) | xargs -r rm -f
	find lifecycle/testdata/rapid -type d -empty -delete 2>/dev/null || true
}
trap cleanup EXIT

status=0
for m in "${mutations[@]}"; do
	tag=mutation_$m
	expect_failure "property tests" go test -tags "$tag" -count=1 ./lifecycle/ -run '^TestProperty' -rapid.checks=20000 || status=1
	expect_failure "model check" go test -tags "$tag" -count=1 ./lifecycle/ -run '^TestModelCheck$' || status=1
	expect_failure "fleet simulator" go run -tags "$tag" ./examples/fleetsim/cmd/fleetsim -machines 10000 -seed 1 || status=1
done
exit $status
