// Package policy holds the operator's policy, the decisions it makes on a
// tool's grants and security fields, approvals, and the audit log.
//
// It owns:
//   - the policy file: Locate (--policy FILE, $XDG_CONFIG_HOME or
//     ~/.config/sandboxed/policy.yaml, /etc/sandboxed/policy.yaml, else
//     built in), Load/Parse (strict: unknown keys and bad values are errors
//     with file:line), Default and DefaultYAML (the same policy, the latter
//     commented key by key for `sandboxed policy init`);
//   - Decide: one Item per grant and security field, each with a verdict
//     (allow, deny, approval), the rule that decided, the reason, the risk,
//     and the exact --approve value or policy line that would allow it; the
//     effective isolation tier and resource limits; the paths the sandbox
//     must mask inside granted mounts; the egress deny list;
//   - the audit log: AppendAudit (a JSON line on disk before it returns;
//     concurrent appends of one process share one locked write and one
//     fsync), PruneAudit, ReadAudit, and masking of sensitive values.
//
// It is pure: its only syscalls read the policy file and read and write the
// audit log. It never prompts (the CLI does, from MissingApprovals), never
// resolves symlinks (the host controller fills permissions.Mount.Resolved
// and Request.CwdResolved/HomeResolved), and never enforces anything: the
// sandbox package turns a Decision into a plan and must apply all of it.
//
// # The default policy
//
// Default() is meant to be safe for a tool nobody has reviewed. Its choices
// (POLICY.md explains them for users):
//
//   - Deny wins. Credentials (~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gh,
//     ~/.docker, ~/.kube, ~/.azure, ~/.config/gcloud, ~/.netrc,
//     ~/.git-credentials, ~/.npmrc, ~/.pypirc), shell start-up files, /etc,
//     /proc and the Docker socket are denied for reads and writes; files that
//     make the host run code later (.git/hooks and .git/config anywhere,
//     ~/.gitconfig, user services and autostart) and sandboxed's own policy
//     and state are denied for writes. Reads of .git/config stay allowed so
//     that git tools work. Rules match the declared and the resolved path,
//     so a symlink into ~/.ssh is denied.
//   - A grant of a parent of a denied path (filesystem:read:~,
//     filesystem:read:/) needs approval, and even when approved the denied
//     paths inside that exist when the run starts are masked
//     (Decision.Masks): hidden for deny rules, read-only for deny-write
//     rules. Nothing is mounted over a path that does not exist: a write
//     grant may create it, and the run reports it. .git/hooks and .git/config are masked
//     read-only inside every writable mount, since a pure package cannot
//     know where repositories are.
//   - Reads are allowed; writes inside the working directory are allowed;
//     writes elsewhere need approval (paths.allow-write can name places). A
//     working directory of / or one holding the home directory does not
//     count as "inside".
//   - Sources: user, global and local definitions are trusted; a
//     definition given as a path, or from an unknown source, is untrusted.
//     Untrusted definitions never run unsandboxed (isolation none is raised
//     to process, with a note) and need approval for every egress grant and
//     for env grants of secret-looking names, because a tool that can read
//     the project and talk to a host of its choosing can exfiltrate it.
//   - Approval always: elevated privilege, isolation none (trusted
//     sources), environment.inherit, egress to any host (*),
//     network:localhost, a tool with no security tag. Denied: elevated with
//     isolation none (it would be host root), egress grants to loopback,
//     private or metadata addresses.
//   - Tiers: tags map read → read_only, write → write, run → execute (spec
//     000 → spec 003); a write grant raises a tool to write and an egress
//     grant to external_api. All four are auto-approved by default because
//     the sandbox, not a prompt, is the mitigation spec 003 asks for, and
//     every risky grant is decided on its own; an operator removes a tier
//     from approval.auto-approve to require an approval for it. A tool with
//     no security tag is tier unknown and needs approval (spec 000).
//   - Limits: a request above a cap is clamped to the cap, not denied: the
//     run stays within the operator's bounds, and a tool that really needed
//     more fails with a clear oom or timeout status. The decision carries a
//     limit item saying so. Every limit of a tool's run (memory, timeout, pids,
//     output, cpus, tmpfs) is decided here; the planner copies Effective.
//     (The probes of `sandboxed discover`, which run no tool, have fixed
//     limits of their own: sandbox.DefaultProbeLimits.)
//   - Approvals (--approve, approval.standing) turn approval items into
//     allow; nothing turns a deny into allow, and no approval lowers a
//     source's minimum isolation tier.
package policy
