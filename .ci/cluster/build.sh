#!/usr/bin/env bash
# Builds the test cluster's Kubernetes components (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet) from k8s.io/kubernetes at
# the release pinned in .ci/cluster/k8s/go.mod, through the Go module proxy,
# into /var/cache/sandboxed-k8s/<version>/. A version already built there is
# not built again. Prints the directory of the binaries.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$here/k8s/go.mod")
if [[ -z $version ]]; then
	echo "build.sh: no 'require k8s.io/kubernetes vX' line in $here/k8s/go.mod" >&2
	exit 1
fi
cache=${SANDBOXED_K8S_CACHE:-/var/cache/sandboxed-k8s}/$version
commands=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

built=1
for c in "${commands[@]}"; do
	[[ -x $cache/$c ]] || built=0
done
if ((built)); then
	echo "$cache"
	exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
echo "build.sh: building Kubernetes $version into $cache (a cold build takes long on few cores)" >&2
packages=()
for c in "${commands[@]}"; do
	packages+=("k8s.io/kubernetes/cmd/$c")
done
(
	cd "$here/k8s"
	CGO_ENABLED=0 GOFLAGS=-trimpath go build \
		-ldflags "-s -w \
			-X k8s.io/component-base/version.gitVersion=$version \
			-X k8s.io/component-base/version.gitMajor=1 \
			-X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$version") \
			-X k8s.io/component-base/version.gitTreeState=clean \
			-X k8s.io/client-go/pkg/version.gitVersion=$version" \
		-o "$tmp/" "${packages[@]}"
)
for c in "${commands[@]}"; do
	mv "$tmp/$c" "$cache/$c"
done
echo "build.sh: built Kubernetes $version in $((SECONDS - start))s" >&2
echo "$cache"
