package container

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/images"
	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/specconv"
)

// Paths inside every container of this tier.
const (
	// InitPath is where the sandboxed binary is bind-mounted, read-only; it
	// runs as the container's init.
	InitPath = "/.sandboxed/sandboxed"
	// ControlSocket is where the host's control socket appears; the init
	// dials it.
	ControlSocket = "/.sandboxed/init.sock"
	// controlSocketName is the control socket's name in Plan.HostDir.
	controlSocketName = "init.sock"
	// stagingDirName is the directory, in a run's host directory, where
	// the grants' sources are staged; GC finds leftovers by it and by the
	// run id of the directory above.
	stagingDirName = ".sandboxed-binds"
)

// dockerDefaultCaps is Docker's default capability set: the most an
// elevated run gets. A plan asking for more is refused.
var dockerDefaultCaps = func() map[string]bool {
	m := map[string]bool{}
	for _, c := range isolation.DockerDefaultCaps {
		m[c] = true
	}
	return m
}()

// systemDirs are host system directories a plan may bind read-only for the
// process tier; in a container the image provides them, so such binds
// (source equal to destination) are left out rather than shadowing the
// image with the host's.
var systemDirs = map[string]bool{
	"/usr": true, "/bin": true, "/sbin": true, "/lib": true, "/lib32": true,
	"/lib64": true, "/libx32": true, "/etc": true,
}

// engineMounts are filesystems the engine itself mounts in every container.
var engineMounts = map[string]bool{
	"/proc": true, "/sys": true, "/dev": true, "/dev/pts": true, "/dev/shm": true,
	"/dev/mqueue": true, "/sys/fs/cgroup": true,
}

