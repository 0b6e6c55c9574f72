#!/usr/bin/env bash
# Prints a folder in the envtest layout (kube-apiserver, etcd, kubectl), honouring KUBEBUILDER_ASSETS,
# otherwise building etcd and kube-apiserver + kubectl from Go modules into the cache. It also makes sure a
# kube-controller-manager of the same version is there (garbage collection, namespace deletion, service
# accounts), building it into the cache when neither the cache nor KUBEBUILDER_ASSETS holds one.
#
#   kube.sh                           the assets folder (builds whatever is missing)
#   kube.sh kube-controller-manager   the path of kube-controller-manager (KUBEBUILDER_ASSETS' own if it has one)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cache_assets="$GLIDEPATH_CACHE/kube-$KUBE_VERSION-etcd-$ETCD_VERSION"

# The wrapper module, in the current (empty) folder: k8s.io/kubernetes requires its staging modules at v0.0.0
# with local replaces, so each is replaced with its published v0.X.Y.
kube_module() {
  go mod init kubebuild
  local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  grep '^godebug' "$gomod" >>go.mod || true
  echo "require k8s.io/kubernetes v$KUBE_VERSION" >>go.mod
  local staging; staging=$(grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging' "$gomod" | awk '{print $1}')
  [ -n "$staging" ] || { echo "no staging replaces found in $gomod" >&2; return 1; }
  for m in $staging; do echo "replace $m => $m v0.${KUBE_VERSION#1.}" >>go.mod; done
}

kube_build() { # kube_build OUT_DIR CMD...: builds k8s.io/kubernetes/cmd/<CMD> into OUT_DIR/<CMD>
  local out=$1; shift
  local minor=${KUBE_VERSION#*.}; minor=${minor%%.*}
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  local c pkgs=()
  for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c@v$KUBE_VERSION"); done
  go get "${pkgs[@]}"
  for c in "$@"; do CGO_ENABLED=0 go build -ldflags="$ld" -o "$out/$c.tmp" "k8s.io/kubernetes/cmd/$c"; done
  for c in "$@"; do mv "$out/$c.tmp" "$out/$c"; done
}

build_etcd() {
  local w; w=$(mktemp -d)
  cd "$w"
  go mod init etcdbuild
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
  CGO_ENABLED=0 go build -ldflags='-s -w' -o "$cache_assets/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$cache_assets/etcd.tmp" "$cache_assets/etcd"
  rm -rf "$w"
}

build_kube() {
  local w; w=$(mktemp -d)
  cd "$w"
  kube_module
  kube_build "$cache_assets" kube-apiserver kubectl
  rm -rf "$w"
}

build_controller_manager() {
  local w; w=$(mktemp -d)
  cd "$w"
  kube_module
  kube_build "$cache_assets" kube-controller-manager
  rm -rf "$w"
}

# kube-controller-manager: KUBEBUILDER_ASSETS' own, else the cache's (built when missing).
ensure_controller_manager() {
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kube-controller-manager" ]; then
    echo "$KUBEBUILDER_ASSETS/kube-controller-manager"; return
  fi
  if [ ! -x "$cache_assets/kube-controller-manager" ]; then
    if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
      log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS has no kube-controller-manager (envtest's layout does not include it);" \
        "building v$KUBE_VERSION into $cache_assets instead (put one in KUBEBUILDER_ASSETS to use yours)"
    fi
    require_go "kube-controller-manager" KUBEBUILDER_ASSETS "a folder holding kube-apiserver, etcd, kubectl and kube-controller-manager"
    build_lock
    mkdir -p "$cache_assets"
    [ -x "$cache_assets/kube-controller-manager" ] || run_build "kube-controller-manager-$KUBE_VERSION" build_controller_manager
  fi
  echo "$cache_assets/kube-controller-manager"
}

case "${1:-}" in
  '') ;;
  kube-controller-manager) ensure_controller_manager; exit 0 ;;
  *) die "usage: kube.sh [kube-controller-manager]" ;;
esac

if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  for b in kube-apiserver etcd; do
    [ -x "$KUBEBUILDER_ASSETS/$b" ] || die "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS has no executable $b"
  done
  ensure_controller_manager >/dev/null
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi

if ! { [ -x "$cache_assets/kube-apiserver" ] && [ -x "$cache_assets/etcd" ] && [ -x "$cache_assets/kubectl" ]; }; then
  require_go "kube-apiserver/etcd" KUBEBUILDER_ASSETS "a folder holding kube-apiserver, etcd and kubectl (the envtest layout)"
  build_lock
  mkdir -p "$cache_assets"
  [ -x "$cache_assets/etcd" ] || run_build "etcd-$ETCD_VERSION" build_etcd
  { [ -x "$cache_assets/kube-apiserver" ] && [ -x "$cache_assets/kubectl" ]; } || run_build "kube-$KUBE_VERSION" build_kube
fi
ensure_controller_manager >/dev/null
echo "$cache_assets"
