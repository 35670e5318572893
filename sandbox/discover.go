package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxed-dev/sandboxed/internal/privilege"
	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/tool"
)

// ProbeLimits bound every discovery probe. A probe runs an untrusted
// script, so it gets the closed defaults and less: reduced privilege, no
// network, the script's directory read-only, a short timeout.
type ProbeLimits struct {
	Timeout     time.Duration
	MemoryBytes int64
	Pids        int64
	OutputBytes int64 // per stream
}

// DefaultProbeLimits are the limits `sandboxed discover` uses.
var DefaultProbeLimits = ProbeLimits{
	Timeout:     5 * time.Second,
	MemoryBytes: 256 << 20,
	Pids:        64,
	OutputBytes: 1 << 20,
}

// probeTmpfs is the size of /tmp in a probe's sandbox.
const probeTmpfs = 16 << 20

// ProbeAccess is what a probe may see beyond the script's own reads
// (tool.Script.ReadPaths): the filesystem grants given to discover, as
// resolved host paths bound at their own paths.
type ProbeAccess struct {
	Read  []string
	Write []string // only with the user's approval (discover --approve write)
}

// ProbePlan is the plan of one probe of s: the process tier, reduced
// privilege, no network, what s reads (its folder, so the modules beside
// it import, or the script alone where the folder is a home or shared
// directory; an interpreter's environment) bound read-only at its own
// path, acc's grants, the script's folder as the working directory, lim's
// limits, its host directory under runtimeDir. It is data only.
func ProbePlan(runID, runtimeDir string, s tool.Script, lim ProbeLimits, acc ProbeAccess) (*isolation.Plan, error) {
	dir := filepath.Dir(s.Path)
	env := []string{"HOME=/tmp", "LANG=C.UTF-8", "PATH=" + DefaultPath}
	opts := []SpecOpt{
		WithMemory(lim.MemoryBytes),
		WithPids(lim.Pids + initPids(isolation.TierProcess, false, true)),
		WithTmpfs(probeTmpfs),
		WithEnv(env),
	}
	for _, r := range s.ReadPaths() {
		// A probe of an untrusted script in ~ must not read ~/.ssh and
		// report it in its description, which is written into definitions
		// served to agents: tool.FindScripts shows such a script alone.
		opts = append(opts, WithReadBind(r, r))
	}
	for _, r := range acc.Read {
		opts = append(opts, WithReadBind(r, r))
	}
	for _, w := range acc.Write {
		opts = append(opts, WithWriteBind(w, w))
	}
	opts = append(opts, WithCwd(dir), WithAnnotation(isolation.AnnotationTool, "discover-"+tool.BaseName(s.File)))
	spec, err := NewSpec(runID, privilege.Reduced, opts...)
	if err != nil {
		return nil, fmt.Errorf("plan probe of %s: %w", s.File, err)
	}
	uid, gid := invokingUser()
	return &isolation.Plan{
		RunID:      runID,
		GrantOwner: &isolation.ID{UID: uid, GID: gid},
		Tool:       "discover-" + tool.BaseName(s.File),
		Tier:       isolation.TierProcess,
		Privilege:  privilege.Reduced,
		Spec:       spec,
		HostDir:    HostDir(runtimeDir, runID),
		Limits: isolation.Limits{
			MemoryBytes: lim.MemoryBytes,
			Pids:        lim.Pids,
			TmpfsBytes:  probeTmpfs,
			Timeout:     lim.Timeout,
			KillGrace:   500 * time.Millisecond,
		},
	}, nil
}

// Probe runs one probe of s in a sandbox of its own and reports what it
// printed. It never runs anything on the host.
//
// A sandbox that fails to start, or fails under the probe, says nothing
// about the script, so the probe is tried again, up to probeAttempts
// times in all.
func (c *Controller) Probe(ctx context.Context, s tool.Script, k tool.ProbeKind, lim ProbeLimits, acc ProbeAccess) tool.ProbeOutput {
	var out tool.ProbeOutput
	for i := 0; i < probeAttempts; i++ {
		var started bool
		out, started = c.probeOnce(ctx, s, k, lim, acc)
		if started || ctx.Err() != nil {
			break
		}
	}
	return out
}

