#!/usr/bin/env bash
# The test cluster: a real single-node Kubernetes cluster on this machine,
# for the Kubernetes backend's end-to-end tests.
#
#   cluster.sh up [CHECKOUT]    make it (idempotent; seconds when it is up)
#   cluster.sh down [CHECKOUT]  remove it and everything it left on the host
#   cluster.sh status           say whether it is up
#
# Root only. `make cluster-up` / `make cluster-down` run it with CHECKOUT the
# repository, where the admin kubeconfig is written: CHECKOUT/.cluster/kubeconfig.
#
# What `up` makes (the Kubernetes backend and its tests may rely on all of it):
#   - etcd (Debian's etcd-server), kube-apiserver, kube-controller-manager,
#     kube-scheduler and kubelet (built from k8s.io/kubernetes by build.sh,
#     cached in /var/cache/sandboxed-k8s/<version>), and a containerd (Debian's)
#     of its own, each a background daemon; logs in /var/lib/sandboxed-k8s/log,
#     pid files in /run/sandboxed-k8s. Nothing listens beyond loopback but the
#     kubelet, on the node address.
#   - API server https://127.0.0.1:6443, RBAC and Node authorization, client
#     certificates only (no anonymous access). The kubeconfig's identity is
#     sandboxed-admin in group system:masters.
#   - One node, sandboxed-node, address 192.0.2.1 (the pod bridge's).
#   - Pod range 192.0.2.0/24 (bridge sbxk8s0, host-local IPAM, addresses from
#     192.0.2.16); service range 203.0.113.0/24. No kube-proxy, no DNS:
#     services have no data path. On a host whose own network is in
#     192.0.2.0/24 (its address or a route: the bridge would take its
#     gateway's address), both go in 203.0.113.0/24 instead: node
#     203.0.113.129, pods 203.0.113.128/25, services 203.0.113.0/25
#     (pick_network).
#   - No network out of a pod: the pods have no default route, and iptables
#     (chain SANDBOXED-K8S, IPv4 and IPv6) drops whatever comes in from the
#     bridge, to the host (INPUT) or anywhere else (FORWARD), pod to pod
#     included. NetworkPolicy objects are accepted by the API server but
#     nothing enforces them. A pod reaches the host only through a Unix
#     socket on a hostPath volume (the runsc handlers run with --host-uds=open).
#   - Container runtimes (containerd runtime handlers): runc, the default;
#     runsc and runsc-nonet, both Debian's runsc (gVisor) with the container
#     tier's flags, --host-uds=open --network=none --oci-seccomp (loopback
#     only: see runsc_flags for why runsc has no network stack of gVisor's
#     either), run by containerd's runc shim through runsc.sh (which says
#     why). RuntimeClasses gvisor (handler runsc) and gvisor-nonet (handler
#     runsc-nonet), both annotated sandboxed.dev/no-network: "true"; a run
#     that must have no network names gvisor-nonet, which keeps that meaning
#     whatever gvisor becomes.
#   - The pods' oom_score_adj is never below containerd's (0): the host may
#     deny lowering it.
#   - The container tier's seccomp profile (sandboxed setup --seccomp-profile)
#     in the kubelet's seccomp directory as sandboxed.json, a Localhost
#     profile the Kubernetes backend gives its pods (the cluster facts
#     advertise it): containerd's RuntimeDefault names glibc's select
#     pselect6 only, a name gVisor does not know, so under runsc a pod of
#     RuntimeDefault could not call it.
#   - Images in containerd (namespace k8s.io), imported from local files:
#     the runner image sandboxed-runner:latest (docker.io/library/sandboxed-
#     runner:latest; the container tier's, exported from Docker after
#     `sandboxed images build`) and the pause image. No registry is
#     reachable: pods must say imagePullPolicy: Never (or IfNotPresent).
#   - Namespace sandboxed-e2e for test runs, with its default ServiceAccount.
#   - ConfigMap kube-system/sandboxed-cluster with these facts as data (keys
#     below, in apply_objects).
# `up` waits for the node to be Ready and for a pod of the runner image on
# each RuntimeClass to run `true`, then deletes those pods. On a failure it
# prints the end of the failing daemon's log and exits non-zero.
#
# Where things live: /var/lib/sandboxed-k8s (certificates, etcd, containerd,
# kubelet, CNI configuration, logs), /run/sandboxed-k8s (sockets, pids,
# runtime state, the pods' IP allocations, which a reboot must forget),
# cgroups sandboxed-k8s in each hierarchy. `down` removes all of them but
# the cached binaries, and the bridge, its veths, the pods' network
# namespaces, the iptables rules and the sysctls the kubelet changed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
checkout=${2:-$(cd "$here/../.." && pwd)}