// tmpfsOptions are the tmpfs mount options a plan may pass through.
var tmpfsOptions = map[string]bool{
	"ro": true, "rw": true, "nosuid": true, "nodev": true, "noexec": true, "exec": true,
	"suid": true, "dev": true, "noatime": true, "relatime": true, "strictatime": true,
	"nodiratime": true,
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// host is what the translation needs to know of the host. It is a value so
// the translation stays pure and a table can test it.
type host struct {
	// InitBinary is the host path of the static sandboxed binary.
	InitBinary string
	// lstat checks bind sources; nil skips the check.
	lstat func(string) (os.FileInfo, error)
}

// containerName is the engine name of the run's container.
func containerName(runID string) string { return "sandboxed-" + runID }

// translate turns a plan into the container's configuration. It touches
// the host only through h.lstat, to refuse bind sources that are symlinks.
func translate(p *isolation.Plan, h host) (*container.Config, *container.HostConfig, error) {
	conv, err := checkPlan(p)
	if err != nil {
		return nil, nil, err
	}
	proc := p.Spec.Process
	user, err := userFor(p.Privilege, proc.User)
	if err != nil {
		return nil, nil, err
	}
	capAdd, err := capsFor(p.Privilege, proc.Capabilities)
	if err != nil {
		return nil, nil, err
	}
	ulimits, err := ulimitsFor(proc.Rlimits)
	if err != nil {
		return nil, nil, err
	}
	hc, err := hostConfig(p, conv.resources, capAdd, ulimits)
	if err != nil {
		return nil, nil, err
	}
	// Fixed mounts: the init binary and the control socket. The socket is
	// bound as a file so the container needs no access to HostDir itself.
	hc.Mounts = append(hc.Mounts,
		bindMount(h.InitBinary, InitPath, true),
		bindMount(path.Join(p.HostDir, controlSocketName), ControlSocket, false),
	)
	if p.Egress != nil {
		if p.Egress.ProxySocket == "" || !path.IsAbs(p.Egress.ProxySocket) {
			return nil, nil, fmt.Errorf("translate plan: %w: egress proxy socket %q is not absolute", isolation.ErrUnsupported, p.Egress.ProxySocket)
		}
		hc.Mounts = append(hc.Mounts, bindMount(p.Egress.ProxySocket, isolation.SandboxSocket, false))
	}
	binds, tmpfs, err := translateMounts(p.Spec.Mounts, conv.tmpfsBytes, h.lstat)
	if err != nil {
		return nil, nil, err
	}
	hc.Mounts, hc.Tmpfs = append(hc.Mounts, binds...), tmpfs
	return containerConfig(p, user), hc, nil
}

// checkPlan refuses a plan this tier cannot translate: another tier's, one
// without a process, a run id that cannot name a container, a relative
// host directory, or a spec the tier would not honour (convertSpec),
// whose pids limit does not hold the tool's and the init's spare threads.
func checkPlan(p *isolation.Plan) (*converted, error) {
	if p == nil || p.Spec == nil || p.Spec.Process == nil {
		return nil, fmt.Errorf("translate plan: %w: the plan has no spec process", isolation.ErrUnsupported)
	}
	if p.Tier != isolation.TierContainer {
		return nil, fmt.Errorf("translate plan: %w: tier %q is not %q", isolation.ErrUnsupported, p.Tier, isolation.TierContainer)
	}
	if !nameRE.MatchString(p.RunID) {
		return nil, fmt.Errorf("translate plan: run id %q is not a valid container name part: %w", p.RunID, isolation.ErrUnsupported)
	}
	if p.HostDir == "" || !path.IsAbs(p.HostDir) {
		return nil, fmt.Errorf("translate plan: %w: host dir %q is not absolute", isolation.ErrUnsupported, p.HostDir)
	}
	conv, err := convertSpec(p)
	if err != nil {
		return nil, fmt.Errorf("translate plan: %w", err)
	}
	if conv.runID != p.RunID {
		return nil, fmt.Errorf("translate plan: %w: the spec is of run %q, the plan of %q", isolation.ErrUnsupported, conv.runID, p.RunID)
	}
	if p.Limits.Pids <= 0 || conv.resources.Pids < p.Limits.Pids+isolation.InitSpareThreads {
		return nil, &isolation.UnsupportedError{What: "a spec pids limit that does not hold the tool's and the init's spare threads", Fix: "plan the run with sandbox.Plan"}
	}
	return conv, nil
}

// containerConfig is the container's own configuration: image, user,
// environment, working directory, the init as entrypoint, the run's labels.
func containerConfig(p *isolation.Plan, user string) *container.Config {
	proc := p.Spec.Process
	img := p.Image
	if img == "" {
		img = images.DefaultImage
	}
	hostname := p.Spec.Hostname
	if hostname == "" {
		hostname = "sandbox"
	}
	cwd := proc.Cwd
	if cwd == "" {
		cwd = "/"
	}
	return &container.Config{
		Hostname:        hostname,
		User:            user,
		Env:             append([]string(nil), proc.Env...),
		Entrypoint:      append([]string{InitPath}, initArgs(ControlSocket)...),
		Cmd:             nil,
		Image:           img,
		WorkingDir:      cwd,
		NetworkDisabled: false, // NetworkMode none gives a lone loopback; the init relays egress on it
		Labels: map[string]string{
			isolation.AnnotationRunID: p.RunID,
			isolation.AnnotationTool:  p.Tool,
		},
		StopSignal: "SIGTERM",
	}
}

// hostConfig is the container's host configuration but for its mounts:
// no network, a read-only root, the capabilities, seccomp profile, masked
// and read-only paths and limits of the plan.
func hostConfig(p *isolation.Plan, r specconv.Resources, capAdd []string, ulimits []*container.Ulimit) (*container.HostConfig, error) {
	secOpts := []string{"no-new-privileges"}
	if p.Spec.Linux != nil && p.Spec.Linux.Seccomp != nil {
		// The engine's default profile narrowed by the plan's (the one the
		// process tier loads): the container refuses what either refuses.
		js, err := seccompJSON(p.Spec.Linux.Seccomp, capAdd)
		if err != nil {
			return nil, err
		}
		secOpts = append(secOpts, "seccomp="+js)
	}
	var masked, readonly []string
	if p.Spec.Linux != nil {
		masked, readonly = p.Spec.Linux.MaskedPaths, p.Spec.Linux.ReadonlyPaths
	}
	// The spec's limit: the tool's and the init's spare threads.
	pids := r.Pids
	if p.Runtime == "runsc" {
		pids = runscHostPids(pids)
	}
	hc := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		CapAdd:         capAdd,
		SecurityOpt:    secOpts,
		// Setting the lists replaces the engine's: keep its defaults as a
		// floor. /dev is read-only too (its mounts below stay writable),
		// so even a root user writes nothing outside /tmp and grants.
		MaskedPaths:   union(dockerMaskedPaths, masked),
		ReadonlyPaths: union(dockerReadonlyPaths, readonly, []string{"/dev"}),
		IpcMode:       "private",
		CgroupnsMode:  "private",
		Privileged:    false,
		Init:          boolPtr(false), // our init is the entrypoint
		AutoRemove:    false,          // Close removes it, after Stats
		Runtime:       p.Runtime,
		LogConfig:     container.LogConfig{Type: "none"}, // stdio goes through the init, never the log
		Resources: container.Resources{
			Memory:     r.MemoryBytes,
			MemorySwap: r.MemoryBytes, // no swap
			CPUQuota:   r.CPUQuota,
			CPUPeriod:  int64(r.CPUPeriod),
			PidsLimit:  &pids,
			Ulimits:    ulimits,
		},
	}
	if p.Privilege == privilege.Elevated {
		// The engine's user namespace remapping (checked by Backend.Check)
		// makes this root unprivileged on the host.
		hc.UsernsMode = ""
	}
	return hc, nil
}

