#!/bin/bash
# runsc as containerd's runc shim runs it, for a pod of several containers.
# cluster.sh installs it as the runtime binary of the runsc handlers:
#
#   runsc.sh WAITERS_DIR RUNSC_FLAGS... -- RUNC_ARGUMENTS...
#
# Debian 12's runsc has no containerd shim of its own, and gVisor's shim
# cannot start where the host denies lowering an OOM score (CAP_SYS_RESOURCE;
# it sets its own to -999). So containerd's runc shim runs runsc, as the
# Docker engine does. That works for the pod's first container, whose
# process is gVisor's sandbox. For every other container of the pod, runsc
# differs from runc in three ways, and this script makes up for them:
#   - runsc names the sandbox's pid for it, and the shim would wait on that,
#     so the container would never seem to exit. After `create` a child
#     here (the waiter) waits for the container (runsc wait, once it is
#     started) and exits with its status; its pid replaces the one in the
#     pid file, and the shim, the subreaper of this process's orphans,
#     reaps it.
#   - runsc gives the container the standard streams of `start`, not of
#     `create` (to which the shim gives the container's pipes), so the
#     waiter keeps those of `create` and `start` takes them from it. The
#     waiter's pid is in WAITERS_DIR/ID.
#   - runsc's errors for a kill of a container that has stopped, or whose
#     sandbox is gone, are not ones the shim knows, and the shim would fail
#     to stop the pod.
#   - The shim watches for OOM kills the memory cgroup of the process in
#     the pid file. The sandbox's processes (gVisor's Sentry, which holds
#     the memory of every container of the pod) are in the pod's first
#     container's cgroup, under the pod's cgroup, whose limit is the sum
#     of the containers' limits: that is where the kernel's OOM killer
#     strikes, and it kills the Sentry, ending every container. So the
#     waiter joins the container's own cgroups (linux.cgroupsPath, in
#     each hierarchy) before its pid is written: on cgroup v1 the kernel
#     notifies an OOM to the memory cgroup where the limit was hit and to
#     every cgroup below it, so the shim reports the container's OOM, and
#     the kubelet says OOMKilled, as with gVisor's own shim. (On cgroup v2
#     an OOM is counted where it struck and above, not below: there the
#     container still ends with reason Error.)
set -euo pipefail

waiters=$1
shift
runsc=(/usr/bin/runsc)
while (($#)) && [[ $1 != -- ]]; do
	runsc+=("$1")
	shift
done
shift || true

# runc's global flags, which the shim puts before the command.
global=()
args=("$@")
i=0
while ((i < ${#args[@]})) && [[ ${args[i]} == -* ]]; do
	case ${args[i]} in
	--root | --log | --log-format | --criu | --rootless)
		global+=("${args[i]}" "${args[i + 1]}")
		i=$((i + 2))
		;;
	*)
		global+=("${args[i]}")
		i=$((i + 1))
		;;
	esac
done
command=${args[i]:-}
# The container: the command's first argument that is not a flag (runc's
# flags of start, kill and delete take no value).
id=
for a in "${args[@]:i+1}"; do
	if [[ $a != -* ]]; then
		id=$a
		break
	fi
done
case $command in
create) ;;
start)
	if [[ -f $waiters/$id ]]; then
		w=$(cat "$waiters/$id")
		exec "${runsc[@]}" "$@" <"/proc/$w/fd/0" >"/proc/$w/fd/1" 2>"/proc/$w/fd/2"
	fi
	exec "${runsc[@]}" "$@"
	;;
delete)
	rm -f "$waiters/$id"
	exec "${runsc[@]}" "$@"
	;;
