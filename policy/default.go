package policy

// DefaultYAML returns the built-in policy as a commented policy file, for
// `sandboxed policy init`. It loads to exactly Default().
func DefaultYAML() []byte { return []byte(defaultYAML) }

const defaultYAML = `# sandboxed policy: what any tool may get on this machine.
#
# sandboxed reads the first of: --policy FILE, $XDG_CONFIG_HOME/sandboxed/policy.yaml
# (~/.config/sandboxed/policy.yaml), /etc/sandboxed/policy.yaml; without a file
# it uses the built-in policy, which is exactly this file.
#
# A key left out keeps its built-in value; a list given replaces the built-in
# list. Unknown keys are errors. Paths: absolute, ~/PATH, or **/NAME (anywhere);
# * and ** globs allowed; a path rule covers the path and everything under it,
# and is checked against both the declared path and the path after symlinks.
# Deny always wins: no approval, not even --approve all, overrides a deny.
# ` + "`sandboxed permissions explain TOOL`" + ` shows which rule decides each point.

# The format of this file. Only 1 exists.
version: 1

# Trust and isolation per source of the definition; the first rule that matches
# wins. scope: local (./.sandboxed/tools), user, global, path (a file given on
# the command line), unknown, or any. path: a glob on the definition file's
# absolute path (both must match when both are set). A definition no rule
# matches is untrusted, with isolation process or container.
#
# trusted: a trusted source may reach named hosts (network:external:HOST) and
# receive secret-looking env: grants without approval; an untrusted one needs
# an approval for each.
# isolation.allowed: the tiers a tool from this source may run in (none,
# process, container); a tier not allowed is raised to the next allowed one.
# isolation.minimum: a lower requested tier is raised to this one.
# isolation.landlock: best-effort (the default: the process tier raises what
# the kernel's Landlock covers) or required (a kernel without Landlock ABI 6,
# files, TCP and IPC scopes, refuses the process tier's runs).
# isolation.without-namespaces: approve (the default: where the process tier
# cannot run, in a container without user namespaces or a writable cgroup, its
# runs are refused with the way out, --approve isolation-landlock, which lets
# the landlock tier stand in for one run; refuse is its earlier name), never
# (they are refused, and no approval lifts that) or landlock (they run in the
# landlock tier: no namespaces; Landlock, seccomp and rlimits; see docs/ci.md).
# isolation.landlock-gaps: what the landlock tier may go without where it
# cannot enforce it: masks (paths.deny, secrets and protected paths inside a
# write grant; a read grant's masks are kept unreadable by a rule per entry) and
# signals (signal scoping, Landlock ABI 6, for a tool running as your uid).
# isolation.runtime: definition (the default: the container runtime the
# definition asks for, sandboxed.runtime) or runsc (every container-tier run
# of the source runs under gVisor, registered by sudo sandboxed setup
# --runtime runsc; with minimum: container, every run of the source does).
# isolation.backend: operator (the default: where run --backend says), local
# (this host) or kubernetes (every run of the source is a pod of its own).
# Running with isolation none always needs approval (--approve isolation-none).
# For example, to trust the tools of one directory, put first:
#   - path: ~/work/tools/**
#     trusted: true
sources:
  - scope: user
    trusted: true
    isolation:
      allowed: [none, process, container]
      minimum: none
      landlock: best-effort
      without-namespaces: approve
      landlock-gaps: []
      runtime: definition
      backend: operator
  - scope: global
    trusted: true
    isolation:
      allowed: [none, process, container]
      minimum: none
      landlock: best-effort
      without-namespaces: approve
      landlock-gaps: []
      runtime: definition
      backend: operator
  # The working directory's tools (./.sandboxed/tools) come with whatever
  # repository was cloned: untrusted, like a file path, unless you say so.
  - scope: local
    trusted: false
    isolation:
      allowed: [process, container]
      minimum: process
      landlock: best-effort
      without-namespaces: approve
      landlock-gaps: []
      runtime: definition
      backend: operator
  # A definition given as a file path (sandboxed run ./tool.yaml): untrusted,
  # never unsandboxed.
  - scope: path
    trusted: false
    isolation:
      allowed: [process, container]
      minimum: process
      landlock: best-effort
      without-namespaces: approve
      landlock-gaps: []
      runtime: definition
      backend: operator
  - scope: unknown
    trusted: false
    isolation:
      allowed: [process, container]
      minimum: process
      landlock: best-effort
      without-namespaces: approve
      landlock-gaps: []
      runtime: definition
      backend: operator

# Resource defaults (used when the tool asks for nothing) and caps (max: a
# request above the cap is clamped to it, and the decision says so; 0 = no cap).
# Every limit of a run is decided here; what a definition writes is a request.
limits:
  memory:        # resources.max-memory; swap is never added
    default: 512MiB
    max: 8GiB
  timeout:       # resources.timeout / timeout
    default: 5m
    max: 1h
  pids:          # sandboxed.pids-limit (64 by default for reduced privilege)
    default: 256
    max: 4096
  output:        # captured stdout and stderr, each (buffer-limit)
    default: 10MiB
    max: 100MiB
  cpus:          # sandboxed.cpus: a CPU quota (0.5 = half a CPU); default 0:
                 # none; a max above 0 gives every run one (the default, else
                 # the max). A cgroup holds it: a run whose tier has none it
                 # may use (landlock, none) is refused
    default: 0
    max: 0
  tmpfs:         # sandboxed.tmpfs-size: the private /tmp (the landlock tier,
                 # which has none, caps each file the tool writes instead)
    default: 64MiB
    max: 1GiB

# The warm pool of a resident controller (sandboxed mcp, sandboxed serve):
# sandboxes started ahead of time, each handed to one run and destroyed
# after it. Their --pool-size and --pool-idle flags override these.
pool:
  size: 2        # warm sandboxes per kind (tier, privilege, user namespace); 0: no pool
  idle: 1m       # a kind's pool is given back after this long without a run; 0: kept

paths:
  # Reads and writes denied: credentials, shell start-up files, host config,
  # the host's /proc, and the Docker socket (which is root on the host).
  # A grant of a parent of one of these (filesystem:read:~, filesystem:read:/)
  # needs approval, and the denied paths inside that exist when the run starts
  # stay hidden even then (one a write grant creates during the run is
  # reported, not hidden).
  deny:
    - ~/.ssh
    - ~/.aws
    - ~/.gnupg
    - ~/.config/gh
    - ~/.docker
    - ~/.kube
    - ~/.azure
    - ~/.config/gcloud
    - ~/.netrc
    - ~/.git-credentials
    - ~/.npmrc
    - ~/.pypirc
    - ~/.bashrc
    - ~/.bash_profile
    - ~/.bash_login
    - ~/.bash_logout
    - ~/.profile
    - ~/.zshrc
    - ~/.zshenv
    - ~/.zprofile
    - ~/.zlogin
    - ~/.config/fish
    - /etc
    - /proc
    - /var/run/docker.sock
    - /run/docker.sock
    # Where services keep their sockets: a read-only bind still lets a tool
    # connect() to every Unix socket under it (the session bus, X, container
    # engines, other runs' egress), which is code execution on the host.
    - /run
    - /var/run
    - /tmp/.X11-unix
    - /tmp/.ICE-unix
    - /dev
    - /sys
    - /boot
    # The same credentials whoever runs sandboxed (under sudo, ~ is the
    # invoking user's home; these hold for every home).
    - /root/.ssh
    - /home/*/.ssh
    - /home/*/.aws
    - /home/*/.gnupg
    - /home/*/.kube
    - /home/*/.docker
    # Other runs' output and the audit log.
    - ~/.local/state/sandboxed
  # Writes denied, reads allowed: files that make the host run code later
  # (git hooks, git config with core.hooksPath or core.fsmonitor, user
  # services, autostart entries) and sandboxed's own policy and state.
  # Inside a writable grant these stay read-only.
  deny-write:
    - "**/.git/hooks"
    - "**/.git/config"
    - ~/.gitconfig
    - ~/.config/git
    - ~/.config/sandboxed
    - ~/.config/systemd
    - ~/.config/autostart
    # A submodule's git directory lives under its parent's .git/modules.
    - "**/.git/modules/**/hooks"
    - "**/.git/modules/**/config"
  # Reads and writes that need an approval, e.g. ~/Documents.
  approve: []
  # Writes outside the working directory need approval, except under these,
  # e.g. /tmp/builds.
  allow-write: []

secrets:
  # Names of files and folders that hold secrets. Inside every granted folder,
  # at any depth, what they name is masked: the tool sees an empty file or an
  # empty, unreadable folder. A grant that names one itself (a path or a
  # {PARAM} that is one) needs approval, at high risk. Names, not paths: a
  # base name (.env, *.pem) or a short relative path (.kube/config); * and ?
  # globs. Masks match names only: a hard link under another name, secrets
  # committed in .git objects or written inside ordinary files are not caught.
  mask:
    - .env
    - .env.*
    - id_rsa*
    - id_dsa*
    - id_ecdsa*
    - id_ed25519*
    - "*.pem"
    - "*.key"
    - "*.p12"
    - "*.pfx"
    - .ssh
    - .aws
    - .gnupg
    - .azure
    - .config/gcloud
    - .config/gh
    - .netrc
    - .git-credentials
    - .npmrc
    - .pypirc
    - .kube/config
    - .docker/config.json
  # Path patterns (as under paths) that lift the masks: what they match stays
  # visible, and a grant of it needs no approval (public keys by default;
  # add e.g. ~/work/app/.env.example).
  except:
    - "**/*.pub"

commands:
  # Rules on the commands of tools whose command comes from their caller: a
  # parameter substituted with escape-shell: false (a bash {COMMAND} tool).
  # Each simple command is matched, in pipelines, lists, subshells, $(…) and
  # the scripts of bash -c '…'. A rule's prefix is the leading words of a
  # command (the first one matches the program's base name); its match and
  # not-match examples are checked when the policy loads. Deny wins; when
  # allow has rules, a command none matches is refused. What cannot be judged
  # before it runs is refused unless an allow rule names it: eval, exec,
  # source, env, command, xargs, sudo and other commands that run commands,
  # find -exec, a shell that reads its script from stdin, a file or a
  # variable (curl … | sh), and a program word that expands ($CMD, $(…)).
  # Commands that allow admits, e.g.:
  #   - prefix: git status
  #     match: ["git status --short"]
  #     not-match: ["git push"]
  allow: []
  # Commands refused: those that ask for another user's rights.
  deny:
    - prefix: sudo
      match: ["sudo rm -rf /", "bash -c 'sudo id'"]
      not-match: ["echo sudo"]
    - prefix: su
      match: ["su -c id root"]
      not-match: ["sum file"]
    - prefix: doas
      match: ["doas id"]
      not-match: []

network:
  # Hosts any source may reach without approval: names, IP addresses,
  # *.example.com (subdomains, not the apex). "*" here would allow every host.
  allow: []
  # Hosts no tool may reach, even under a wider grant: cloud metadata
  # endpoints (the egress proxy also refuses private and link-local addresses).
  deny:
    - metadata.google.internal
    - 169.254.169.254
    - fd00:ec2::254
  # network:localhost ports that need no approval (e.g. 5432); others do.
  localhost-allow: []
  # Files of CA certificates (PEM) the egress proxy trusts, besides the
  # host's system roots, for the servers of hosts whose TLS it terminates
  # (the hosts of sandboxed.credentials and sandboxed.http).
  extra-ca: []

# Caps on what tools may send to hosts, at the egress proxy (spec 003's
# external-API tier: rate limits, cost caps). A request over a cap gets HTTP
# 429 and is recorded as quota_exceeded in the run's egress and the audit log.
# The proxy counts the requests it sees (plain HTTP, and HTTPS to hosts whose
# TLS it terminates: those of sandboxed.credentials and sandboxed.http) and
# each connection of a tunnel it cannot look into. window: a sliding window
# across every run of the user (kept in the state directory); 0 caps each
# run. Bytes (up and down) are counted as connections end. E.g.:
#   - host: api.example.com
#     requests: 60
#     bytes: 100MB
#     window: 1m
quotas: []

undo:
  # Every run with a write grant records what it changes there (created,
  # modified and deleted paths, with the pre-images of what it modified or
  # deleted), so that "sandboxed undo RUN_ID" can put the grant back; "run
  # --review" uses the same record. The record is taken on the host before
  # and after the run, so it works alike in every tier. A grant with more
  # files or bytes than these bounds is not recorded: the run goes on, and
  # its notes say it cannot be undone (and --review refuses it). Records
  # live under the state directory (0600, outside every grant); gc removes
  # those older than keep, then the oldest while all of them hold more than
  # max-total. disable: true turns the records off.
  disable: false
  max-files: 20000
  max-size: 256MB
  keep: 7d
  max-total: 2GB

environment:
  # env: grants denied: the ssh agent and Docker daemon addresses (keys to
  # the host), and the loader variables that inject code into host binaries
  # when a tool runs with isolation none. environment.inherit always needs
  # approval (--approve env-inherit).
  deny:
    - LD_PRELOAD
    - LD_LIBRARY_PATH
    - LD_AUDIT
    - SSH_AUTH_SOCK
    - DOCKER_HOST

credentials:
  # sandboxed.credentials, by the name of the variable that holds the
  # stand-in (patterns as environment.deny). The sandbox never holds a
  # credential's value: the egress proxy puts it in requests to the
  # credential's hosts only. Credentials from env and file need no approval
  # from trusted sources and credential:NAME from untrusted ones; one read by
  # running a host command always needs approval.
  # Credentials refused outright.
  deny: []
  # Credentials that need approval (--approve credential:NAME) from any source.
  approve: []

approval:
  # Tool-level rules on the security tier: tool:TAG (as cycod --auto-approve
  # tool:read), tier:TIER, or name:TOOL. Tiers (spec 003): tag read ->
  # read_only, write -> write, run -> execute; a write grant raises a tool to
  # at least write, an egress grant to external_api; a tool with none of the
  # tags read, write, run is "unknown" (high risk) and, not listed here, needs
  # approval (--approve tier:unknown). This approves the tier only: every
  # grant and security field is still decided by the rules above.
  auto-approve:
    - tier:read_only
    - tier:write
    - tier:execute
    - tier:external_api
  # Tools denied outright, e.g. tier:external_api or tool:deploy. Deny wins.
  auto-deny: []
  # Approvals given to every run, in the words of --approve: elevated,
  # isolation-none, env-inherit, tier:TIER, credential:NAME, a permission string
  # (filesystem:write:/x also covers paths under /x), or all.
  standing: []
`
