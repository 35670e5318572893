package main

import (
	"context"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/images"
	"github.com/sandboxed-dev/sandboxed/internal/dockerapi"
	host "github.com/sandboxed-dev/sandboxed/internal/hostsetup"
	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/container"
	"github.com/sandboxed-dev/sandboxed/isolation/landlock"
	"github.com/sandboxed-dev/sandboxed/isolation/none"
	"github.com/sandboxed-dev/sandboxed/isolation/process"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// backends are the isolation tiers of this build. A tier whose backend
// cannot even be set up (no Docker client configuration) is still present:
// it refuses every plan with the reason, so a run never falls back to
// another tier.
func backends() map[isolation.Tier]isolation.Backend {
	m := map[isolation.Tier]isolation.Backend{
		isolation.TierProcess:  process.New(),
		isolation.TierNone:     none.New(),
		isolation.TierLandlock: landlock.New(),
	}
	// Runs whose plan names the Kubernetes backend go there (a pod each).
	m[isolation.Tier(isolation.BackendKubernetes)] = kubernetesBackend()
	if cb, err := container.New(); err == nil {
		m[isolation.TierContainer] = cb
	} else {
		m[isolation.TierContainer] = refusing{tier: isolation.TierContainer, err: err}
	}
	return m
}

// refusing is a backend that refuses every plan with err.
type refusing struct {
	tier isolation.Tier
	err  error
}

func (r refusing) Tier() isolation.Tier                         { return r.tier }
func (r refusing) Check(context.Context, *isolation.Plan) error { return r.err }
func (r refusing) Start(context.Context, *isolation.Plan) (isolation.Sandbox, error) {
	return nil, r.err
}
func (r refusing) GC(context.Context, func(string) bool) ([]string, error) { return nil, nil }

func newController() *sandbox.Controller {
	bs := backends()
	return &sandbox.Controller{
		StateDir:   sandbox.StateDir(),
		RuntimeDir: sandbox.RuntimeDir(),
		Backends:   bs,
		EnvFix:     func(tier isolation.Tier) string { return envFix(tier, bs) },
	}
}

// envFix is how to let tier run in the environment sandboxed is in
// (host.Container.Fix): the fix a run that could not start and doctor's
// trial of the tier both give.
func envFix(tier isolation.Tier, bs map[isolation.Tier]isolation.Backend) string {
	sys, err := host.Local()
	if err != nil {
		return ""
	}
	var tiers []string
	for t := range bs {
		tiers = append(tiers, string(t))
	}
	return sys.Environment().Fix(string(tier), os.Geteuid() == 0, tiers)
}

// containerChecks reports the container tier for doctor.
func containerChecks(c *cli.Context) []check {
	res, err := container.Probe(c.Context, images.DefaultImage)
	if err != nil {
		return []check{{Tier: "container", Name: "docker engine", OK: false, Detail: err.Error(),
			Fix: dockerapi.EngineFix(err)}}
	}
	return res.Checks()
}