kill)
	# The shim takes runc's words for a container that is gone already and
	# then has nothing to do; runsc says it its own way.
	if ! out=$("${runsc[@]}" "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		state=$("${runsc[@]}" "${global[@]}" state "$id" 2>/dev/null | jq -r .status 2>/dev/null) || state=
		if [[ $out == *"is not running"* || ($state != running && $state != created && $state != paused) ]]; then
			echo "container not running" >&2
		fi
		exit 1
	fi
	printf '%s' "$out"
	exit 0
	;;
*) exec "${runsc[@]}" "$@" ;;
esac

# join_cgroups PID PATH: moves PID into the cgroup PATH (a cgroupfs path,
# as the kubelet's cgroupfs driver names it) of every hierarchy that has
# it; the shim then finds the container's cgroups from PID. A move that
# fails costs the OOM report only, never the container.
join_cgroups() {
	local pid=$1 path=$2 h
	[[ -n $path && $path == /* ]] || return 0
	if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
		if [[ -d /sys/fs/cgroup$path ]]; then echo "$pid" 2>/dev/null >"/sys/fs/cgroup$path/cgroup.procs" || true; fi
		return 0
	fi
	for h in /sys/fs/cgroup/*/; do
		h=${h%/}
		if [[ -d $h$path && ! -L $h ]]; then echo "$pid" 2>/dev/null >"$h$path/cgroup.procs" || true; fi
	done
}

# This script's own cgroups, where the shim runs it.
home_cgroups=$(cat /proc/self/cgroup)

# leave_pod: moves the calling (sub)shell back from the pod's cgroups to
# this script's, in the hierarchies that charge the pod (memory, pids), so
# that what the waiter runs (runsc state and wait, jq: about 7 MB) does
# not count against the pod's memory limit: only the waiter's shell stays
# in the container's cgroups, for the shim's OOM watch.
leave_pod() {
	local c p
	if [[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]]; then
		p=$(awk -F: '$1 == "0" { print $3 }' <<<"$home_cgroups")
		if [[ -n $p ]]; then echo "$BASHPID" 2>/dev/null >"/sys/fs/cgroup$p/cgroup.procs" || true; fi
		return 0
	fi
	for c in memory pids; do
		p=$(awk -F: -v c="$c" '$2 == c { print $3 }' <<<"$home_cgroups")
		if [[ -n $p ]]; then echo "$BASHPID" 2>/dev/null >"/sys/fs/cgroup/$c$p/cgroup.procs" || true; fi
	done
}

bundle=. pidfile= id=
j=$((i + 1))
while ((j < ${#args[@]})); do
	case ${args[j]} in
	--bundle | -b) bundle=${args[j + 1]} j=$((j + 2)) ;;
	--bundle=*) bundle=${args[j]#*=} j=$((j + 1)) ;;
	--pid-file) pidfile=${args[j + 1]} j=$((j + 2)) ;;
	--pid-file=*) pidfile=${args[j]#*=} j=$((j + 1)) ;;
	--console-socket) j=$((j + 2)) ;;
	-*) j=$((j + 1)) ;;
	*) id=${args[j]} j=$((j + 1)) ;;
	esac
done

"${runsc[@]}" "$@"

if [[ -n $pidfile && -n $id ]] &&
	jq -e '.annotations["io.kubernetes.cri.container-type"] == "container"' "$bundle/config.json" >/dev/null 2>&1; then
	(
		# runsc waits only on a started container: wait for `start` first.
		while state=$(
			leave_pod
			"${runsc[@]}" "${global[@]}" state "$id" 2>/dev/null | jq -r .status
		) && [[ $state == created ]]; do
			sleep 0.05
		done
		status=$(
			leave_pod
			"${runsc[@]}" "${global[@]}" wait "$id" 2>/dev/null | jq -r '.exitStatus // 255'
		) || status=255
		exit $((${status:-255} & 255))
	) &
	waiter=$!
	join_cgroups "$waiter" "$(jq -r '.linux.cgroupsPath // empty' "$bundle/config.json")"
	mkdir -p "$waiters"
	echo -n "$waiter" >"$waiters/$id"
	echo -n "$waiter" >"$pidfile"
fi