state=/var/lib/sandboxed-k8s
run=/run/sandboxed-k8s
pki=$state/pki
logs=$state/log
sock=$run/containerd.sock

node=sandboxed-node
bridge=sbxk8s0
api=https://127.0.0.1:6443
etcd_client=http://127.0.0.1:2479
etcd_peer=http://127.0.0.1:2480
cgroup_root=sandboxed-k8s
chain=SANDBOXED-K8S
runner_image=sandboxed-runner:latest
seccomp_profile=sandboxed.json
pause_image=localhost/sandboxed-pause:1
test_namespace=sandboxed-e2e
# gVisor's flags for every pod, the container tier's (sandboxed setup
# --runtime runsc): a pod may dial a host Unix socket on a hostPath volume,
# runsc applies the pod's seccomp profile, and there is no network but
# loopback. Both runtime handlers, runsc and runsc-nonet, run with
# --network=none: Debian 12's runsc (20221219) refuses its own network stack
# in any network namespace on kernels that give each namespace
# net.core.rmem_default (it takes that for the root namespace), and a pod
# has no network to use anyway.
runsc_flags=(--host-uds=open --network=none --oci-seccomp)

# The host settings the kubelet sets (its kernel defaults); `down` puts back
# what was there before.
kubelet_sysctls=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

daemons=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet)

log() { printf '== cluster: %s\n' "$*" >&2; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

# host_uses PREFIX: an address of the host's (on a device other than the
# bridge) or a route not through the bridge starts with PREFIX (such as
# "192.0.2."), or its default route's gateway does.
host_uses() {
	ip -o -4 addr show | awk -v b="$bridge" '$2 != b {print $4}' | grep -q "^${1//./\\.}" && return 0
	ip -4 route show | grep -v "dev $bridge" | grep -Eq "(^| )${1//./\\.}" && return 0
	return 1
}

# pick_network sets the node's address and the pod and service ranges: in
# documentation ranges, never one the host's own network uses (a bridge
# holding the host's gateway address cuts the host off). The same host
# picks the same every time, so down finds what up made.
pick_network() {
	if ! host_uses 192.0.2.; then
		node_ip=192.0.2.1 pod_cidr=192.0.2.0/24 pod_range_start=192.0.2.16
		service_cidr=203.0.113.0/24 service_ip=203.0.113.1
	elif ! host_uses 203.0.113.; then
		node_ip=203.0.113.129 pod_cidr=203.0.113.128/25 pod_range_start=203.0.113.144
		service_cidr=203.0.113.0/25 service_ip=203.0.113.1
	else
		die "the host's own network uses 192.0.2.0/24 and 203.0.113.0/24, the documentation ranges the cluster's pods and services take: run it on a host (or VM) whose network is elsewhere"
	fi
}
pick_network

# --- daemons ---------------------------------------------------------------

pidfile() { echo "$run/$1.pid"; }

# alive NAME: the daemon NAME runs (its pid file names a live process whose
# command line is that daemon's).
alive() {
	local pid
	pid=$(cat "$(pidfile "$1")" 2>/dev/null) || return 1
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -- "$1" >/dev/null
}

started=0

# start NAME COMMAND...: starts the daemon unless it runs, in a session of
# its own (a make interrupted later does not take it down), logging to
# $logs/NAME.log.
start() {
	local name=$1
	shift
	if alive "$name"; then
		return 0
	fi
	log "starting $name"
	printf '\n== %s start: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$logs/$name.log"
	setsid "$@" >>"$logs/$name.log" 2>&1 </dev/null 9>&- &
	local pid=$!
	echo $pid >"$(pidfile "$name")"
	# Until the child has exec'd, its command line is this script's, and
	# alive would call the daemon gone: wait for the exec (or the exit).
	local i
	for ((i = 0; i < 500; i++)); do
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$name" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.01
	done
	started=1
}

# fail NAME WHAT: says what did not come up and ends with the daemon's log.
fail() {
	printf 'cluster: %s\n' "$2" >&2
	if [[ -f $logs/$1.log ]]; then
		printf -- '--- last lines of %s ---\n' "$logs/$1.log" >&2
		tail -n 40 "$logs/$1.log" >&2
		printf -- '---\n' >&2
	fi
	if ! alive "$1"; then
		printf 'cluster: %s is not running.\n' "$1" >&2
	fi
	printf 'cluster: to start again from nothing: make cluster-down cluster-up\n' >&2
	exit 1
}

# wait_for NAME SECONDS WHAT COMMAND...: runs COMMAND until it succeeds; fails
# with NAME's log after SECONDS, or at once when NAME stops running.
wait_for() {
	local name=$1 seconds=$2 what=$3
	shift 3
	local deadline=$((SECONDS + seconds))
	until "$@" >/dev/null 2>&1; do
		alive "$name" || fail "$name" "$name exited while waiting for $what"
		((SECONDS < deadline)) || fail "$name" "no $what after ${seconds}s"
		sleep 0.5
	done
}

# stop NAME: TERM, then KILL after 20 seconds.
stop() {
	local pid
	pid=$(cat "$(pidfile "$1")" 2>/dev/null) || return 0
	if alive "$1"; then
		log "stopping $1"
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 40); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$(pidfile "$1")"
}

