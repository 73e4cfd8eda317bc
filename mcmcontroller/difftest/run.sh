#!/usr/bin/env bash
# Runs the tests of mcmcontroller/difftest that drive MCM's own machine
# controller (build tag mcmref). MCM's controller cannot be driven reconcile
# by reconcile from outside its package, so this script copies MCM v0.62.1
# out of the Go module cache into a temporary directory, adds the one file
# testdata/hook.go.txt (ReconcileMachine), and builds the tests with a
# go.mod whose replace points at the copy (-modfile). Nothing of MCM is
# committed.
#
# Needs KUBEBUILDER_ASSETS (tools/envtest/build.sh prints it) to run the
# tests; without it they skip.
#
# Usage: mcmcontroller/difftest/run.sh [go test flags]
#        mcmcontroller/difftest/run.sh vet|staticcheck   (checks the tagged code)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
module=$(cd "$here/.." && pwd)
cd "$module"

go mod download github.com/gardener/machine-controller-manager
src=$(go list -m -f '{{.Dir}}' github.com/gardener/machine-controller-manager)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT

cp -r "$src" "$tmp/mcm"
chmod -R u+w "$tmp/mcm"
cp "$here/testdata/hook.go.txt" "$tmp/mcm/pkg/util/provider/machinecontroller/zz_reconcile_once.go"

cp go.mod "$tmp/go.mod"
cp go.sum "$tmp/go.sum"
printf '\nreplace github.com/gardener/machine-controller-manager => %s\n' "$tmp/mcm" >>"$tmp/go.mod"
# The paths of the module's own replaces are relative to go.mod: make them absolute.
sed -i "s# => \.\./adapters/mcm# => $(cd .. && pwd)/adapters/mcm#; s# => \.\.\$# => $(cd .. && pwd)#" "$tmp/go.mod"

case "${1:-}" in
vet) go vet -tags mcmref -modfile "$tmp/go.mod" ./difftest/ ;;
staticcheck)
  # staticcheck's loader refuses -modfile; a workspace carries the replace.
  printf 'go %s\n\nuse %s\n\nreplace github.com/gardener/machine-controller-manager => %s\n' \
    "$(awk '$1 == "go" {print $2}' go.mod)" "$module" "$tmp/mcm" >"$tmp/go.work"
  sc=$(command -v staticcheck || echo "$(go env GOPATH)/bin/staticcheck")
  GOWORK="$tmp/go.work" "$sc" -tags mcmref ./difftest/
  ;;
*) MCM_DIR="$tmp/mcm" go test -tags mcmref -modfile "$tmp/go.mod" -count=1 "$@" ./difftest/ ;;
esac
