# Sourced by .ci/run (or run on its own: `sudo bash .ci/prepare.sh`): makes this machine able to run
# the whole suite. Idempotent; everything it installs comes from Debian's
# packages, and the Docker engine is started if none answers.
set -euo pipefail

log() { printf '== %s\n' "$*" >&2; }

need_pkgs=()
command -v bwrap >/dev/null 2>&1 || need_pkgs+=(bubblewrap)
command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
command -v curl >/dev/null 2>&1 || need_pkgs+=(curl)
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v hyperfine >/dev/null 2>&1 || need_pkgs+=(hyperfine)
command -v wget >/dev/null 2>&1 || need_pkgs+=(wget)
# Python quoting and discovery of Python tools; /usr/bin/python3, the one a sandbox sees.
{ command -v python3 >/dev/null 2>&1 && [ -x /usr/bin/python3 ]; } || need_pkgs+=(python3)
command -v zsh >/dev/null 2>&1 || need_pkgs+=(zsh)     # sandboxed completion zsh
command -v fish >/dev/null 2>&1 || need_pkgs+=(fish)   # sandboxed completion fish
command -v newuidmap >/dev/null 2>&1 || need_pkgs+=(uidmap)  # reduced without root: subordinate ids
command -v runsc >/dev/null 2>&1 || need_pkgs+=(runsc)
# The cgroup v2 test VM, and the check of the Vagrantfile.
command -v qemu-system-x86_64 >/dev/null 2>&1 || need_pkgs+=(qemu-system-x86)
command -v vagrant >/dev/null 2>&1 || need_pkgs+=(vagrant)
dpkg -s vagrant-libvirt >/dev/null 2>&1 || need_pkgs+=(vagrant-libvirt)
if ! command -v docker >/dev/null 2>&1 && ! command -v dockerd >/dev/null 2>&1; then
  need_pkgs+=(docker.io)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  log "no Docker engine answers; starting dockerd"
  if command -v systemctl >/dev/null 2>&1 && systemctl start docker 2>/dev/null; then :; else
    (nohup dockerd >/tmp/dockerd.log 2>&1 &)
  fi
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not start; see /tmp/dockerd.log"; exit 1; }
fi
log "docker engine $(docker version --format '{{.Server.Version}}' 2>/dev/null) ready"

# gVisor: the container tier's runtime runsc must be registered with the engine, with the arguments
# its plans need; `sandboxed setup --runtime runsc` does it (idempotent) and reloads dockerd.
if ! docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
  log "registering runtime runsc with the Docker engine"
  setup_bin="$(mktemp -d)/sandboxed"
  (cd "$(dirname "${BASH_SOURCE[0]}")/.." && CGO_ENABLED=0 go build -o "$setup_bin" ./cmd/sandboxed)
  "$setup_bin" setup --runtime runsc
  rm -rf "$(dirname "$setup_bin")"
  for _ in $(seq 1 30); do docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"' && break; sleep 1; done
  docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"' || { log "dockerd did not take runtime runsc"; exit 1; }
fi
