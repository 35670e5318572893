package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	host "github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/isolation/container"
)

var setupCommand = &cli.Command{
	Name:      "setup",
	Usage:     "prepare this host once, as root, for an unprivileged user of sandboxed or for runtime runsc (--undo reverses it)",
	ArgsUsage: " ",
	Description: `sudo sandboxed setup --user NAME makes, only where missing: 65536 subordinate uids and gids for NAME
in /etc/subuid and /etc/subgid; on cgroup v1, the cgroup subtree sandboxed/user-UID delegated to NAME in the
memory, pids, cpu and freezer hierarchies (and, where systemd is the init, a unit that makes it again at boot);
where AppArmor restricts unprivileged user namespaces, a profile that lets this binary make them. Nothing else.
It prints each change; a second run prints "nothing to change". --undo removes exactly what setup added, as
recorded in /var/lib/sandboxed/setup/NAME.json.

sudo sandboxed setup --runtime runsc registers gVisor's runsc with the local Docker engine: it adds
"runtimes": {"runsc": {"path": ..., "runtimeArgs": ["--host-uds=open", "--network=none"]}} to /etc/docker/daemon.json, keeping
every other key, writes the file atomically and makes dockerd reload it (systemctl reload docker, else SIGHUP;
running containers keep running). --undo removes exactly that entry, as recorded in
/var/lib/sandboxed/setup/runtime/runsc.json.

sandboxed setup --seccomp-profile PATH writes the seccomp profile of the Kubernetes backend's pods to PATH: the
container tier's (Docker's default for a container without capabilities, naming the syscalls gVisor knows by
other names both ways). Write it on every node into the kubelet's seccomp directory, e.g.
/var/lib/kubelet/seccomp/sandboxed.json, and run with --kube-seccomp-profile sandboxed.json (or advertise it in
the ConfigMap kube-system/sandboxed-cluster, key seccompProfile). PATH's directories are made if missing (the
kubelet's seccomp directory often is); the file is PATH's alone, and --undo leaves it. "-" prints it.`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "user", Usage: "the unprivileged user to prepare"},
		&cli.StringFlag{Name: "runtime", Usage: "the OCI runtime to register with the Docker engine (runsc)"},
		&cli.StringFlag{Name: "seccomp-profile", Usage: "write the Kubernetes pods' seccomp profile to `PATH` (- prints it)"},
		&cli.BoolFlag{Name: "undo", Usage: "remove what setup added for the user"},
		&cli.BoolFlag{Name: "cgroups-only", Usage: "only make the delegated cgroup v1 directories again (what a reboot removes)"},
		&cli.BoolFlag{Name: "json", Usage: "print the changes and notes as JSON"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageError(fmt.Errorf("setup takes no arguments, got %q (see 'sandboxed setup --help')", c.Args().First()))
		}
		if c.Bool("undo") && c.Bool("cgroups-only") {
			return usageError(fmt.Errorf("setup: --undo and --cgroups-only do not go together"))
		}
		if c.IsSet("seccomp-profile") {
			return setupSeccompProfile(c)
		}
		name, rt := c.String("user"), c.String("runtime")
		if (name == "") == (rt == "") {
			return usageError(fmt.Errorf("setup: name either --user NAME or --runtime runsc (see 'sandboxed setup --help')"))
		}
		if rt != "" && c.Bool("cgroups-only") {
			return usageError(fmt.Errorf("setup: --cgroups-only goes with --user, not --runtime"))
		}
		cmdline := "sandboxed setup --user " + name
		if rt != "" {
			cmdline = "sandboxed setup --runtime " + rt
		}
		if c.Bool("undo") {
			cmdline += " --undo"
		}
		if err := host.RequireRoot(cmdline); err != nil {
			return err
		}
		sys, err := host.Local()
		if err != nil {
			return err
		}
		var rep *host.Report
		if rt != "" && c.Bool("undo") {
			rep, err = sys.UndoRuntime(c.Context, rt)
		} else if rt != "" {
			rep, err = sys.SetupRuntime(c.Context, rt)
		} else if c.Bool("undo") {
			rep, err = sys.Undo(c.Context, name)
		} else {
			rep, err = sys.Setup(c.Context, host.SetupOptions{User: name, CgroupsOnly: c.Bool("cgroups-only")})
		}
		if rep == nil {
			return err
		}
		if c.Bool("json") {
			if rep.Changes == nil {
				rep.Changes = []string{}
			}
			if rep.Notes == nil {
				rep.Notes = []string{}
			}
			if werr := writeJSON(c.App.Writer, rep); werr != nil {
				return werr
			}
			return err
		}
		for _, ch := range rep.Changes {
			fmt.Fprintln(c.App.Writer, ch)
		}
		if len(rep.Changes) == 0 && err == nil {
			fmt.Fprintln(c.App.Writer, "nothing to change")
		}
		for _, n := range rep.Notes {
			fmt.Fprintln(c.App.ErrWriter, "note:", n)
		}
		return err
	},
}

// setupSeccompProfile writes (or prints) the Kubernetes pods' seccomp
// profile: setup --seccomp-profile PATH.
func setupSeccompProfile(c *cli.Context) error {
	for _, f := range []string{"user", "runtime", "undo", "cgroups-only"} {
		if c.IsSet(f) {
			return usageError(fmt.Errorf("setup: --seccomp-profile goes alone, not with --%s", f))
		}
	}
	path := c.String("seccomp-profile")
	if path == "" {
		return usageError(fmt.Errorf("setup: --seccomp-profile needs a PATH (- prints the profile)"))
	}
	prof, err := container.NodeProfile()
	if err != nil {
		return err
	}
	if path == "-" {
		_, err := c.App.Writer.Write(prof)
		return err
	}
	wrote, err := host.InstallFile(path, prof)
	if err != nil {
		return err
	}
	rep := &host.Report{}
	if wrote {
		rep.Changes = []string{"wrote the seccomp profile " + path}
	}
	if c.Bool("json") {
		if rep.Changes == nil {
			rep.Changes = []string{}
		}
		rep.Notes = []string{}
		return writeJSON(c.App.Writer, rep)
	}
	for _, ch := range rep.Changes {
		fmt.Fprintln(c.App.Writer, ch)
	}
	if !wrote {
		fmt.Fprintln(c.App.Writer, "nothing to change")
	}
	return nil
}
