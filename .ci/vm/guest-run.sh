#!/bin/bash
# Runs inside the test VM at boot, as root, from the directory the host
# shares (/share): sandboxed-vm-test.service starts it and powers the VM off
# when it ends. run.sh puts here the binaries (bin/), the source tree the
# tests read their data from (src.tar) and the settings (env). Everything
# printed goes to the serial console, which the host shows; the exit code
# goes to /share/out/status.
set -uo pipefail

mkdir -p /share/out
status=1
# The result, then power off at once: the root disk is a throwaway
# snapshot and the share is written through, so nothing is lost, and a
# process the tests left cannot hold the shutdown up.
finish() {
	echo "$status" >/share/out/status
	sync
	systemctl poweroff --force --force
}
trap finish EXIT
log() { printf '== guest: %s (%ss since boot)\n' "$*" "$(cut -d' ' -f1 /proc/uptime)"; }

# A service starts with almost no environment; the tests expect a login's.
export HOME=/root USER=root LOGNAME=root LANG=C.UTF-8
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck source=/dev/null
. /share/env
log "booted: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo)"

# The environment the tests are here for: refuse to run them without it.
fail=0
if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
	log "FAIL: /sys/fs/cgroup is not cgroup v2 ($(stat -fc %T /sys/fs/cgroup))"
	fail=1
fi
uid=$(id -u "$VM_USER")
# Lingering makes logind start the user's manager at boot, but not before
# this unit: on a first boot under TCG it may still be on its way. Starting
# it here is what lingering does; it waits until the manager is up.
timeout 120 systemctl start "user@$uid.service" ||
	log "starting the systemd user manager of $VM_USER (user@$uid.service) failed"
if ! systemctl is-active --quiet "user@$uid.service"; then
	log "FAIL: the systemd user manager of $VM_USER (user@$uid.service) is not running"
	fail=1
fi
delegated=/sys/fs/cgroup/user.slice/user-$uid.slice/user@$uid.service/cgroup.controllers
log "cgroup v2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers); delegated to $VM_USER: $(cat "$delegated" 2>/dev/null)"
for c in cpu memory pids; do
	grep -qw "$c" "$delegated" 2>/dev/null || { log "FAIL: $c is not delegated to $VM_USER"; fail=1; }
done
[ "$fail" = 0 ] || exit 1

# Local copies: the tests must not run their binaries from the 9p share.
# The tree is readable by all: the rootless mode's user reads its examples.
src=/srv/sandboxed-src
rm -rf "$src" /root/bin
mkdir -p "$src"
chmod 755 /srv "$src"
tar -xf /share/src.tar -C "$src"
cp -r /share/bin /root/bin

# Runs one test binary in its package's directory, as go test would, and
# fails on any skipped test: here every test is expected to run.
skips=0
failed=()
run_tests() {
	local name=$1 pkg=$2
	shift 2
	log "$name: start"
	local t0=$SECONDS rc
	(cd "$src/$pkg" && "$@" -test.v -test.count=1) 2>&1 | tee "/share/out/$name.log"
	rc=${PIPESTATUS[0]}
	log "$name: exit $rc after $((SECONDS - t0))s"
	if grep -q -- '--- SKIP' "/share/out/$name.log"; then
		log "FAIL: $name skipped tests:"
		grep -A2 -- '--- SKIP' "/share/out/$name.log"
		skips=1
	fi
	[ "$rc" = 0 ] || failed+=("$name")
}

# What a run left in /tmp fails that run (its leak check says so) but is
# removed before the next, which would otherwise fail for it too.
clear_leftovers() {
	local left
	left=$(find /tmp -maxdepth 1 \( -name 'sandboxed-run-*' -o -name 'sandboxed-test-*' -o -name 'sandboxed-e2e-*' \) -print)
	if [ -n "$left" ]; then
		log "removing what the previous run left: $(echo $left)"
		rm -rf $left
	fi
}

export SANDBOXED_E2E=1
run_tests cgroup isolation/cgroup /root/bin/cgroup.test "${cgroup_args[@]}"
run_tests process isolation/process /root/bin/process.test "${process_args[@]}"
SANDBOXED_E2E_BIN=/root/bin/sandboxed SANDBOXED_E2E_TIERS=process,landlock,none \
	run_tests e2e e2e /root/bin/e2e.test "${e2e_args[@]}" -test.timeout 60m
clear_leftovers
# The rootless mode: every sandboxed the suite starts runs as the
# unprivileged user, in a scope of the user's systemd manager (no setup).
SANDBOXED_E2E_BIN=/root/bin/sandboxed SANDBOXED_E2E_TIERS=process SANDBOXED_E2E_USER=$VM_USER \
	run_tests e2e-rootless e2e /root/bin/e2e.test "${e2e_args[@]}" -test.timeout 60m

if [ ${#failed[@]} -gt 0 ]; then
	log "FAILED: ${failed[*]}"
elif [ "$skips" = 1 ]; then
	log "FAILED: tests were skipped"
else
	status=0
	log "all passed"
fi
