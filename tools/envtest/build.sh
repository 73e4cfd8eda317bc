#!/usr/bin/env bash
# Builds the binaries controller-runtime's envtest starts, kube-apiserver and
# etcd, from the Go module proxy with `go build`, and prints the directory to
# use as KUBEBUILDER_ASSETS (the only line on stdout; progress goes to stderr):
#
#   export KUBEBUILDER_ASSETS=$(bash tools/envtest/build.sh)
#
# Each binary is built inside a small wrapper module of the project's own,
# tools/envtest/kube-apiserver and tools/envtest/etcd, whose go.mod and go.sum
# pin exactly what is built. `go install` cannot build either (their go.mod
# files carry replace directives), and the kube-apiserver wrapper restates
# Kubernetes' k8s.io/* staging replaces at the staging version. The two are
# kept apart so kube-apiserver builds with exactly Kubernetes' dependency set.
#
# The binaries go to $ENVTEST_CACHE/k8s-<ver>-etcd-<ver>/ (default: .cache/envtest
# at the repository root, ignored by git). When both are there and report the
# expected versions, nothing is built. A failed build exits non-zero.
#
#   build.sh          build if needed, print the assets directory
#   build.sh regen    rewrite the wrapper modules' go.mod/go.sum from scratch
#                     (after changing the versions below), then build
set -euo pipefail

K8S_VERSION=v1.37.1     # k8s.io/kubernetes; v1.37.2's source is refused by the proxy
STAGING_VERSION=v0.37.1 # the k8s.io/* staging modules of that release
ETCD_VERSION=v3.7.3     # go.etcd.io/etcd/server/v3

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${ENVTEST_CACHE:-$root/.cache/envtest}
assets="$cache/k8s-${K8S_VERSION#v}-etcd-${ETCD_VERSION#v}"

log() { printf 'envtest: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:-} -mod=readonly"

regen_kube_apiserver() {
  local d="$here/kube-apiserver" mod
  log "regenerating $d for k8s.io/kubernetes@$K8S_VERSION, staging $STAGING_VERSION"
  rm -f "$d/go.mod" "$d/go.sum"
  mkdir -p "$d"
  printf 'module local/kube-apiserver-build\n\ngo 1.26.0\n\ngodebug default=go1.26\n\n' >"$d/go.mod"
  mod=$(cd "$d" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  [ -f "$mod" ] || die "no go.mod for k8s.io/kubernetes@$K8S_VERSION"
  {
    echo '// The staging replaces of k8s.io/kubernetes, restated at the release'"'"'s'
    echo '// staging version: a dependency'"'"'s replace directives do not apply.'
    echo 'replace ('
    sed -n '/^replace (/,/^)/p' "$mod" | awk -v v="$STAGING_VERSION" '/=>/{printf "\t%s => %s %s\n", $1, $1, v}'
    echo ')'
  } >>"$d/go.mod"
  (cd "$d" && GOFLAGS= go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION")
}

regen_etcd() {
  local d="$here/etcd"
  log "regenerating $d for go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  rm -f "$d/go.mod" "$d/go.sum"
  mkdir -p "$d"
  printf 'module local/etcd-build\n\ngo 1.26.0\n' >"$d/go.mod"
  (cd "$d" && GOFLAGS= go get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
}

# pinned MODULEDIR MODULE VERSION fails unless the wrapper pins that version.
pinned() {
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?$2 $3( |$)" "$here/$1/go.mod" ||
    die "tools/envtest/$1/go.mod does not pin $2 $3; run: bash tools/envtest/build.sh regen"
}

# ok BIN WANT reports whether BIN exists and its --version mentions WANT.
# ok reports whether binary $1 exists and its --version output contains $2.
# The output is read whole before it is searched: with pipefail, grep -q
# leaving the pipe at its first match can kill the binary by SIGPIPE while it
# still writes (etcd prints several lines), which failed the check at random.
ok() {
  local out
  [ -x "$1" ] && out=$("$1" --version 2>/dev/null) && grep -qF -- "$2" <<<"$out"
}

if [ "${1:-}" = regen ]; then
  regen_kube_apiserver
  regen_etcd
elif [ -n "${1:-}" ]; then
  die "unknown argument $1 (want: regen or nothing)"
fi

pinned kube-apiserver k8s.io/kubernetes "$K8S_VERSION"
pinned etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"

mkdir -p "$assets"

if ok "$assets/kube-apiserver" "Kubernetes $K8S_VERSION"; then
  log "kube-apiserver $K8S_VERSION cached in $assets"
else
  log "building kube-apiserver $K8S_VERSION (about 4.5 minutes with cold caches)"
  start=$SECONDS
  ldflags="-s -w"
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  (cd "$here/kube-apiserver" &&
    go build -trimpath -ldflags "$ldflags" -o "$assets/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver) ||
    die "building kube-apiserver $K8S_VERSION failed"
  mv "$assets/kube-apiserver.tmp" "$assets/kube-apiserver"
  ok "$assets/kube-apiserver" "Kubernetes $K8S_VERSION" || die "kube-apiserver does not report $K8S_VERSION"
  log "kube-apiserver built in $((SECONDS - start)) s"
fi

if ok "$assets/etcd" "etcd Version: ${ETCD_VERSION#v}"; then
  log "etcd $ETCD_VERSION cached in $assets"
else
  log "building etcd $ETCD_VERSION (about 40 s with cold caches)"
  start=$SECONDS
  (cd "$here/etcd" &&
    go build -trimpath -ldflags "-s -w" -o "$assets/etcd.tmp" go.etcd.io/etcd/server/v3) ||
    die "building etcd $ETCD_VERSION failed"
  mv "$assets/etcd.tmp" "$assets/etcd"
  ok "$assets/etcd" "etcd Version: ${ETCD_VERSION#v}" || die "etcd does not report $ETCD_VERSION"
  log "etcd built in $((SECONDS - start)) s"
fi

echo "$assets"
