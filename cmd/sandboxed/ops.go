package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	host "github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/internal/xdg"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/initbin"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

var gcCommand = &cli.Command{
	Name:  "gc",
	Usage: "remove what crashed runs left behind (processes, cgroups, containers, mounts, sockets, run dirs), and other builds' cached inits",
	Description: `Every host resource of a run is labelled with its run id. A run in progress holds a lock on a
file in its run directory, so gc only reaps runs whose controller is gone. A run gc cannot judge
(its run directory is not here: another host, container, user or runtime directory) is left alone
and listed. Every 'sandboxed run' also does this as it starts. gc also removes the change records
of runs (what 'sandboxed undo' reads) older than the policy's undo.keep, then the oldest while
they hold more than undo.max-total, and the unfinished records and review working copies of
runs that died (a day old, not held live).`,
	// The cluster flags say which cluster's pods to reap too.
	Flags: append([]cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print what was removed as JSON"}, copyFlag(policyFlag)}, clusterFlags()...),
	Action: func(c *cli.Context) error {
		ctl := newController()
		rep, err := ctl.GC(c.Context)
		// Change records (undo, review) past the policy's undo.keep or
		// over its undo.max-total.
		if pol, _, perr := loadPolicy(c); perr != nil {
			err = errors.Join(err, perr)
		} else {
			removed, rerr := sandbox.ReapChanges(sandbox.StateDir(), pol.UndoBounds(), time.Now(), ctl.Live)
			rep.Removed = append(rep.Removed, removed...)
			err = errors.Join(err, rerr)
		}
		if sock := staleServeSocket(); sock != "" {
			rep.Removed = append(rep.Removed, "socket of a server that is gone "+sock)
		}
		if dir, derr := xdg.CacheDir(); derr == nil {
			stale, serr := initbin.RemoveStale(dir)
			for _, s := range stale {
				rep.Removed = append(rep.Removed, "init binary of another build "+s)
			}
			err = errors.Join(err, serr)
		}
		if c.Bool("json") {
			if werr := writeJSON(c.App.Writer, rep); werr != nil {
				return werr
			}
		} else {
			for _, r := range rep.Removed {
				fmt.Fprintf(c.App.Writer, "removed %s\n", r)
			}
			for _, u := range rep.LeftAlone {
				fmt.Fprintf(c.App.Writer, "left alone run %s: cannot tell whether it is live: %s\n", u.RunID, u.Reason)
			}
			if len(rep.Removed) == 0 && len(rep.LeftAlone) == 0 {
				fmt.Fprintln(c.App.ErrWriter, "nothing to remove")
			}
		}
		return err
	},
}

// check is one line of `sandboxed doctor`: every probe's one type.
type check = host.Check

var doctorCommand = &cli.Command{
	Name:  "doctor",
	Usage: "start a sandbox in each isolation tier and say what happened, what this host can enforce, and how to fix what is missing",
	Description: `For each tier of this build doctor runs a trivial tool (echo ok), as same-as-user and as
reduced, through the same policy, planning and backend as 'sandboxed run --isolation TIER', and
reports what actually happened; a tier that needs approval (none) is approved for the trial and
says so. Inside a container a failure carries the fix for it: the 'docker run' flags or the pod
securityContext that would let the tier run. The lines after the trials are what doctor found.
It exits 1 when no tier could run the tool.`,
	Flags: append([]cli.Flag{formatFlag("table", "table", "json"), policyFlag}, clusterFlags()...),
	Action: func(c *cli.Context) error {
		format, err := checkFormat(c, "table", "json")
		if err != nil {
			return err
		}
		trials, anyOK := trialChecks(c)
		checks := append(trials, hostChecks(c)...)
		checks = append(checks, processChecks(c)...)
		checks = append(checks, containerChecks(c)...)
		if cluster.backend == isolation.BackendKubernetes {
			checks = append(checks, kubernetesChecks(c)...)
		}
		if format == "json" {
			err = writeJSON(c.App.Writer, checks)
		} else {
			w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TIER\tCHECK\tSTATUS\tDETAIL")
			for _, ch := range checks {
				st := "ok"
				if !ch.OK {
					st = "MISSING"
				}
				d := ch.Detail
				if ch.Fix != "" {
					d = strings.TrimSpace(d + " — fix: " + ch.Fix)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", ch.Tier, ch.Name, st, strings.Join(strings.Fields(d), " "))
			}
			err = w.Flush()
		}
		if err == nil && !anyOK {
			fmt.Fprintln(c.App.ErrWriter, "sandboxed: no isolation tier can run a tool here; see the fixes above")
			return exitWith(exitFailure)
		}
		return err
	},
}

// trialPrivileges are the execution privileges doctor tries in each tier.
var trialPrivileges = []string{"same-as-user", "reduced"}

// trialChecks starts a trivial sandbox in each local tier of this build
// and reports what happened; anyOK is whether one of them ran the tool.
// The trials write no run record and no audit line.
func trialChecks(c *cli.Context) (out []check, anyOK bool) {
	pol, _, err := loadPolicy(c)
	if err != nil {
		return []check{{Tier: "all", Name: "policy", OK: false, Detail: err.Error(), Fix: "fix the policy file"}}, false
	}
	ctl := newController()
	ctl.StateDir = ""
	for _, tier := range trialTiers(ctl.Backends) {
		for _, priv := range trialPrivileges {
			tr := ctl.Trial(c.Context, tier, priv, pol)
			ch := check{Tier: string(tier), Name: "runs a tool (" + priv + ")", OK: tr.OK}
			r := tr.Result
			switch {
			case tr.OK:
				ch.Detail = fmt.Sprintf("started a sandbox and ran echo ok (%d ms)", r.DurationMS)
			case r.Status == sandbox.StatusOK && r.Isolation != string(tier):
				ch.Detail = fmt.Sprintf("a tool asking for this tier runs in the %s tier here: %s", r.Isolation, strings.Join(r.Notes, "; "))
				ch.Fix = "the policy decides where a tool may run (sandboxed policy show)"
			case r.Error != nil:
				ch.Detail = fmt.Sprintf("%s: %s", r.Status, r.Error.Message)
				ch.Fix = r.Error.Hint
			default:
				ch.Detail = fmt.Sprintf("%s, exit %d: %s", r.Status, r.ExitCode, strings.TrimSpace(r.Stdout+" "+r.Stderr))
			}
			if tier == isolation.TierNone {
				ch.Detail += " (as an installed tool: the built-in policy raises a tool given as a file path to the process tier)"
			}
			if len(tr.Approvals) > 0 {
				ch.Detail += " (with --approve " + strings.Join(tr.Approvals, ",") + ")"
			}
			anyOK = anyOK || tr.OK
			out = append(out, ch)
		}
	}
	return out, anyOK
}

// trialTiers are the tiers of bs doctor tries, in the order it shows
// them: the local tiers (not a cluster backend), the default first, none
// last.
func trialTiers(bs map[isolation.Tier]isolation.Backend) []isolation.Tier {
	order := map[isolation.Tier]int{isolation.TierProcess: 0, isolation.TierContainer: 1, isolation.TierNone: 9}
	var ts []isolation.Tier
	for t := range bs {
		if string(t) != isolation.BackendKubernetes {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool {
		oi, ok := order[ts[i]]
		if !ok {
			oi = 5
		}
		oj, ok := order[ts[j]]
		if !ok {
			oj = 5
		}
		if oi != oj {
			return oi < oj
		}
		return ts[i] < ts[j]
	})
	return ts
}

func processChecks(c *cli.Context) []check {
	return append(process.Probe(c.Context).Checks(), initCheck())
}

// hostChecks say what this user can have: root or rootless, user
// namespaces, subordinate ids, delegated cgroups, Landlock, and what an
// enclosing container allows.
func hostChecks(c *cli.Context) []check {
	sys, err := host.Local()
	if err != nil {
		return []check{{Tier: "all", Name: "host", OK: false, Detail: err.Error()}}
	}
	return sys.ProbeUser(c.Context, []string{"version"}).Checks()
}

// initCheck says how sandboxes start their init: the small one this build
// carries, from the cache or a memory file, or the whole CLI. Each works;
// they differ in start-up time.
func initCheck() check {
	ch := check{Tier: "all", Name: "sandbox init", OK: true}
	if !initbin.Embedded() {
		ch.Detail = "this build carries no separate init: every sandbox starts the whole sandboxed binary (a few ms slower)"
		ch.Fix = "build with make build"
		return ch
	}
	dir, err := xdg.CacheDir()
	if err == nil {
		var p string
		if p, err = initbin.Cached(dir); err == nil {
			ch.Detail = "the small init, kept at " + p
			return ch
		}
	}
	ch.Detail = "the small init, copied into a sealed memory file for each sandbox (~1 ms), because it cannot be kept in the cache: " + err.Error()
	return ch
}

// copyFlag is a flag of its own for one more command.
func copyFlag(f *cli.StringFlag) *cli.StringFlag {
	cp := *f
	return &cp
}
