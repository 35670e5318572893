#!/usr/bin/env bash
# Builds the test VM: a Debian 12 root filesystem made with debootstrap and
# provisioned by provision.sh (cgroup v2, systemd, a lingering unprivileged
# user), as a raw ext4 disk image plus the kernel and initrd QEMU boots
# directly. Needs root, debootstrap and Debian's mirror; about 4 minutes
# cold.
#
# The result is cached under $SANDBOXED_VM_CACHE (default
# /var/cache/sandboxed-vm), in a directory named by a hash of this script,
# provision.sh and the guest's unit: a change to any of them builds a new
# image, and older images are removed once the new one is ready. The
# directory is printed on stdout; progress goes to stderr.
#
# The image holds no test code: run.sh shares the binaries and the script
# that runs them with the guest at boot (virtio-9p, mount tag "share").
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${SANDBOXED_VM_CACHE:-/var/cache/sandboxed-vm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
user=${SANDBOXED_VM_USER:-sandboxed}
size=${SANDBOXED_VM_DISK:-6G}

log() { printf '== vm image: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || die "needs debootstrap (apt-get install debootstrap)"
command -v mkfs.ext4 >/dev/null || die "needs mkfs.ext4 (apt-get install e2fsprogs)"

key=$(cat "$here/build-image.sh" "$here/provision.sh" "$here/sandboxed-vm-test.service" |
	sha256sum | cut -c1-16)
out=$cache/$key
if [ -f "$out/ready" ]; then
	log "cached: $out"
	echo "$out"
	exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one build at a time; a waiting build finds the image ready
if [ -f "$out/ready" ]; then
	log "cached: $out"
	echo "$out"
	exit 0
fi

work=$(mktemp -d "$cache/.build-XXXXXX")
root=$work/root
mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
	mounted=()
	rm -rf "$work"
}
trap cleanup EXIT
started=$SECONDS
step() { log "$* (${SECONDS}s)"; }

# Downloaded packages are kept for the next build on this machine.
debs=$cache/debs
mkdir -p "$debs/partial"
step "debootstrap bookworm from $mirror into $root"
debootstrap --variant=minbase --include=apt-utils,initramfs-tools,e2fsprogs --cache-dir="$debs" \
	bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
	{ tail -30 "$work/debootstrap.log" >&2; die "debootstrap failed"; }

cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security_mirror bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
# Nothing starts in the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
# A small initrd with just what finds the root disk: unpacking the
# default one (most modules) takes a TCG guest several seconds.
printf '%s\n' virtio_pci virtio_blk ext4 >>"$root/etc/initramfs-tools/modules"
sed -i 's/^MODULES=.*/MODULES=list/' "$root/etc/initramfs-tools/initramfs.conf"
for m in proc sys dev dev/pts var/cache/apt/archives; do
	case $m in
	proc) mount -t proc proc "$root/proc" ;;
	sys) mount -t sysfs sys "$root/sys" ;;
	dev) mount --bind /dev "$root/dev" ;;
	dev/pts) mount -t devpts devpts "$root/dev/pts" ;;
	var/cache/apt/archives) mount --bind "$debs" "$root/$m" ;;
	esac
	mounted+=("$root/$m")
done

step "provisioning (provision.sh --kernel --user $user)"
cp "$here/provision.sh" "$root/tmp/provision.sh"
chroot "$root" /bin/sh /tmp/provision.sh --kernel --user "$user" 2>&1 | sed 's/^/   /' >&2

step "configuring the guest"
# The root disk, and the host's shared directory (loaded early: the mount
# must not race udev for the virtio transport).
cat >"$root/etc/fstab" <<'EOF'
/dev/vda / ext4 rw,errors=remount-ro 0 1
share /share 9p trans=virtio,version=9p2000.L,msize=524288,nofail,x-systemd.device-timeout=15s 0 0
EOF
mkdir -p "$root/share"
printf '%s\n' 9p 9pnet_virtio >"$root/etc/modules-load.d/9p.conf"
echo sandboxed-vm >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 sandboxed-vm\n::1 localhost\n' >"$root/etc/hosts"
: >"$root/etc/resolv.conf" # no network in the test VM
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$root/etc/systemd/journald.conf.d/volatile.conf"
# The unit that runs the shared test script at boot and powers off.
cp "$here/sandboxed-vm-test.service" "$root/etc/systemd/system/"
chroot "$root" systemctl enable sandboxed-vm-test.service >/dev/null 2>&1
# Timers that would only compete with the tests for a slow CPU.
chroot "$root" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
	fstrim.timer man-db.timer >/dev/null 2>&1 || true
rm -f "$root/usr/sbin/policy-rc.d" "$root/tmp/provision.sh"
rm -rf "$root/var/lib/apt/lists/"*

for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}"; done
mounted=()
rm -f "$root/var/cache/apt/archives/"*.deb

kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
[ -f "$kernel" ] && [ -f "$initrd" ] || die "no kernel or initrd in $root/boot"
step "kernel $(basename "$kernel"); making the $size ext4 disk"
mkdir -p "$work/out"
cp "$kernel" "$work/out/vmlinuz"
cp "$initrd" "$work/out/initrd.img"
cp "$root/etc/sandboxed-vm/cmdline" "$work/out/cmdline"
basename "$kernel" | sed 's/^vmlinuz-//' >"$work/out/kernel-version"
echo "$user" >"$work/out/user"
truncate -s "$size" "$work/out/root.img"
mkfs.ext4 -q -F -L sandboxed-vm -d "$root" "$work/out/root.img"
touch "$work/out/ready"

rm -rf "$out"
mv "$work/out" "$out"
# Images of older versions of these scripts are of no further use.
for d in "$cache"/[0-9a-f]*/; do
	[ "${d%/}" = "$out" ] || rm -rf "${d%/}"
done
step "image ready in $out after $((SECONDS - started))s ($(du -sh "$out" | cut -f1) on disk)"
echo "$out"
