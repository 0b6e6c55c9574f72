#!/usr/bin/env bash
# Prints a folder in the envtest layout (kube-apiserver, etcd, kubectl), honouring KUBEBUILDER_ASSETS,
# otherwise building etcd and kube-apiserver + kubectl from Go modules into the cache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  for b in kube-apiserver etcd; do
    [ -x "$KUBEBUILDER_ASSETS/$b" ] || die "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS has no executable $b"
  done
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi

assets="$GLIDEPATH_CACHE/kube-$KUBE_VERSION-etcd-$ETCD_VERSION"
if [ -x "$assets/kube-apiserver" ] && [ -x "$assets/etcd" ] && [ -x "$assets/kubectl" ]; then
  echo "$assets"; exit 0
fi
require_go "kube-apiserver/etcd" KUBEBUILDER_ASSETS "a folder holding kube-apiserver, etcd and kubectl (the envtest layout)"
mkdir -p "$assets"

build_etcd() {
  local w; w=$(mktemp -d)
  cd "$w" && go mod init etcdbuild
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
  CGO_ENABLED=0 go build -ldflags='-s -w' -o "$assets/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$assets/etcd.tmp" "$assets/etcd"
  rm -rf "$w"
}

# k8s.io/kubernetes requires its staging modules at v0.0.0 with local replaces; a wrapper module
# replaces each with its published v0.X.Y.
build_kube() {
  local w; w=$(mktemp -d)
  cd "$w" && go mod init kubebuild
  local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  local minor=${KUBE_VERSION#*.}; minor=${minor%%.*}
  grep '^godebug' "$gomod" >>go.mod || true
  echo "require k8s.io/kubernetes v$KUBE_VERSION" >>go.mod
  grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging' "$gomod" | awk '{print $1}' | while read -r m; do
    echo "replace $m => $m v0.${KUBE_VERSION#1.}" >>go.mod
  done
  go get "k8s.io/kubernetes/cmd/kube-apiserver@v$KUBE_VERSION" "k8s.io/kubernetes/cmd/kubectl@v$KUBE_VERSION"
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  CGO_ENABLED=0 go build -ldflags="$ld" -o "$assets/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  CGO_ENABLED=0 go build -ldflags="$ld" -o "$assets/kubectl.tmp" k8s.io/kubernetes/cmd/kubectl
  mv "$assets/kube-apiserver.tmp" "$assets/kube-apiserver"
  mv "$assets/kubectl.tmp" "$assets/kubectl"
  rm -rf "$w"
}

[ -x "$assets/etcd" ] || run_build "etcd-$ETCD_VERSION" build_etcd
{ [ -x "$assets/kube-apiserver" ] && [ -x "$assets/kubectl" ]; } || run_build "kube-$KUBE_VERSION" build_kube
echo "$assets"
