#!/usr/bin/env bash
# Runs the tests that need cgroup v2 and systemd in the test VM: the real
# cgroup v2 tests of isolation/cgroup, the process backend's root tests,
# and the end-to-end suite on the process tier, as root and in the rootless
# mode (as the guest's unprivileged user), inside a Debian 12 guest
# booted with QEMU from build-image.sh's image (built or taken from the
# cache). Exits 0 only when the guest ran every test and all passed; a guest
# that does not boot, hangs or skips a test fails. Needs root, Go,
# qemu-system-x86_64, and for a cold image debootstrap and Debian's mirror.
#
# The guest's console is shown as it runs; it and the tests' logs are kept
# in bin/vm/ afterwards.
#
# Settings (environment):
#   SANDBOXED_VM_ACCEL         auto (default: KVM where it boots, else TCG), kvm or tcg
#   SANDBOXED_VM_TIMEOUT       seconds for the whole run in the guest (default 1500)
#   SANDBOXED_VM_BOOT_TIMEOUT  seconds until the guest starts the tests (default 300;
#                              a KVM attempt gets 90 before falling back to TCG)
#   SANDBOXED_VM_MEMORY        MiB (default 4096); SANDBOXED_VM_CPUS (default: the host's)
#   SANDBOXED_VM_E2E_RUN       -run pattern of the e2e suite (default: all of it)
#   SANDBOXED_VM_E2E_SKIP      -skip pattern of the e2e suite (default: none but the Docker test)
#   SANDBOXED_VM_PROCESS_SKIP  -skip pattern of the process backend's tests (default: none)
#   SANDBOXED_VM_CACHE         where images are kept (default /var/cache/sandboxed-vm)
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { printf '== vm: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

accel=${SANDBOXED_VM_ACCEL:-auto}
run_timeout=${SANDBOXED_VM_TIMEOUT:-1500}
boot_timeout=${SANDBOXED_VM_BOOT_TIMEOUT:-300}
memory=${SANDBOXED_VM_MEMORY:-4096}
cpus=${SANDBOXED_VM_CPUS:-$(nproc)}
e2e_run=${SANDBOXED_VM_E2E_RUN:-.}
e2e_skip=${SANDBOXED_VM_E2E_SKIP:-}
process_skip=${SANDBOXED_VM_PROCESS_SKIP:-}
go=${GO:-go}

[ "$(id -u)" = 0 ] || die "needs root (the image build uses debootstrap and chroot)"
command -v qemu-system-x86_64 >/dev/null || die "needs qemu-system-x86_64 (apt-get install qemu-system-x86)"
case $accel in auto | kvm | tcg) ;; *) die "SANDBOXED_VM_ACCEL is $accel: want auto, kvm or tcg" ;; esac
t_start=$SECONDS

image=$(bash .ci/vm/build-image.sh)
t_image=$SECONDS

