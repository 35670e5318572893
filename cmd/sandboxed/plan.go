package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/internal/units"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// printPlan serves --dry-run and --dump-plan: plan the run, print it, run
// nothing.
func printPlan(c *cli.Context, req *sandbox.Request) error {
	p, err := newController().Prepare(req)
	if err != nil {
		var pe *sandbox.PrepareError
		if errors.As(err, &pe) {
			if c.Bool("json") {
				writeJSON(c.App.Writer, pe.Result)
			} else {
				fmt.Fprintf(c.App.ErrWriter, "sandboxed: %s: %s\n", pe.Result.Status, pe.Result.Error.Message)
				if newHint(pe.Result.Error.Message, pe.Result.Error.Hint) {
					fmt.Fprintln(c.App.ErrWriter, indent(pe.Result.Error.Hint))
				}
			}
			return exitWith(pe.Result.ProcessExitCode())
		}
		return err
	}
	if c.Bool("dump-plan") {
		return writeJSON(c.App.Writer, struct {
			Plan     any      `json:"plan"`
			Steps    any      `json:"steps"`
			Decision any      `json:"decision"`
			Notes    []string `json:"notes,omitempty"`
		}{p.Plan, dryRunSteps(p), p.Decision, p.Notes})
	}
	if c.Bool("json") {
		return writeJSON(c.App.Writer, dryRunSteps(p))
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	pl := p.Plan
	fmt.Fprintf(w, "tool:\t%s %s\n", pl.Tool, req.Def.Version)
	who, tmp := planIdentity(pl)
	fmt.Fprintf(w, "isolation:\t%s (privilege %s, %s)\n", pl.Tier, pl.Privilege, who)
	if pl.Image != "" {
		fmt.Fprintf(w, "image:\t%s\n", pl.Image)
	}
	cpus := ""
	if pl.Limits.CPUs > 0 {
		cpus = ", cpus " + strconv.FormatFloat(pl.Limits.CPUs, 'f', -1, 64)
	}
	fmt.Fprintf(w, "limits:\tmemory %s, pids %d%s, timeout %s, %s\n", units.FormatSize(pl.Limits.MemoryBytes), pl.Limits.Pids,
		cpus, durationOrNone(pl.Limits.Timeout), tmp)
	for _, m := range pl.Spec.Mounts {
		if m.Type == "bind" {
			fmt.Fprintf(w, "mount:\t%s -> %s (%s)\n", m.Source, m.Destination, strings.Join(m.Options, ","))
		}
	}
	if len(p.Grants) == 0 {
		fmt.Fprintf(w, "grants:\tnone (no host files, no network)\n")
	}
	for _, g := range p.Grants {
		fmt.Fprintf(w, "grant:\t%s\n", g.Describe())
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note:\t%s\n", n)
	}
	w.Flush()
	for _, s := range dryRunSteps(p) {
		fmt.Fprintf(c.App.Writer, "\nstep %s:\n  command: %s\n  working directory: %s\n", s.Name, s.Command, s.Cwd)
		if s.Stdin != "" {
			fmt.Fprintf(c.App.Writer, "  stdin: %q\n", s.Stdin)
		}
		if s.Timeout != "" {
			fmt.Fprintf(c.App.Writer, "  timeout: %s\n", s.Timeout)
		}
		fmt.Fprintf(c.App.Writer, "  environment:\n")
		for _, e := range s.Env {
			fmt.Fprintf(c.App.Writer, "    %s\n", e)
		}
	}
	return nil
}

// planIdentity says who the plan's tool runs as (the spec's user, in every
// tier: the landlock tier's, as root, is a uid of the run's own) and what
// holds its temporary files, as its tier does: the landlock tier has no
// /tmp of its own, only RLIMIT_FSIZE on each file; the none tier uses the
// host's /tmp.
func planIdentity(pl *isolation.Plan) (who, tmp string) {
	u := pl.Spec.Process.User
	who = fmt.Sprintf("uid %d gid %d", u.UID, u.GID)
	tmp = "/tmp " + units.FormatSize(pl.Limits.TmpfsBytes)
	switch pl.Tier {
	case isolation.TierLandlock:
		tmp = "files up to " + units.FormatSize(pl.Limits.TmpfsBytes) + " each (no /tmp of its own: a scratch directory on the host's)"
	case isolation.TierNone:
		tmp = "the host's /tmp"
	}
	return who, tmp
}

type dryStep struct {
	Name    string   `json:"name"`
	Argv    []string `json:"argv"`
	Command string   `json:"command"`
	Cwd     string   `json:"cwd"`
	Env     []string `json:"env"`
	Stdin   string   `json:"stdin,omitempty"`
	Timeout string   `json:"timeout,omitempty"`
}

func dryRunSteps(p *sandbox.Prepared) []dryStep {
	var out []dryStep
	for i, s := range p.Steps {
		env := append([]string(nil), s.Cmd.Env...)
		sort.Strings(env)
		ds := dryStep{Name: s.Name, Argv: s.Cmd.Args, Cwd: s.Cmd.Cwd, Env: env, Stdin: string(s.Stdin)}
		if i < len(p.Bound.Steps) {
			ds.Command = p.Bound.Steps[i].MaskedCommand
		}
		if s.Timeout > 0 {
			ds.Timeout = s.Timeout.String()
		}
		out = append(out, ds)
	}
	return out
}

func durationOrNone(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return d.String()
}