// translateMounts turns the spec's mounts into the container's binds and
// tmpfs mounts. System directories the image provides and the filesystems
// the engine mounts itself are left out; /tmp is a tmpfs of tmpfsBytes
// whether the spec has one or not. lstat, when not nil, refuses bind
// sources that are symlinks.
func translateMounts(ms []specs.Mount, tmpfsBytes int64, lstat func(string) (os.FileInfo, error)) ([]mount.Mount, map[string]string, error) {
	var binds []mount.Mount
	tmpfs := map[string]string{}
	sawTmp := false
	for _, m := range ms {
		dst := path.Clean(m.Destination)
		if !path.IsAbs(dst) {
			return nil, nil, fmt.Errorf("translate mount %q: %w: destination is not absolute", m.Destination, isolation.ErrUnsupported)
		}
		if strings.HasPrefix(dst, "/.sandboxed") {
			return nil, nil, fmt.Errorf("translate mount %q: %w: /.sandboxed is reserved for the init", m.Destination, isolation.ErrUnsupported)
		}
		if isolation.IsSkeleton(dst) {
			// The engine builds these as the skeleton says (/tmp of
			// the spec's size, below): a spec that says otherwise is
			// refused.
			if _, err := isolation.CheckSkeleton(m); err != nil {
				return nil, nil, fmt.Errorf("translate mount %s: %w", dst, err)
			}
		} else if engineMounts[dst] {
			return nil, nil, fmt.Errorf("translate mount %s: %w: the engine mounts it itself", dst, isolation.ErrUnsupported)
		} else if err := isolation.CheckMountOptions(m); err != nil {
			return nil, nil, fmt.Errorf("translate mount %s: %w", dst, err)
		}
		switch {
		case isBind(m):
			if systemDirs[dst] && path.Clean(m.Source) == dst && hasOpt(m.Options, "ro") {
				continue
			}
			if err := checkBindSource(m.Source, dst, lstat); err != nil {
				return nil, nil, err
			}
			binds = append(binds, bindMount(m.Source, dst, !hasOpt(m.Options, "rw")))
		case m.Type == "tmpfs":
			opts, err := tmpfsOpts(m.Options)
			if err != nil {
				return nil, nil, fmt.Errorf("translate tmpfs %s: %w", dst, err)
			}
			if dst == "/tmp" {
				sawTmp = true
				opts = withSize(opts, tmpfsBytes)
			}
			if !engineMounts[dst] {
				tmpfs[dst] = opts
			}
		case engineMounts[dst] && (m.Type == "proc" || m.Type == "sysfs" || m.Type == "devpts" ||
			m.Type == "mqueue" || m.Type == "cgroup" || m.Type == "cgroup2" || m.Type == "tmpfs"):
			// The engine mounts its own, with its masked and read-only paths.
		default:
			return nil, nil, fmt.Errorf("translate mount %s: %w: type %q", dst, isolation.ErrUnsupported, m.Type)
		}
	}
	if !sawTmp {
		tmpfs["/tmp"] = withSize("rw,nosuid,nodev,exec,mode=1777", tmpfsBytes)
	}
	return binds, tmpfs, nil
}