// probeAttempts bounds the tries of a probe whose sandbox did not start.
const probeAttempts = 3

func (c *Controller) probeOnce(ctx context.Context, s tool.Script, k tool.ProbeKind, lim ProbeLimits, acc ProbeAccess) (tool.ProbeOutput, bool) {
	out := tool.ProbeOutput{Kind: k}
	runID := NewRunID(time.Now())
	plan, err := ProbePlan(runID, c.RuntimeDir, s, lim, acc)
	if err != nil {
		out.Error, out.ExitCode = err.Error(), ExitSandbox
		return out, true // planning is deterministic: no retry
	}
	argv := append(append([]string(nil), s.Argv...), tool.ProbeArg(k))
	job := &Job{Plan: plan, Steps: []JobStep{{
		Name:        string(k),
		Cmd:         isolation.Command{Name: string(k), Args: argv, Env: plan.Spec.Process.Env, Cwd: plan.Spec.Process.Cwd},
		BufferLimit: lim.OutputBytes,
	}}}
	res, _ := c.Execute(ctx, job)
	out.ExitCode, out.Stdout, out.Stderr, out.DurationMS = res.ExitCode, res.Stdout, res.Stderr, res.DurationMS
	if len(res.Steps) == 1 && res.Steps[0].Status == StatusError && res.Status != StatusTimeout {
		// The sandbox failed under the command (its init died): nothing
		// was learnt about the script.
		out.Error = "the sandbox failed while the probe ran"
		return out, false
	}
	switch res.Status {
	case StatusTimeout:
		out.TimedOut = true
	case StatusOOM:
		out.Error = "killed by the memory limit of " + units.FormatSize(lim.MemoryBytes)
	case StatusError:
		out.Error = "sandbox failed"
		if res.Error != nil {
			out.Error = res.Error.Message
			if res.Error.Code == CodeInitFailed && len(res.Steps) == 0 {
				return out, false
			}
		}
	}
	return out, true
}

// DiscoverOptions steer DiscoverDir.
type DiscoverOptions struct {
	Limits ProbeLimits
	// Parallel is how many files are probed at a time.
	Parallel int
	// Scan says how deep to search and which interpreter to run scripts with.
	Scan tool.ScanOptions
	// Grants are the permissions discover --grant adds to every
	// definition. Probes get their filesystem paths that exist: read-only,
	// and a write grant writable only with ApproveWrite (a probe runs a
	// script nobody has reviewed yet).
	Grants       []string
	ApproveWrite bool
	// Cwd and Home resolve the grants' relative and ~ paths.
	Cwd, Home string
}

// DiscoverDir finds the self-describing executables under dir and probes
// each inside sandboxes (tool.FindScripts, tool.Discover). Files are
// probed concurrently, at most o.Parallel at a time; the result is in file
// order, files passed over by the scan included.
func (c *Controller) DiscoverDir(ctx context.Context, dir string, o DiscoverOptions) ([]*tool.Discovery, error) {
	acc, err := probeAccess(o)
	if err != nil {
		return nil, err
	}
	scripts, skipped, err := tool.FindScripts(dir, o.Scan)
	if err != nil {
		return nil, err
	}
	parallel := max(o.Parallel, 1)
	if len(scripts) > 0 {
		// A host that cannot build the sandbox at all is one error, not
		// one failed probe per file.
		if err := c.checkProbes(ctx, scripts[0], o.Limits, acc); err != nil {
			return nil, err
		}
	}
	found := make([]*tool.Discovery, len(scripts))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, s := range scripts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			found[i] = tool.Discover(s, func(k tool.ProbeKind) tool.ProbeOutput {
				return c.Probe(ctx, s, k, o.Limits, acc)
			})
		}()
	}
	wg.Wait()
	all := append(found, skipped...)
	sortDiscoveries(all)
	markDuplicates(all)
	return all, ctx.Err()
}

