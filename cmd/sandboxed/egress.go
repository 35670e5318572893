package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// testHostsEnv names a hosts file ("NAME ADDRESS" lines) that replaces the
// host's resolver in the egress proxy. It exists for the end-to-end tests,
// whose test hosts have no DNS: it is read from sandboxed's own
// environment, which the operator sets and no tool definition, parameter or
// run flag can reach.
const testHostsEnv = "SANDBOXED_TEST_HOSTS_FILE"

type egressStarter struct {
	resolver egress.Resolver
	err      error
}

func newEgressStarter() sandbox.EgressStarter {
	s := &egressStarter{}
	if f := os.Getenv(testHostsEnv); f != "" {
		s.resolver, s.err = egress.LoadHostsFile(f)
	}
	return s
}

// Start starts the proxy the plan's egress section describes.
func (s *egressStarter) Start(ctx context.Context, e *isolation.Egress, secrets *sandbox.RunSecrets) (func() []sandbox.EgressEntry, error) {
	if s.err != nil {
		return nil, fmt.Errorf("%s: %w", testHostsEnv, s.err)
	}
	rules := egress.Rules{Allow: e.Allow, Deny: e.Deny, LocalhostPorts: e.LocalhostPorts}
	cfg := egress.Config{SocketPath: e.ProxySocket, Rules: rules, Resolver: s.resolver}
	if len(e.Credentials) > 0 || len(e.HTTP) > 0 {
		if secrets == nil || secrets.CA == nil {
			return nil, fmt.Errorf("the run has credentials or HTTP rules but no CA")
		}
		cfg.CA = secrets.CA
		var err error
		if cfg.UpstreamRoots, err = egress.UpstreamRoots(e.ExtraCA...); err != nil {
			return nil, fmt.Errorf("network.extra-ca: %w", err)
		}
		for _, c := range e.Credentials {
			cfg.Credentials = append(cfg.Credentials, egress.Credential{Name: c.Name, StandIn: c.StandIn, Value: secrets.Values[c.Name], Hosts: c.Hosts})
		}
		cfg.HTTPRules = slices.Clone(e.HTTP) // the proxy normalises its own copy
	}
	cfg.Quotas = e.Quotas
	if len(cfg.Quotas) > 0 {
		cfg.QuotaDir = filepath.Join(sandbox.StateDir(), "quotas")
	}
	p, err := egress.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start egress proxy: %w", err)
	}
	stop := func() []sandbox.EgressEntry {
		_ = p.Close()
		var out []sandbox.EgressEntry
		for _, r := range p.Records() {
			out = append(out, sandbox.EgressEntry{Host: r.Host, Port: r.Port, Verdict: string(r.Verdict),
				Reason: r.Reason, Credentials: r.Credentials, BytesUp: r.BytesUp, BytesDown: r.BytesDown})
		}
		return out
	}
	return stop, nil
}
