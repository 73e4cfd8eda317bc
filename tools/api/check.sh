#!/usr/bin/env bash
# The public API guarded. api/ holds, for each core package, the
# listing of its exported API as it was last recorded:
#
#   api/NAME.txt     one feature a line (tools/api/main.go): what a reviewer reads
#   api/NAME.export  the package's export data as apidiff writes it (apidiff -w):
#                    what apidiff compares the code against
#
# check.sh          compares the code with api/ and fails when
#                   - apidiff reports an incompatible change (it exits 0 even
#                     then, so its report is parsed),
#                   - apidiff reports a compatible change (an addition not yet
#                     recorded: the listing is stale), or
#                   - a text listing differs from the one the code gives.
# check.sh -w       records the API in api/ (commit it with the change). An
#                   export data file is rewritten only when apidiff finds a
#                   difference, so edits that change no API leave it alone.
#
# Needs only Go and the module proxy: it installs apidiff, pinned below, the way
# .ci/run installs staticcheck. Runs from any directory.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

module=github.com/purelifecycle/machine
# The core packages, the pass, and lifecycletest, whose generators, checker and explorer
# are exported for users' property tests. NAME, the last path element, names
# the files in api/.
packages=(phase lastop retry driverapi lifecycle lifecycle/pass lifecycle/lifecycletest)
# golang.org/x/exp has no tagged versions; this is the newest pseudo-version
# (go list -m golang.org/x/exp@latest); it requires go 1.26.0.
APIDIFF_VERSION=v0.0.0-20261014143641-f0251eb4aa3e
update="hint: record the API with 'bash tools/api/check.sh -w' and commit api/ with the change"

write=false
case "${1:-}" in
  "") ;;
  -w) write=true ;;
  *) echo "usage: bash tools/api/check.sh [-w]" >&2; exit 2 ;;
esac

# Build tags or an overlay in the caller's GOFLAGS could change the API, and
# go.work files are no part of what users build. The
# tools run here, so they are built for this machine; the API and the export
# data are the same for every GOOS and GOARCH (no core file is constrained).
export GOFLAGS=-buildvcs=false GOWORK=off
unset GOOS GOARCH

gobin=$(go env GOBIN)
if [ -z "$gobin" ]; then gobin="$(go env GOPATH | cut -d: -f1)/bin"; fi
apidiff="$gobin/apidiff"
installed=$({ go version -m "$apidiff" 2>/dev/null || true; } | awk '$1 == "mod" && $2 == "golang.org/x/exp" { print $3 }')
if [ "$installed" != "$APIDIFF_VERSION" ]; then
  go install "golang.org/x/exp/cmd/apidiff@${APIDIFF_VERSION}"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -C tools/api -o "$tmp/apilist" .

names=()
for p in "${packages[@]}"; do names+=("$(basename "$p")"); done

# guarded NAME: whether NAME names a guarded package. A loop, not
# printf | grep -q: under pipefail, grep -q quitting at its first match can
# kill printf with SIGPIPE and so fail the pipeline at random.
guarded() {
  local name
  for name in "${names[@]}"; do
    if [ "$name" = "$1" ]; then return 0; fi
  done
  return 1
}
if [ "$(printf '%s\n' "${names[@]}" | sort | uniq -d)" != "" ]; then
  echo "tools/api: two packages share a last path element; api/ names files by it" >&2; exit 1
fi

# Text listings of the code as it is, into $tmp/NAME.txt.
args=()
for p in "${packages[@]}"; do args+=("$module/$p=$tmp/$(basename "$p").txt"); done
if ! "$tmp/apilist" -C "$root" "${args[@]}"; then
  echo "tools/api: could not list the API of the packages (do they build?)" >&2; exit 1
fi

# diffapi PKG NAME: apidiff between api/NAME.export and the code of PKG; sets
# incompatible and compatible to its messages, one a line.
diffapi() {
  local out line section=""
  incompatible="" compatible=""
  if ! out=$("$apidiff" "api/$2.export" "$module/$1" 2>"$tmp/apidiff.err"); then
    cat "$tmp/apidiff.err" >&2
    echo "tools/api: apidiff could not compare $module/$1 with api/$2.export (does it build?)" >&2
    exit 1
  fi
  while IFS= read -r line; do
    case "$line" in
      "Incompatible changes:") section=incompatible ;;
      "Compatible changes:") section=compatible ;;
      "- "*)
        case "$section" in
          incompatible) incompatible+="${line#- }"$'\n' ;;
          compatible) compatible+="${line#- }"$'\n' ;;
          *) echo "tools/api: unexpected apidiff output for $module/$1: $line" >&2; exit 1 ;;
        esac ;;
      "") ;;
      *) echo "tools/api: unexpected apidiff output for $module/$1: $line" >&2; exit 1 ;;
    esac
  done <<<"$out"
}

if $write; then
  mkdir -p api
  for p in "${packages[@]}"; do
    n=$(basename "$p")
    cp "$tmp/$n.txt" "api/$n.txt"
    if [ -f "api/$n.export" ]; then
      diffapi "$p" "$n"
      if [ -z "$incompatible$compatible" ]; then continue; fi
    fi
    # -trimpath: the file records source positions, by module path so, not by
    # the directory of the checkout.
    GOFLAGS="$GOFLAGS -trimpath" "$apidiff" -w "$tmp/$n.export" "$module/$p"
    mv "$tmp/$n.export" "api/$n.export"
    echo "tools/api: recorded the API of $module/$p in api/$n.export"
  done
  for f in api/*.txt api/*.export; do
    n=$(basename "${f%.*}")
    if [ -e "$f" ] && ! guarded "$n"; then
      rm "$f"; echo "tools/api: removed $f: $n is no core package"
    fi
  done
fi

failed=false broke=false
for p in "${packages[@]}"; do
  n=$(basename "$p")
  if [ ! -f "api/$n.export" ] || [ ! -f "api/$n.txt" ]; then
    echo "tools/api: $module/$p: no listing in api/ ($n.export, $n.txt)"; failed=true; continue
  fi
  diffapi "$p" "$n"
  if [ -n "$incompatible" ]; then
    echo "tools/api: $module/$p: INCOMPATIBLE API change(s) against api/$n.export:"
    printf '%s' "$incompatible" | sed 's/^/  - /'
    failed=true broke=true
  fi
  if [ -n "$compatible" ]; then
    echo "tools/api: $module/$p: the listing is stale: compatible change(s) not recorded in api/$n.export:"
    printf '%s' "$compatible" | sed 's/^/  - /'
    failed=true
  fi
  if ! diff -u --label "api/$n.txt (recorded)" --label "api/$n.txt (the code)" "api/$n.txt" "$tmp/$n.txt" >"$tmp/$n.diff"; then
    echo "tools/api: $module/$p: api/$n.txt is stale:"
    sed 's/^/  /' "$tmp/$n.diff"
    failed=true
  fi
done
for f in api/*.txt api/*.export; do
  n=$(basename "${f%.*}")
  if [ -e "$f" ] && ! guarded "$n"; then
    echo "tools/api: $f: $n is no core package"; failed=true
  fi
done

if $broke; then
  echo "tools/api: an incompatible change breaks users' code: undo it, or, if the break is meant, record it."
  echo "  $update"
  exit 1
elif $failed; then
  echo "tools/api: api/ is out of date: it must record the exported API as the code has it (see above)."
  echo "  $update"
  exit 1
fi
echo "tools/api: the exported API of ${#packages[@]} packages matches api/"