// probeAccess resolves the filesystem grants of o for probes: paths that
// exist, symlinks resolved; a write grant is read-only unless approved.
func probeAccess(o DiscoverOptions) (ProbeAccess, error) {
	var acc ProbeAccess
	if len(o.Grants) == 0 {
		return acc, nil
	}
	grants, err := permissions.Resolve(o.Grants, o.Cwd, o.Home)
	if err != nil {
		return acc, fmt.Errorf("discover: %w", err)
	}
	for _, g := range grants {
		if g.Mount == nil {
			continue
		}
		real, err := filepath.EvalSymlinks(g.Mount.HostPath)
		if err != nil {
			if !g.Mount.Write {
				return acc, fmt.Errorf("discover: --grant %s: %s does not exist; a read grant needs an existing path", g.Permission, g.Mount.HostPath)
			}
			continue // made when a tool first runs, not by a probe
		}
		if g.Mount.Write && o.ApproveWrite {
			acc.Write = append(acc.Write, real)
		} else {
			acc.Read = append(acc.Read, real)
		}
	}
	return acc, nil
}

// DiscoveredGrantAccess says how a discovered tool, which runs reduced in
// the process tier, would reach each write grant of o.Grants on this
// host (isolation.ReducedGrantAccess), and which it could not write.
// Grants that do not exist yet (made when a tool first runs) are not
// judged.
func DiscoveredGrantAccess(o DiscoverOptions) []isolation.GrantAccess {
	grants, err := permissions.Resolve(o.Grants, o.Cwd, o.Home)
	if err != nil {
		return nil
	}
	uid, gid := invokingUser()
	p := &isolation.Plan{Tier: isolation.TierProcess, Privilege: privilege.Reduced,
		GrantOwner: &isolation.ID{UID: uid, GID: gid}, Spec: &specs.Spec{}}
	for _, g := range grants {
		if g.Mount == nil || !g.Mount.Write {
			continue
		}
		if real, err := filepath.EvalSymlinks(g.Mount.HostPath); err == nil {
			p.Spec.Mounts = append(p.Spec.Mounts, specs.Mount{Destination: real, Type: "bind", Source: real, Options: []string{"bind", "rw"}})
		}
	}
	return isolation.ReducedGrantAccess(p, os.Geteuid(), os.Stat)
}

// ErrNoProbeSandbox: the host cannot build the sandbox probes run in.
var ErrNoProbeSandbox = errors.New("cannot sandbox discovery probes")

func (c *Controller) checkProbes(ctx context.Context, s tool.Script, lim ProbeLimits, acc ProbeAccess) error {
	b := c.Backends[isolation.TierProcess]
	if b == nil {
		return fmt.Errorf("discover: the process tier is not available in this build: %w", ErrNoProbeSandbox)
	}
	plan, err := ProbePlan(NewRunID(time.Now()), c.RuntimeDir, s, lim, acc)
	if err != nil {
		return err
	}
	if err := b.Check(ctx, plan); err != nil {
		return fmt.Errorf("discover: probes run in the process tier, which this host cannot build (%v): %w", err, ErrNoProbeSandbox)
	}
	return nil
}

func sortDiscoveries(ds []*tool.Discovery) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].File < ds[j-1].File; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// markDuplicates skips a file whose tool names an earlier file already
// registered: two tools of one name cannot live in one scope. The reason
// names both files and both tools as the scripts call them ("_ls" and
// "ls" both become the tool ls).
func markDuplicates(ds []*tool.Discovery) {
	type owner struct{ file, as string }
	owners := map[string]owner{}
	for _, d := range ds {
		if d.Result != tool.ResultRegistered {
			continue
		}
		for _, def := range d.Tools {
			if o, ok := owners[def.Name]; ok {
				d.Result, d.Tools, d.Names = tool.ResultSkipped, nil, []string{}
				d.Why = fmt.Sprintf("tool name %s (%s of %s) is already taken by %s of %s; rename one of the scripts", def.Name, def.ExposedName(), d.File, o.as, o.file)
				break
			}
		}
		for _, def := range d.Tools {
			owners[def.Name] = owner{d.File, def.ExposedName()}
		}
	}
}
