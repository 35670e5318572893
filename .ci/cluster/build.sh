#!/usr/bin/env bash
# build.sh k8s: builds the test cluster's binaries through the Go module
# proxy, from the release pinned in the module of the same name in this
# directory, into the cache, and prints the directory of the binaries. A
# version built already is not built again.
#
#   k8s     kube-apiserver, kube-controller-manager, kube-scheduler and
#           kubelet from k8s.io/kubernetes, into
#           /var/cache/sandboxed-k8s/<version>/
#
# SANDBOXED_K8S_CACHE moves the cache.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
what=${1:-}
case $what in
k8s) module=k8s.io/kubernetes prefix= ;;
*)
	echo "usage: build.sh k8s" >&2
	exit 2
	;;
esac
version=$(awk -v m="$module" '$1 == "require" && $2 == m { print $3 }' "$here/$what/go.mod")
if [[ -z $version ]]; then
	echo "build.sh: no 'require $module vX' line in $here/$what/go.mod" >&2
	exit 1
fi
cache=${SANDBOXED_K8S_CACHE:-/var/cache/sandboxed-k8s}/$prefix$version

# Each command: its package, and the name it is installed under.
declare -A packages
ldflags="-s -w"
case $what in
k8s)
	for c in kube-apiserver kube-controller-manager kube-scheduler kubelet; do
		packages[$c]=k8s.io/kubernetes/cmd/$c
	done
	minor=$(cut -d. -f2 <<<"$version")
	ldflags="$ldflags -X k8s.io/component-base/version.gitVersion=$version
		-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor
		-X k8s.io/component-base/version.gitTreeState=clean
		-X k8s.io/client-go/pkg/version.gitVersion=$version"
	;;
esac

built=1
for c in "${!packages[@]}"; do
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
echo "build.sh: building $module $version into $cache (a cold build takes long on few cores)" >&2
for c in "${!packages[@]}"; do
	(
		cd "$here/$what"
		CGO_ENABLED=0 GOFLAGS=-trimpath go build -ldflags "$ldflags" -o "$tmp/$c" "${packages[$c]}"
	)
done
for c in "${!packages[@]}"; do
	mv "$tmp/$c" "$cache/$c"
done
echo "build.sh: built $module $version in $((SECONDS - start))s" >&2
echo "$cache"
