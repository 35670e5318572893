#!/bin/sh
# Makes a Debian 12 (bookworm) system the environment sandboxed's tests need:
# cgroup v2 (the unified hierarchy), systemd with an unprivileged user who
# lingers (so the user's systemd manager, which delegates cgroups, runs from
# boot without a login), subordinate ids for that user, and the commands the
# end-to-end suite runs.
#
# One script for both VMs: .ci/vm/build-image.sh runs it inside the test
# image's chroot (no init running, no kernel of its own), and the
# Vagrantfile runs it as the box's provisioner. Run it as root; it is
# idempotent.
#
#   provision.sh [--user NAME] [--docker] [--go VERSION] [--kernel]
#
#   --user NAME    the unprivileged user (created if missing; default sandboxed)
#   --docker       install and enable Docker (the container tier)
#   --go VERSION   install Go VERSION from go.dev under /usr/local/go
#   --kernel       install Debian's kernel (the test image has none yet)
set -eu

user=sandboxed
docker=no
go_version=
kernel=no
while [ $# -gt 0 ]; do
	case $1 in
	--user) user=$2; shift 2 ;;
	--docker) docker=yes; shift ;;
	--go) go_version=$2; shift 2 ;;
	--kernel) kernel=yes; shift ;;
	*) echo "provision.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

log() { printf '== provision: %s\n' "$*" >&2; }

# The kernel command line that gives systemd the unified cgroup hierarchy.
# Debian 12 boots with it by default; saying so keeps a changed default or
# an old GRUB configuration from silently bringing back cgroup v1. The test
# VM's boot script reads this file, GRUB reads the drop-in below.
cmdline="systemd.unified_cgroup_hierarchy=1"

# Packages: systemd as init with logind's PAM hook (user managers and their
# cgroup delegation), D-Bus with the user's session bus (how sandboxed asks
# the user's systemd for a delegated scope), newuidmap/newgidmap, and what
# the e2e suite and its tools run.
pkgs="systemd-sysv dbus dbus-user-session libpam-systemd uidmap kmod udev procps psmisc
iproute2 iputils-ping curl wget ca-certificates bubblewrap git python3 less"
[ "$kernel" = yes ] && pkgs="$pkgs linux-image-amd64"
[ "$docker" = yes ] && pkgs="$pkgs docker.io"
[ -n "$go_version" ] && pkgs="$pkgs make tar"

export DEBIAN_FRONTEND=noninteractive
log "installing packages: $(echo $pkgs)"
apt-get update -qq
# shellcheck disable=SC2086 # the list is split on purpose
apt-get install -y -qq --no-install-recommends $pkgs >/dev/null

log "cgroup v2 on the kernel command line ($cmdline)"
mkdir -p /etc/sandboxed-vm /etc/default/grub.d
printf '%s\n' "$cmdline" >/etc/sandboxed-vm/cmdline
printf 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX %s"\n' "$cmdline" >/etc/default/grub.d/sandboxed-cgroup-v2.cfg
if command -v update-grub >/dev/null 2>&1 && [ -d /boot/grub ]; then
	update-grub >/dev/null 2>&1 || log "update-grub failed; add $cmdline to the kernel command line by hand"
fi

if ! id "$user" >/dev/null 2>&1; then
	log "creating user $user"
	useradd --create-home --shell /bin/bash "$user"
fi
# Subordinate ids: useradd gives a new user a range where /etc/subuid
# exists; an existing user (Vagrant's) may have none.
for f in /etc/subuid /etc/subgid; do
	touch "$f"
	if ! grep -q "^$user:" "$f"; then
		# The first free 65536-id range above the ones already given out.
		start=$(awk -F: 'BEGIN { m = 100000 } { if ($2 + $3 > m) m = $2 + $3 } END { print m }' "$f")
		log "$f: $user gets $start-$((start + 65535))"
		echo "$user:$start:65536" >>"$f"
	fi
done

# Lingering: logind starts user@UID.service at boot. Written as a file so
# it works in a chroot, where loginctl has no logind to ask.
log "lingering for $user (a systemd user manager from boot)"
mkdir -p /var/lib/systemd/linger
touch "/var/lib/systemd/linger/$user"

if [ "$docker" = yes ]; then
	log "Docker enabled at boot"
	systemctl enable docker >/dev/null 2>&1 || true
	if [ -d /run/systemd/system ]; then systemctl start docker; fi
fi

if [ -n "$go_version" ]; then
	if [ "$(/usr/local/go/bin/go env GOVERSION 2>/dev/null)" != "go$go_version" ]; then
		tarball="go$go_version.linux-amd64.tar.gz"
		log "installing Go $go_version from go.dev"
		tmp=$(mktemp -d)
		curl -fsSL -o "$tmp/$tarball" "https://go.dev/dl/$tarball"
		want=$(curl -fsSL "https://dl.google.com/go/$tarball.sha256")
		echo "$want  $tmp/$tarball" | sha256sum -c --quiet -
		rm -rf /usr/local/go
		tar -C /usr/local -xzf "$tmp/$tarball"
		rm -rf "$tmp"
	fi
	echo 'export PATH=$PATH:/usr/local/go/bin' >/etc/profile.d/go.sh
fi

if [ -d /run/systemd/system ] && [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ]; then
	log "this boot still has cgroup v1; reboot to get cgroup v2"
fi
log "done"