// checkBindSource refuses a bind source that is relative or, when lstat is
// not nil, a symlink (the planner resolves symlinks before mounting).
func checkBindSource(src, dst string, lstat func(string) (os.FileInfo, error)) error {
	if !path.IsAbs(src) {
		return fmt.Errorf("translate mount %s: %w: source %q is not absolute", dst, isolation.ErrUnsupported, src)
	}
	if lstat == nil {
		return nil
	}
	fi, err := lstat(src)
	if err != nil {
		return fmt.Errorf("check bind source %s: %w", src, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("check bind source %s: %w: it is a symlink (the planner resolves symlinks before mounting)", src, isolation.ErrUnsupported)
	}
	return nil
}

func boolPtr(b bool) *bool { return &b }

func bindMount(src, dst string, ro bool) mount.Mount {
	return mount.Mount{
		Type:        mount.TypeBind,
		Source:      src,
		Target:      dst,
		ReadOnly:    ro,
		BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
	}
}

func isBind(m specs.Mount) bool {
	return m.Type == "bind" || hasOpt(m.Options, "bind") || hasOpt(m.Options, "rbind")
}

func hasOpt(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// tmpfsOpts keeps the options a tmpfs may carry; nosuid and nodev are
// always set, and exec is explicit because the engine defaults to noexec.
func tmpfsOpts(in []string) (string, error) {
	out := []string{"nosuid", "nodev"}
	noexec := false
	mode := "1777"
	for _, o := range in {
		switch {
		case o == "nosuid" || o == "nodev" || o == "suid" || o == "dev":
			// suid and dev are never granted.
		case o == "noexec":
			noexec = true
		case tmpfsOptions[o]:
			if o != "exec" {
				out = append(out, o)
			}
		case strings.HasPrefix(o, "mode="):
			if _, err := strconv.ParseUint(strings.TrimPrefix(o, "mode="), 8, 32); err != nil {
				return "", fmt.Errorf("%w: tmpfs option %q", isolation.ErrUnsupported, o)
			}
			mode = strings.TrimPrefix(o, "mode=")
		case strings.HasPrefix(o, "size="):
			out = append(out, o)
		default:
			return "", fmt.Errorf("%w: tmpfs option %q", isolation.ErrUnsupported, o)
		}
	}
	if noexec {
		out = append(out, "noexec")
	} else {
		out = append(out, "exec")
	}
	out = append(out, "mode="+mode)
	return strings.Join(out, ","), nil
}

// withSize replaces any size= option by size bytes (0: the kernel's
// default, half of memory; the memory limit still bounds it).
func withSize(opts string, size int64) string {
	var out []string
	for _, o := range strings.Split(opts, ",") {
		if o != "" && !strings.HasPrefix(o, "size=") {
			out = append(out, o)
		}
	}
	if size > 0 {
		out = append(out, "size="+strconv.FormatInt(size, 10))
	}
	return strings.Join(out, ",")
}

// userFor is the container's user: the spec's uid:gid for same-as-user
// (the planner's: the invoking user's, or for root's tools the id
// reserved for sandboxed, which Backend.checkUser holds to), nobody for
// reduced, root for elevated (unprivileged on the host through the
// engine's user namespace remapping, which Check requires).
func userFor(priv privilege.Privilege, u specs.User) (string, error) {
	switch priv {
	case privilege.SameAsUser, "":
		return fmt.Sprintf("%d:%d", u.UID, u.GID), nil
	case privilege.Reduced:
		return fmt.Sprintf("%d:%d", privilege.NobodyID, privilege.NobodyID), nil
	case privilege.Elevated:
		return "0:0", nil
	}
	return "", fmt.Errorf("translate plan: %w: execution privilege %q", isolation.ErrUnsupported, priv)
}

// capsFor returns the capabilities to add after dropping all of them: none
// unless the run is elevated, and then at most Docker's default set.
func capsFor(priv privilege.Privilege, c *specs.LinuxCapabilities) ([]string, error) {
	if c == nil {
		return nil, nil
	}
	set := map[string]bool{}
	for _, l := range [][]string{c.Bounding, c.Effective, c.Permitted, c.Inheritable, c.Ambient} {
		for _, name := range l {
			set[strings.ToUpper(name)] = true
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	if priv != privilege.Elevated {
		return nil, fmt.Errorf("translate plan: %w: capabilities for a %s run", isolation.ErrUnsupported, priv)
	}
	var out []string
	for name := range set {
		if !strings.HasPrefix(name, "CAP_") {
			name = "CAP_" + name
		}
		if !dockerDefaultCaps[name] {
			return nil, &isolation.UnsupportedError{What: "capability " + name, Fix: "elevated runs get at most Docker's default capability set"}
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// rlimitNames maps OCI rlimit types to the engine's ulimit names.
var rlimitNames = map[string]string{
	"RLIMIT_AS": "as", "RLIMIT_CORE": "core", "RLIMIT_CPU": "cpu", "RLIMIT_DATA": "data",
	"RLIMIT_FSIZE": "fsize", "RLIMIT_LOCKS": "locks", "RLIMIT_MEMLOCK": "memlock",
	"RLIMIT_MSGQUEUE": "msgqueue", "RLIMIT_NICE": "nice", "RLIMIT_NOFILE": "nofile",
	"RLIMIT_NPROC": "nproc", "RLIMIT_RSS": "rss", "RLIMIT_RTPRIO": "rtprio",
	"RLIMIT_RTTIME": "rttime", "RLIMIT_SIGPENDING": "sigpending", "RLIMIT_STACK": "stack",
}

func ulimitsFor(rl []specs.POSIXRlimit) ([]*container.Ulimit, error) {
	var out []*container.Ulimit
	for _, r := range rl {
		name, ok := rlimitNames[r.Type]
		if !ok {
			return nil, fmt.Errorf("translate plan: %w: rlimit %q", isolation.ErrUnsupported, r.Type)
		}
		out = append(out, &container.Ulimit{Name: name, Soft: clampRlimit(r.Soft), Hard: clampRlimit(r.Hard)})
	}
	return out, nil
}

// clampRlimit maps RLIM_INFINITY (all ones) to the engine's -1.
func clampRlimit(v uint64) int64 {
	if v > 1<<63-1 {
		return -1
	}
	return int64(v)
}

// The engine's default masked and read-only paths, which every tier
// follows (isolation's lists).
var (
	dockerMaskedPaths   = isolation.DockerMaskedPaths
	dockerReadonlyPaths = isolation.DockerReadonlyPaths
)

// union returns the paths of all lists, each once, in first-seen order.
func union(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, p := range l {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// lastProfile caches the last rendered profile: Check and Start translate
// the same plan, and rendering takes about a millisecond.
var lastProfile struct {
	sync.Mutex
	plan *specs.LinuxSeccomp
	caps string
	json string
}

// seccompJSON renders seccompProfile as the engine's security option value.
// The plan's profile must not change after it was first translated.
func seccompJSON(plan *specs.LinuxSeccomp, caps []string) (string, error) {
	key := strings.Join(caps, ",")
	lastProfile.Lock()
	defer lastProfile.Unlock()
	if lastProfile.plan == plan && lastProfile.caps == key && lastProfile.json != "" {
		return lastProfile.json, nil
	}
	prof, err := seccompProfile(plan, caps)
	if err != nil {
		return "", err
	}
	addGVisorNames(prof)
	js, err := json.Marshal(prof)
	if err != nil {
		return "", fmt.Errorf("translate seccomp profile: %w", err)
	}
	lastProfile.plan, lastProfile.caps, lastProfile.json = plan, key, string(js)
	return lastProfile.json, nil
}

// Under runsc the engine's pids limit bounds the host tasks of the whole
// gVisor sandbox (the Sentry's threads, and on the ptrace platform a stub
// process and tracer threads for each process inside), not the processes
// of the tool: an idle sandbox holds about 40 host tasks, and each process
// inside 9 when idle and up to about 20 under a fork bomb (786-1294 host
// tasks for 64 processes, runsc 20221219 on ptrace). runscHostPids turns a
// plan's limit into that host bound, with room above the worst seen: the
// init's RLIMIT_NPROC must stop the tool first. Were the host bound hit
// first, the Sentry could not start a stub and would die ("error
// initializing first thread"), taking the run down as a sandbox failure,
// and the engine sometimes took longer to remove it than teardown waits.
const (
	runscBaseTasks       = 64
	runscTasksPerProcess = 32
)

func runscHostPids(pids int64) int64 {
	return runscBaseTasks + runscTasksPerProcess*pids
}

// NodeProfile is the container tier's seccomp profile for a run without
// capabilities before a plan's profile narrows it — Docker's default
// profile (an allowlist), with gVisor's names for the syscalls it knows by
// others (gVisorNames) — as indented JSON in the OCI runtime spec's form,
// which containerd and CRI-O read as a Kubernetes Localhost profile. The
// Kubernetes backend's pods run under it where the cluster advertises it
// (sandboxed setup --seccomp-profile writes it on a node); their init
// loads the plan's own filter below it, as the container tier's engine
// profile folds it in.
func NodeProfile() ([]byte, error) {
	prof, err := seccompProfile(nil, nil)
	if err != nil {
		return nil, err
	}
	addGVisorNames(prof)
	b, err := json.MarshalIndent(prof, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render the seccomp profile: %w", err)
	}
	return append(b, '\n'), nil
}

// gVisorNames are syscalls that gVisor's enforcement of an OCI seccomp
// profile (runsc --oci-seccomp) knows by another name than Linux and
// libseccomp: a profile that allows only the Linux name refuses the call
// under runsc (pselect6, which glibc's select uses: GNU wget could not
// write its request). runc and libseccomp skip names they do not know.
var gVisorNames = map[string]string{"pselect6": "pselect"}

// addGVisorNames adds, to every rule of prof that names a syscall of
// gVisorNames, gVisor's name for it, with the same action and arguments.
func addGVisorNames(prof *specs.LinuxSeccomp) {
	if prof == nil {
		return
	}
	for i := range prof.Syscalls {
		r := &prof.Syscalls[i]
		for linux, gv := range gVisorNames {
			if slices.Contains(r.Names, linux) && !slices.Contains(r.Names, gv) {
				r.Names = append(r.Names, gv)
			}
		}
	}
}
