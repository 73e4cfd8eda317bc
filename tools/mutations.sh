#!/usr/bin/env bash
# Mutation checks: each patch in tools/mutations/testdata breaks one rule of
# the lifecycle on purpose (its first lines say which). The patch is applied
# to copies of the current source, which the Go tools read through an
# overlay (go build -overlay), so the checked-in source never carries a
# mutant. The property tests, the model check and the fleet simulator must
# each fail on every mutant; a mutant one of them lets through means that
# check has gone blind to the promise the mutant breaks. A patch that no
# longer applies, or that applies and changes nothing, fails the run too:
# the source moved, and the mutant must be written again.
#
# Usage: tools/mutations.sh [mutant ...]   (default: every patch)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
patches=tools/mutations/testdata

mutants=("$@")
if [ ${#mutants[@]} -eq 0 ]; then
	mutants=($(ls "$patches"/*.patch | sed 's|.*/||; s|\.patch$||'))
fi

work=$(mktemp -d)

# The failing property tests leave rapid's .fail files behind; they record
# the mutants' failures, not the library's, so they are removed at the end.
before_fail_files=$(find lifecycle/testdata/rapid -name '*.fail' 2>/dev/null | sort)
cleanup() {
	comm -13 <(echo "$before_fail_files") <(find lifecycle/testdata/rapid -name '*.fail' 2>/dev/null | sort) | xargs -r rm -f
	find lifecycle/testdata/rapid -type d -empty -delete 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# overlay NAME: applies the mutant's patch to copies of the files it names
# under $work/NAME and writes the overlay file $work/NAME.json mapping each
# source file to its mutated copy. It fails when the patch does not apply
# or leaves a file unchanged.
overlay() {
	local name=$1 patch=$root/$patches/$1.patch dir=$work/$1
	local files
	files=$(sed -n 's|^+++ b/||p' "$patch" | sed 's/\t.*//')
	if [ -z "$files" ]; then
		echo "mutant $name: $patch names no file"
		return 1
	fi
	mkdir -p "$dir"
	local f
	for f in $files; do
		if [ ! -f "$f" ]; then
			echo "mutant $name: $f, which the patch changes, does not exist"
			return 1
		fi
		mkdir -p "$dir/$(dirname "$f")"
		cp "$f" "$dir/$f"
	done
	# git apply works on plain directories too; it refuses context that no
	# longer matches instead of guessing.
	if ! (cd "$dir" && git apply "$patch"); then
		echo "mutant $name: the patch no longer applies to the current source; write it again"
		return 1
	fi
	local entries=()
	for f in $files; do
		if cmp -s "$f" "$dir/$f"; then
			echo "mutant $name: the patch changes nothing in $f"
			return 1
		fi
		entries+=("\"$root/$f\": \"$dir/$f\"")
	done
	local IFS=,
	echo "{\"Replace\": {${entries[*]}}}" >"$dir.json"
}

# expect_failure NAME COMMAND...: the command must fail, and not for a build
# error (its output must not say "build failed" or "cannot").
expect_failure() {
	local what=$1
	shift
	local out
	if out=$("$@" 2>&1); then
		echo "mutant $name: $what PASSED, so it does not see the broken rule:"
		echo "  $*"
		return 1
	fi
	if grep -qE '\[build failed\]|^# |cannot use|undefined:|invalid overlay' <<<"$out"; then
		echo "mutant $name: $what did not build:"
		echo "$out" | head -20
		return 1
	fi
	echo "mutant $name: $what fails, as it must: $(grep -m1 -oE '(VIOLATION|promise broken|--- FAIL).{0,140}' <<<"$out" || true)"
}

# The checks of overlay itself: the planted patches under selftest must be
# refused, one for context the source no longer has, one for changing
# nothing.
for planted in "stale:no longer applies" "noop:changes nothing"; do
	name=${planted%%:*}
	if out=$(patches=$patches/selftest overlay "$name" 2>&1) || ! grep -q "${planted#*:}" <<<"$out"; then
		echo "the planted patch $patches/selftest/$name.patch was not refused for what it is (${planted#*:}):"
		echo "$out"
		exit 1
	fi
done

status=0
for name in "${mutants[@]}"; do
	if ! overlay "$name"; then
		status=1
		continue
	fi
	ov=-overlay=$work/$name.json
	expect_failure "property tests" go test "$ov" -count=1 ./lifecycle/ -run '^TestProperty' -rapid.checks=20000 || status=1
	expect_failure "model check" go test "$ov" -count=1 ./lifecycle/ -run '^TestModelCheck$' || status=1
	expect_failure "fleet simulator" go run "$ov" ./examples/fleetsim/cmd/fleetsim -machines 10000 -seed 1 || status=1
done
exit $status