# --- the host --------------------------------------------------------------

install_packages() {
	local need=() p
	for p in etcd-server containerd runc runsc containernetworking-plugins iptables iproute2 procps openssl curl jq; do
		dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
	done
	if ((${#need[@]})); then
		log "installing ${need[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	fi
}

setup_network() {
	if ! ip link show "$bridge" >/dev/null 2>&1; then
		ip link add "$bridge" type bridge
	fi
	sysctl -qw "net.ipv6.conf.$bridge.disable_ipv6=1"
	if ! ip -4 addr show dev "$bridge" | grep " $node_ip/" >/dev/null; then
		ip addr add "$node_ip/${pod_cidr#*/}" dev "$bridge"
	fi
	ip link set "$bridge" up
	local t
	for t in iptables ip6tables; do
		$t -N "$chain" 2>/dev/null || true
		$t -C "$chain" -j DROP 2>/dev/null || $t -A "$chain" -j DROP
		$t -C INPUT -i "$bridge" -j "$chain" 2>/dev/null || $t -I INPUT -i "$bridge" -j "$chain"
		$t -C FORWARD -i "$bridge" -j "$chain" 2>/dev/null || $t -I FORWARD -i "$bridge" -j "$chain"
		$t -C FORWARD -o "$bridge" -j "$chain" 2>/dev/null || $t -I FORWARD -o "$bridge" -j "$chain"
	done
}

# hierarchies: the cgroup hierarchies the pods' cgroups are made in, one a
# line: each v1 controller's mount (and the unified one of a hybrid host),
# or the one v2 tree.
hierarchies() {
	if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
		echo /sys/fs/cgroup
		return
	fi
	local h
	for h in /sys/fs/cgroup/*/; do
		h=${h%/}
		if mountpoint -q "$h"; then echo "$h"; fi
	done
}

# setup_cgroups: the kubelet's cgroup root (cgroupRoot) in every hierarchy;
# the kubelet makes its pods' cgroups under it.
setup_cgroups() {
	local h
	for h in $(hierarchies); do
		[[ -d $h/$cgroup_root ]] && continue
		mkdir "$h/$cgroup_root"
		if [[ -f $h/cpuset.cpus ]]; then
			cat "$h/cpuset.cpus" >"$h/$cgroup_root/cpuset.cpus"
			cat "$h/cpuset.mems" >"$h/$cgroup_root/cpuset.mems"
		fi
	done
}

save_sysctls() {
	[[ -f $state/sysctl.saved ]] && return 0
	local k
	for k in "${kubelet_sysctls[@]}"; do
		printf '%s=%s\n' "$k" "$(sysctl -n "$k")"
	done >"$state/sysctl.saved.tmp"
	mv "$state/sysctl.saved.tmp" "$state/sysctl.saved"
}

# --- certificates and kubeconfigs ------------------------------------------

# cert NAME SUBJECT [SUBJECT_ALT_NAMES]: a key and a certificate signed by
# the cluster's CA, for client and server use.
cert() {
	[[ -f $pki/$1.crt ]] && return 0
	local ext
	ext=$(mktemp)
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=serverAuth,clientAuth"
		[[ -n ${3:-} ]] && echo "subjectAltName=$3"
	} >"$ext"
	openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-keyout "$pki/$1.key" -subj "$2" -out "$pki/$1.csr" 2>/dev/null
	openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
		-CAcreateserial -days 3650 -extfile "$ext" -out "$pki/$1.crt" 2>/dev/null
	rm -f "$ext" "$pki/$1.csr"
}

make_pki() {
	mkdir -p "$pki"
	chmod 0700 "$pki"
	if [[ ! -f $pki/ca.crt ]]; then
		openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
			-keyout "$pki/ca.key" -subj "/CN=sandboxed-k8s-ca" -days 3650 \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
			-out "$pki/ca.crt" 2>/dev/null
	fi
	cert apiserver "/CN=kube-apiserver" \
		"DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:$service_ip"
	cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
	cert admin "/O=system:masters/CN=sandboxed-admin"
	# The controller manager runs every controller with its own identity
	# (--use-service-account-credentials=false: no token per controller), so
	# it needs more than the role system:kube-controller-manager grants.
	cert controller-manager "/O=system:masters/CN=system:kube-controller-manager"
	cert scheduler "/CN=system:kube-scheduler"
	cert kubelet "/O=system:nodes/CN=system:node:$node" "DNS:$node,IP:$node_ip"
	if [[ ! -f $pki/sa.key ]]; then
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/sa.key" 2>/dev/null
		openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	fi
}

# kubeconfig FILE CERT: a kubeconfig for the identity of certificate CERT.
kubeconfig() {
	put "$1" 0600 <<EOF
apiVersion: v1
kind: Config
clusters:
- name: sandboxed
  cluster:
    server: $api
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$2.crt")
    client-key-data: $(base64 -w0 <"$pki/$2.key")
contexts:
- name: sandboxed
  context:
    cluster: sandboxed
    user: $2
    namespace: $test_namespace
current-context: sandboxed
EOF
}

# --- the API, with curl ----------------------------------------------------

# kapi METHOD PATH [JSON [CONTENT_TYPE]]: calls the API server as the
# admin; prints the response body, then a line with the HTTP status.
kapi() {
	curl -sS --max-time 20 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
		-X "$1" -H "Content-Type: ${4:-application/json}" ${3:+--data-binary "$3"} \
		-w '\n%{http_code}\n' "$api$2"
}

# apply PATH JSON: makes the object at PATH what JSON says (server-side
# apply: created if missing).
apply() {
	local out code
	out=$(kapi PATCH "$1?fieldManager=sandboxed-cluster&force=true" "$2" application/apply-patch+yaml)
	code=$(tail -n1 <<<"$out")
	[[ $code == 20? ]] || die "apply $1: HTTP $code: $(head -n -1 <<<"$out")"
}

# create COLLECTION JSON: creates the object.
create() {
	local out code
	out=$(kapi POST "$1" "$2")
	code=$(tail -n1 <<<"$out")
	[[ $code == 20? ]] || die "create in $1: HTTP $code: $(head -n -1 <<<"$out")"
}

# get PATH: the object's JSON; fails unless it exists.
get() {
	local out
	out=$(kapi GET "$1") || return 1
	[[ $(tail -n1 <<<"$out") == 200 ]] || return 1
	head -n -1 <<<"$out"
}

api_ready() { [[ $(get /readyz) == ok ]]; }
node_ready() {
	get "/api/v1/nodes/$node" | jq -e '.status.conditions[] | select(.type == "Ready") | .status == "True"' >/dev/null
}
exists() { get "$1" >/dev/null; }
no_pods() { [[ $(get "/api/v1/namespaces/$1/pods?labelSelector=$2" | jq '.items | length') == 0 ]]; }

# --- configuration files ---------------------------------------------------

# put FILE [MODE]: writes stdin to FILE unless FILE holds it already,
# atomically (containerd watches the CNI directory and must never read half
# a file), with MODE (0644 when not given).
put() {
	local tmp
	tmp=$(mktemp "$1.XXXXXX")
	cat >"$tmp"
	chmod "${2:-0644}" "$tmp"
	if cmp -s "$tmp" "$1" && [[ $(stat -c %a "$1") == "$(stat -c %a "$tmp")" ]]; then
		rm -f "$tmp"
	else
		mv "$tmp" "$1"
	fi
}

write_configs() {
	mkdir -p "$state/containerd" "$state/cni/net.d" "$state/runtimes" \
		"$state/kubelet" "$state/pod-logs" "$state/kubelet-plugins" "$state/kubeconfig" "$run/containerd"

	put "$state/runtimes/runsc.sh" 0755 <"$here/runsc.sh"
	local handler
	for handler in runsc runsc-nonet; do
		printf '#!/bin/sh\nexec /bin/bash %s %s %s -- "$@"\n' "$state/runtimes/runsc.sh" "$run/runsc-waiters" "${runsc_flags[*]}" |
			put "$state/runtimes/$handler" 0755
	done

	put "$state/containerd/config.toml" <<EOF
# The test cluster's containerd (.ci/cluster/cluster.sh): its own socket,
# root and state, apart from the Docker engine's.
version = 2
root = "$state/containerd"
state = "$run/containerd"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$sock"

[ttrpc]
  address = "$sock.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_image"
  disable_apparmor = true
  enable_selinux = false
  # No score below containerd's own: where the host denies lowering one
  # (no CAP_SYS_RESOURCE), runsc fails to start a pod's sandbox (-998).
  restrict_oom_score_adj = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "$run/runc"
        SystemdCgroup = false

    # gVisor through containerd's runc shim, as runsc.sh explains.
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc.options]
        BinaryName = "$state/runtimes/runsc"
        Root = "$run/runsc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc-nonet]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc-nonet.options]
        BinaryName = "$state/runtimes/runsc-nonet"
        Root = "$run/runsc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
EOF

	put "$state/cni/net.d/10-sandboxed-k8s.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sandboxed-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "$run/cni-ipam",
        "ranges": [[{"subnet": "$pod_cidr", "rangeStart": "$pod_range_start", "gateway": "$node_ip"}]]
      }
    }
  ]
}
EOF

	put "$state/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: AlwaysAllow
tlsCertFile: $pki/kubelet.crt
tlsPrivateKeyFile: $pki/kubelet.key
cgroupDriver: cgroupfs
cgroupRoot: /$cgroup_root
containerRuntimeEndpoint: unix://$sock
failSwapOn: false
podLogsDir: $state/pod-logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
EOF

	kubeconfig "$state/kubeconfig/admin" admin
	kubeconfig "$state/kubeconfig/controller-manager" controller-manager
	kubeconfig "$state/kubeconfig/scheduler" scheduler
	kubeconfig "$state/kubeconfig/kubelet" kubelet
}

# --- images ----------------------------------------------------------------

ctr_() { ctr -a "$sock" -n k8s.io "$@"; }

has_image() { timeout 20 ctr -a "$sock" -n k8s.io images ls -q | grep -x -- "$1" >/dev/null; }

# import_pause: builds the pause command and imports it as a one-layer image
# (Docker's image archive format, made here: no registry, no Docker).
import_pause() {
	has_image "$pause_image" && return 0
	log "importing the pause image"
	local d
	d=$(mktemp -d)
	(cd "$checkout" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$d/root/pause" ./.ci/cluster/pause)
	tar -C "$d/root" --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$d/layer.tar" pause
	local diff
	diff=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
	printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["/pause"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$diff" >"$d/config.json"
	printf '[{"Config":"config.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$pause_image" >"$d/manifest.json"
	tar -C "$d" -cf "$d/image.tar" manifest.json config.json layer.tar
	ctr_ images import "$d/image.tar" >/dev/null
	rm -rf "$d"
}

# import_runner: the container tier's runner image, built in Docker as the
# e2e suite builds it (a no-op when it is up to date; with the checkout's
# bin/sandboxed, built if missing), then exported into the cluster's
# containerd unless the same image is there already.
import_runner() {
	if [[ ! -x $checkout/bin/sandboxed ]]; then
		(cd "$checkout" && make -s build >/dev/null)
	fi
	"$checkout/bin/sandboxed" images build >&2 || die "build the runner image: $checkout/bin/sandboxed images build failed"
	local id
	id=$(docker image inspect -f '{{.Id}}' "$runner_image" 2>/dev/null) ||
		die "no image $runner_image in Docker: build it with: bin/sandboxed images build"
	if [[ $(cat "$state/runner-image.id" 2>/dev/null) == "$id" ]] && has_image "docker.io/library/$runner_image"; then
		return 0
	fi
	log "importing $runner_image ($id) into the cluster's containerd"
	docker save "$runner_image" | ctr_ images import - >/dev/null
	echo "$id" >"$state/runner-image.id"
}

# install_seccomp: the pods' Localhost seccomp profile, written by the
# checkout's sandboxed into the kubelet's seccomp directory (its --root-dir's
# seccomp), where a pod's localhostProfile is looked up.
install_seccomp() {
	"$checkout/bin/sandboxed" setup --seccomp-profile "$state/kubelet/seccomp/$seccomp_profile" >/dev/null ||
		die "write the pods' seccomp profile: $checkout/bin/sandboxed setup --seccomp-profile failed (rebuild it: make build)"
}

# --- objects ---------------------------------------------------------------

apply_objects() {
	# sandboxed.dev/no-network says a RuntimeClass's pods have no network
	# (the Kubernetes backend reads it); both handlers run --network=none.
	local rc
	for rc in gvisor:runsc gvisor-nonet:runsc-nonet; do
		apply "/apis/node.k8s.io/v1/runtimeclasses/${rc%%:*}" "$(jq -nc --arg name "${rc%%:*}" --arg handler "${rc#*:}" '{
			apiVersion: "node.k8s.io/v1", kind: "RuntimeClass",
			metadata: {name: $name, annotations: {"sandboxed.dev/no-network": "true"}},
			handler: $handler}')"
	done
	apply "/api/v1/namespaces/$test_namespace" \
		"{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$test_namespace\"}}"
	local version
	version=$(basename "$bin")
	apply /api/v1/namespaces/kube-system/configmaps/sandboxed-cluster "$(jq -nc \
		--arg version "$version" --arg node "$node" --arg nodeIP "$node_ip" \
		--arg podCIDR "$pod_cidr" --arg serviceCIDR "$service_cidr" \
		--arg image "$runner_image" --arg ns "$test_namespace" --arg runsc "${runsc_flags[*]}" \
		--arg seccomp "$seccomp_profile" '{
		apiVersion: "v1", kind: "ConfigMap",
		metadata: {name: "sandboxed-cluster", namespace: "kube-system"},
		data: {
			kubernetesVersion: $version,
			nodeName: $node,
			nodeIP: $nodeIP,
			podCIDR: $podCIDR,
			serviceCIDR: $serviceCIDR,
			networkPolicyEnforced: "false",
			podEgress: "none",
			serviceDataPath: "false",
			runtimeClass: "gvisor",
			runtimeClassNoNetwork: "gvisor-nonet",
			runscFlags: $runsc,
			gvisorRuntimeClasses: "gvisor gvisor-nonet",
			seccompProfile: $seccomp,
			runnerImage: $image,
			imagePullPolicy: "Never",
			testNamespace: $ns
		}}')"
}

# smoke: a pod of the runner image on each RuntimeClass runs `true`.
smoke() {
	local rc pods=()
	for rc in gvisor gvisor-nonet; do
		pods+=("cluster-up-$rc")
		kapi DELETE "/api/v1/namespaces/default/pods/cluster-up-$rc?gracePeriodSeconds=0" >/dev/null || true
	done
	wait_for kube-controller-manager 60 "the default ServiceAccount" exists /api/v1/namespaces/default/serviceaccounts/default
	wait_for kube-apiserver 60 "the old check pods to go" no_pods default app%3Dcluster-up
	for rc in gvisor gvisor-nonet; do
		create /api/v1/namespaces/default/pods "$(jq -nc --arg rc "$rc" --arg image "$runner_image" '{
			apiVersion: "v1", kind: "Pod",
			metadata: {name: ("cluster-up-" + $rc), labels: {app: "cluster-up"}},
			spec: {runtimeClassName: $rc, restartPolicy: "Never", automountServiceAccountToken: false,
				terminationGracePeriodSeconds: 0,
				containers: [{name: "check", image: $image, imagePullPolicy: "Never", command: ["true"]}]}}')"
	done
	local p phase deadline=$((SECONDS + 120))
	for p in "${pods[@]}"; do
		while :; do
			phase=$(get "/api/v1/namespaces/default/pods/$p" | jq -r .status.phase)
			[[ $phase == Succeeded ]] && break
			if [[ $phase == Failed ]] || ((SECONDS >= deadline)); then
				get "/api/v1/namespaces/default/pods/$p" | jq .status >&2 || true
				tail -n 20 "$logs/containerd.log" >&2
				fail kubelet "the check pod $p did not run true (phase $phase)"
			fi
			alive kubelet || fail kubelet "kubelet exited while the check pod $p ran"
			sleep 0.5
		done
	done
	for p in "${pods[@]}"; do
		kapi DELETE "/api/v1/namespaces/default/pods/$p?gracePeriodSeconds=0" >/dev/null
	done
	wait_for kubelet 60 "the check pods to go" no_pods default app%3Dcluster-up
	# The pods' sandboxes (gVisor's processes) are gone too.
	wait_for containerd 60 "the check pods' gVisor processes to exit" no_runsc
}

no_runsc() { ! pgrep -f -- "$run/runsc" >/dev/null; }

# --- up --------------------------------------------------------------------

up() {
	[[ $(id -u) == 0 ]] || die "make cluster-up needs root (it starts a kubelet and a containerd)"
	local t0=$SECONDS
	install_packages
	bin=$("$here/build.sh" k8s)
	mkdir -p "$state" "$run" "$logs"

	make_pki
	write_configs
	setup_network
	setup_cgroups

	start etcd /usr/bin/etcd --name sandboxed --data-dir "$state/etcd" \
		--listen-client-urls "$etcd_client" --advertise-client-urls "$etcd_client" \
		--listen-peer-urls "$etcd_peer" --initial-advertise-peer-urls "$etcd_peer" \
		--initial-cluster "sandboxed=$etcd_peer" --listen-metrics-urls "" --log-level warn
	wait_for etcd 60 "etcd health" curl -sf "$etcd_client/health"

	start kube-apiserver "$bin/kube-apiserver" \
		--bind-address=127.0.0.1 --secure-port=6443 --advertise-address="$node_ip" \
		--etcd-servers="$etcd_client" \
		--service-cluster-ip-range="$service_cidr" --endpoint-reconciler-type=none \
		--client-ca-file="$pki/ca.crt" --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
		--kubelet-certificate-authority="$pki/ca.crt" \
		--kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
		--kubelet-preferred-address-types=InternalIP \
		--service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$pki/sa.pub" \
		--service-account-signing-key-file="$pki/sa.key" \
		--authorization-mode=Node,RBAC --anonymous-auth=false --enable-admission-plugins=NodeRestriction \
		--allow-privileged=false --profiling=false
	wait_for kube-apiserver 120 "API server ready (/readyz)" api_ready

	start kube-controller-manager "$bin/kube-controller-manager" \
		--kubeconfig="$state/kubeconfig/controller-manager" \
		--authentication-kubeconfig="$state/kubeconfig/controller-manager" \
		--authorization-kubeconfig="$state/kubeconfig/controller-manager" \
		--bind-address=127.0.0.1 --leader-elect=false --root-ca-file="$pki/ca.crt" \
		--use-service-account-credentials=false --profiling=false
	start kube-scheduler "$bin/kube-scheduler" \
		--kubeconfig="$state/kubeconfig/scheduler" \
		--authentication-kubeconfig="$state/kubeconfig/scheduler" \
		--authorization-kubeconfig="$state/kubeconfig/scheduler" \
		--bind-address=127.0.0.1 --leader-elect=false --profiling=false

	start containerd /usr/bin/containerd --config "$state/containerd/config.toml"
	wait_for containerd 60 "containerd's socket" ctr -a "$sock" version
	import_pause
	import_runner
	install_seccomp

	save_sysctls
	start kubelet "$bin/kubelet" --config="$state/kubelet/config.yaml" \
		--kubeconfig="$state/kubeconfig/kubelet" --hostname-override="$node" --node-ip="$node_ip" \
		--root-dir="$state/kubelet" --cert-dir="$state/kubelet/pki" \
		--volume-plugin-dir="$state/kubelet-plugins"
	wait_for kubelet 120 "node $node Ready" node_ready
	wait_for kube-scheduler 60 "the scheduler healthy" curl -skf https://127.0.0.1:10259/healthz
	wait_for kube-controller-manager 60 "the controller manager healthy" curl -skf https://127.0.0.1:10257/healthz

	apply_objects
	wait_for kube-controller-manager 60 "the default ServiceAccount of $test_namespace" \
		exists "/api/v1/namespaces/$test_namespace/serviceaccounts/default"
	if ((started)) || [[ ${SANDBOXED_CLUSTER_SMOKE:-} == 1 ]]; then
		smoke
	fi

	mkdir -p "$checkout/.cluster"
	cp "$state/kubeconfig/admin" "$checkout/.cluster/kubeconfig.tmp"
	mv "$checkout/.cluster/kubeconfig.tmp" "$checkout/.cluster/kubeconfig"
	log "up in $((SECONDS - t0))s: Kubernetes $(basename "$bin"), node $node; kubeconfig $checkout/.cluster/kubeconfig"
}

# --- down ------------------------------------------------------------------

# kill_ours: kills what is left of the cluster's processes: those whose
# command line names its runtime directory (containerd's shims, gVisor's
# processes) and those in its cgroups (containers).
kill_ours() {
	local pids p procs
	local h
	procs=()
	for h in $(hierarchies); do
		procs+=("$h/$cgroup_root"/**/cgroup.procs)
	done
	pids=$(
		pgrep -f -- "$run" || true
		cat /dev/null "${procs[@]}" 2>/dev/null || true
	)
	for p in $pids; do
		[[ $p == "$$" || $p == "$BASHPID" ]] && continue
		kill -KILL "$p" 2>/dev/null || true
	done
}

down() {
	[[ $(id -u) == 0 ]] || die "make cluster-down needs root"
	stop kubelet
	local d i
	for ((i = ${#daemons[@]} - 1; i >= 0; i--)); do
		stop "${daemons[i]}"
	done
	shopt -s globstar nullglob
	for _ in 1 2 3; do
		kill_ours
		sleep 0.5
	done

	# Mounts under the cluster's directories, deepest first.
	local m
	for m in $(awk '{print $5}' /proc/self/mountinfo | grep -E "^($state|$run)(/|$)" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	# The pods' network namespaces (containerd's CRI names them cni-*): the
	# ones with an address in the pod range.
	local ns
	for ns in /run/netns/cni-*; do
		if ip netns exec "$(basename "$ns")" ip -4 -o addr show 2>/dev/null | grep " ${pod_cidr%.*}\." >/dev/null; then
			umount "$ns" 2>/dev/null || true
			rm -f "$ns"
		fi
	done
	local l
	for l in $(ip -o link show master "$bridge" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
		ip link delete "$l" 2>/dev/null || true
	done
	ip link delete "$bridge" 2>/dev/null || true

	local t
	for t in iptables ip6tables; do
		while $t -D INPUT -i "$bridge" -j "$chain" 2>/dev/null; do :; done
		while $t -D FORWARD -i "$bridge" -j "$chain" 2>/dev/null; do :; done
		while $t -D FORWARD -o "$bridge" -j "$chain" 2>/dev/null; do :; done
		$t -F "$chain" 2>/dev/null || true
		$t -X "$chain" 2>/dev/null || true
		# The kubelet's own chains (it makes them in every table it watches).
		while $t -D INPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
		while $t -D OUTPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
		local table c
		for table in filter nat mangle; do
			for c in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
				$t -t "$table" -F "$c" 2>/dev/null || true
				$t -t "$table" -X "$c" 2>/dev/null || true
			done
		done
	done

	# Cgroups, deepest first.
	local h
	for d in $(for h in $(hierarchies); do find "$h/$cgroup_root" -depth -type d 2>/dev/null; done); do
		rmdir "$d" 2>/dev/null || true
	done

	if [[ -f $state/sysctl.saved ]]; then
		sysctl -q -p "$state/sysctl.saved" >/dev/null || true
	fi
	# The kubelet's links to the pods' logs, and the CNI plugins' cache.
	for l in /var/log/containers/*.log; do
		[[ -L $l && $(readlink "$l") == "$state"/* ]] && rm -f "$l"
	done
	local sb
	for sb in "$state"/containerd/io.containerd.grpc.v1.cri/sandboxes/*; do
		rm -f /var/lib/cni/results/*-"$(basename "$sb")"-*
	done
	rmdir /var/lib/cni/results /var/lib/cni /var/log/containers 2>/dev/null || true
	# containerd's shims listen in /run/containerd/s whatever the daemon's
	# state directory; a killed one leaves its socket. Remove the sockets
	# nothing listens on (the Docker engine's shims listen on theirs).
	local listening
	listening=$(ss -xlH 2>/dev/null | awk '{print $5}')
	for l in /run/containerd/s/*; do
		[[ -S $l ]] && ! grep -qxF "$l" <<<"$listening" && rm -f "$l"
	done

	rm -rf "$state" "$run" "$checkout/.cluster"
	local left=()
	for h in $(hierarchies); do
		if [[ -d $h/$cgroup_root ]]; then left+=("cgroup $h/$cgroup_root"); fi
	done
	if pgrep -f -- "$run" >/dev/null; then left+=("processes: $(pgrep -f -- "$run" | tr '\n' ' ')"); fi
	if ((${#left[@]})); then
		die "down left: ${left[*]}"
	fi
	log "down"
}

status() {
	local d ok=1
	for d in "${daemons[@]}"; do
		if alive "$d"; then echo "$d: running"; else echo "$d: not running"; ok=0; fi
	done
	((ok))
}

# One up or down at a time on the machine (the daemons never hold the lock:
# start closes it for them).
lock() {
	exec 9>/run/sandboxed-k8s.lock
	flock 9
}

case ${1:-} in
up) lock && up ;;
down) lock && down ;;
status) status ;;
*) die "usage: cluster.sh up|down|status [CHECKOUT]" ;;
esac
