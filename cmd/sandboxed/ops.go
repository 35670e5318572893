package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/internal/xdg"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/host"
	"github.com/sandboxed-dev/sandboxed/isolation/initbin"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
)

var gcCommand = &cli.Command{
	Name:  "gc",
	Usage: "remove what crashed runs left behind (processes, cgroups, containers, mounts, sockets, run dirs), and other builds' cached inits",
	Description: `Every host resource of a run is labelled with its run id. A run in progress holds a lock on a
file in its run directory, so gc only reaps runs whose controller is gone. A run gc cannot judge
(its run directory is not here: another host, container, user or runtime directory) is left alone
and listed. Every 'sandboxed run' also does this as it starts.`,
	// The cluster flags say which cluster's pods to reap too.
	Flags: append([]cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print what was removed as JSON"}}, clusterFlags()...),
	Action: func(c *cli.Context) error {
		rep, err := newController().GC(c.Context)
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

// check is one line of `sandboxed doctor`.
type check struct {
	Tier   string `json:"tier"`
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

var doctorCommand = &cli.Command{
	Name:  "doctor",
	Usage: "say what this host can enforce, per isolation tier, and how to fix what is missing",
	Flags: append([]cli.Flag{formatFlag("table", "table", "json")}, clusterFlags()...),
	Action: func(c *cli.Context) error {
		format, err := checkFormat(c, "table", "json")
		if err != nil {
			return err
		}
		checks := hostChecks(c)
		checks = append(checks, processChecks(c)...)
		checks = append(checks, containerChecks(c)...)
		if cluster.backend == isolation.BackendKubernetes {
			checks = append(checks, kubernetesChecks(c)...)
		}
		if format == "json" {
			return writeJSON(c.App.Writer, checks)
		}
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
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", ch.Tier, ch.Check, st, d)
		}
		return w.Flush()
	},
}

func processChecks(c *cli.Context) []check {
	var out []check
	for _, pc := range process.Probe(c.Context).Checks() {
		out = append(out, check{Tier: "process", Check: pc.Name, OK: pc.OK, Detail: pc.Detail, Fix: pc.Fix})
	}
	return append(out, initCheck())
}

// hostChecks say what this user can have: root or rootless, user
// namespaces, subordinate ids, delegated cgroups, Landlock, and what an
// enclosing container allows.
func hostChecks(c *cli.Context) []check {
	sys, err := host.Local()
	if err != nil {
		return []check{{Tier: "all", Check: "host", OK: false, Detail: err.Error()}}
	}
	var out []check
	for _, hc := range sys.ProbeUser(c.Context, []string{"version"}).Checks() {
		out = append(out, check{Tier: hc.Tier, Check: hc.Name, OK: hc.OK, Detail: hc.Detail, Fix: hc.Fix})
	}
	return out
}

// initCheck says how sandboxes start their init: the small one this build
// carries, from the cache or a memory file, or the whole CLI. Each works;
// they differ in start-up time.
func initCheck() check {
	ch := check{Tier: "all", Check: "sandbox init", OK: true}
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