logs=bin/vm
mkdir -p "$logs"
rm -f "$logs"/*.log
share=$(mktemp -d /tmp/sandboxed-vm-XXXXXX)
qpid=
tpid=
cleanup() {
	[ -z "$qpid" ] || kill "$qpid" 2>/dev/null || true
	[ -z "$tpid" ] || kill "$tpid" 2>/dev/null || true
	rm -rf "$share"
}
trap cleanup EXIT

log "building the binaries the guest runs"
mkdir -p "$share/bin"
make -s build BIN="$share/bin/sandboxed"
for pkg in e2e isolation/cgroup isolation/process; do
	CGO_ENABLED=0 "$go" test -c -o "$share/bin/$(basename "$pkg").test" "./$pkg"
done
# The tests read their data (testdata, examples) from the source tree.
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf "$share/src.tar"
cp .ci/vm/guest-run.sh "$share/"
{
	printf 'VM_USER=%q\n' "$(cat "$image/user")"
	printf 'cgroup_args=()\n'
	printf 'process_args=(-test.skip %q)\n' "$process_skip"
	# Tests that need a Docker engine, which the guest has not; the host's
	# suite runs them.
	printf 'e2e_args=(-test.run %q -test.skip %q)\n' "$e2e_run" "^Test(DoctorMatchesRunsInCIContainers|ContainerTierFromACIContainer|LandlockTierInDefaultContainer)\$${e2e_skip:+|$e2e_skip}"
} >"$share/env"
t_bins=$SECONDS

# boot ACCEL BOOT_TIMEOUT: runs the guest until it powers off. Returns 0
# when it did, 2 when it did not start the tests within BOOT_TIMEOUT
# seconds, 3 when it ran past SANDBOXED_VM_TIMEOUT.
boot() {
	local accel=$1 limit=$2 args
	case $accel in
	kvm) args=(-accel kvm -cpu host) ;;
	tcg) args=(-accel tcg,thread=multi -cpu max) ;;
	esac
	console=$logs/console-$accel.log
	: >"$console"
	rm -rf "$share/out"
	log "booting the guest ($accel, $cpus CPUs, $memory MiB, kernel $(cat "$image/kernel-version"))"
	qemu-system-x86_64 "${args[@]}" -nodefaults -no-user-config -machine q35 \
		-m "$memory" -smp "$cpus" \
		-kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 loglevel=4 systemd.show_status=1 panic=1 mitigations=off $(cat "$image/cmdline")" \
		-drive "file=$image/root.img,if=virtio,format=raw,snapshot=on" \
		-virtfs "local,path=$share,mount_tag=share,security_model=none,id=share" \
		-nic none -display none -monitor none -serial "file:$console" -no-reboot &
	qpid=$!
	tail -n +1 -F "$console" 2>/dev/null &
	tpid=$!
	local t0=$SECONDS booted=
	while kill -0 "$qpid" 2>/dev/null; do
		if [ -z "$booted" ] && grep -q '== guest: booted' "$console"; then
			booted=$((SECONDS - t0))
			log "guest booted in ${booted}s ($accel); tests running"
		fi
		if [ -z "$booted" ] && ((SECONDS - t0 > limit)); then
			kill "$qpid"
			wait "$qpid" 2>/dev/null || true
			kill "$tpid"; qpid= tpid=
			log "the guest did not boot within ${limit}s ($accel)"
			return 2
		fi
		if ((SECONDS - t0 > run_timeout)); then
			kill "$qpid"
			wait "$qpid" 2>/dev/null || true
			kill "$tpid"; qpid= tpid=
			log "the guest ran past ${run_timeout}s (SANDBOXED_VM_TIMEOUT); stopped"
			return 3
		fi
		sleep 1
	done
	wait "$qpid" || log "qemu exited with $?"
	sleep 1
	kill "$tpid" 2>/dev/null || true
	qpid= tpid=
	log "guest powered off after $((SECONDS - t0))s"
	boot_seconds=$booted
	return 0
}

# KVM needs hardware virtualisation the guest kernel can use. Where
# /dev/kvm is a paravirtual KVM (PVM, as in some cloud sandboxes: no VMX or
# SVM in the CPU flags), only guest kernels built for it run; Debian's, and
# even the firmware, make no progress there.
if [ "$accel" = auto ]; then
	if [ ! -w /dev/kvm ]; then
		log "no usable /dev/kvm: TCG (software emulation)"
		accel=tcg
	elif ! grep -qwE 'vmx|svm' /proc/cpuinfo; then
		log "/dev/kvm is paravirtual here (no VMX or SVM in the CPU flags), which runs only guest kernels built for it: TCG (software emulation)"
		accel=tcg
	else
		accel=try-kvm
	fi
fi
rc=0
case $accel in
try-kvm)
	boot kvm 90 || rc=$?
	if [ "$rc" = 2 ]; then
		log "falling back to TCG"
		accel=tcg rc=0
		boot tcg "$boot_timeout" || rc=$?
	else
		accel=kvm
	fi
	;;
*) boot "$accel" "$boot_timeout" || rc=$? ;;
esac

for f in "$share"/out/*.log; do [ -e "$f" ] && cp "$f" "$logs/"; done
status=$(cat "$share/out/status" 2>/dev/null || true)
times="image $((t_image - t_start))s, binaries $((t_bins - t_image))s, guest $((SECONDS - t_bins))s (boot ${boot_seconds:-?}s, $accel), total $((SECONDS - t_start))s"
if [ "$rc" = 0 ] && [ "$status" = 0 ]; then
	log "PASS: every test in the cgroup v2 VM passed; $times"
	exit 0
fi
case $rc in
2) log "FAIL: the guest did not boot; its console is above and in $logs/" ;;
3) log "FAIL: the guest timed out; its console is above and in $logs/" ;;
*) if [ -z "$status" ]; then
	log "FAIL: the guest wrote no result (it crashed or was stopped); its console is above and in $logs/"
else
	log "FAIL: tests failed in the guest (exit $status); logs in $logs/"
fi ;;
esac
log "$times"
exit 1
