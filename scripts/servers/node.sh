#!/usr/bin/env bash
# Prints a folder holding kubelet and kube-scheduler of the same version as kube.sh's kube-apiserver, and `pause`
# (a pod sandbox's process: waits for SIGTERM): what a real node needs besides kube-controller-manager (kube.sh
# builds that) and containerd (Debian's package). Honours KUBEBUILDER_ASSETS when it holds all three, otherwise
# builds them from Go modules into the cache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir="$GLIDEPATH_CACHE/kube-node-$KUBE_VERSION"
kube_binaries=(kubelet kube-scheduler)
binaries=("${kube_binaries[@]}" pause)

has_all() { local b; for b in "${binaries[@]}"; do [ -x "$1/$b" ] || return 1; done; }

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && has_all "$KUBEBUILDER_ASSETS"; then echo "$KUBEBUILDER_ASSETS"; exit 0; fi
if has_all "$dir"; then echo "$dir"; exit 0; fi

# The wrapper module of kube.sh (kube_module there): k8s.io/kubernetes requires its staging modules at v0.0.0
# with local replaces, so each is replaced with its published v0.X.Y.
build_node() {
  local w; w=$(mktemp -d)
  cd "$w"
  go mod init kubenodebuild
  local gomod; gomod=$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  grep '^godebug' "$gomod" >>go.mod || true
  echo "require k8s.io/kubernetes v$KUBE_VERSION" >>go.mod
  local staging m; staging=$(grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging' "$gomod" | awk '{print $1}')
  [ -n "$staging" ] || { echo "no staging replaces found in $gomod" >&2; return 1; }
  for m in $staging; do echo "replace $m => $m v0.${KUBE_VERSION#1.}" >>go.mod; done

  local minor=${KUBE_VERSION#*.}; minor=${minor%%.*}
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  local c pkgs=()
  for c in "${kube_binaries[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c@v$KUBE_VERSION"); done
  go get "${pkgs[@]}"
  for c in "${kube_binaries[@]}"; do CGO_ENABLED=0 go build -ldflags="$ld" -o "$dir/$c.tmp" "k8s.io/kubernetes/cmd/$c"; done
  for c in "${kube_binaries[@]}"; do mv "$dir/$c.tmp" "$dir/$c"; done
  rm -rf "$w"
}

# Kubernetes' own pause is C; this does what a sandbox needs of it (no registry here to pull it from).
build_pause() {
  local w; w=$(mktemp -d)
  cd "$w"
  go mod init pause
  cat >main.go <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
GO
  CGO_ENABLED=0 go build -ldflags='-s -w' -o "$dir/pause.tmp" .
  mv "$dir/pause.tmp" "$dir/pause"
  rm -rf "$w"
}

require_go "kubelet/kube-scheduler/pause" KUBEBUILDER_ASSETS "a folder holding kubelet and kube-scheduler v$KUBE_VERSION and pause"
build_lock
mkdir -p "$dir"
{ [ -x "$dir/kubelet" ] && [ -x "$dir/kube-scheduler" ]; } || run_build "kube-node-$KUBE_VERSION" build_node
[ -x "$dir/pause" ] || run_build pause build_pause
echo "$dir"
