package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress"
	"github.com/sandboxed-dev/sandboxed/permissions"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// proxyPort is the loopback port inside every sandbox where the init
// relays to the run's egress proxy.
const proxyPort = 3128

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

func (s *egressStarter) Env() []string { return egress.ProxyEnv(proxyPort) }

func (s *egressStarter) Start(ctx context.Context, hostDir string, grants []permissions.Grant, deny []string) (*isolation.Egress, func() []sandbox.EgressEntry, error) {
	if s.err != nil {
		return nil, nil, fmt.Errorf("%s: %w", testHostsEnv, s.err)
	}
	var allow []string
	var ports []int
	for _, g := range grants {
		switch {
		case g.Egress != nil:
			h := g.Egress.Host
			if g.Egress.Port != 0 {
				h += ":" + strconv.Itoa(g.Egress.Port)
			}
			allow = append(allow, h)
		case g.Localhost != nil:
			if g.Localhost.Port == proxyPort {
				return nil, nil, fmt.Errorf("network:localhost:%d: the port is the sandbox's egress proxy; forward another port", proxyPort)
			}
			ports = append(ports, g.Localhost.Port)
		}
	}
	rules, err := egress.ParseRules(allow, deny, ports)
	if err != nil {
		return nil, nil, fmt.Errorf("egress rules: %w", err)
	}
	sock := filepath.Join(hostDir, "egress.sock")
	p, err := egress.Start(ctx, egress.Config{SocketPath: sock, Rules: rules, Resolver: s.resolver})
	if err != nil {
		return nil, nil, fmt.Errorf("start egress proxy: %w", err)
	}
	stop := func() []sandbox.EgressEntry {
		_ = p.Close()
		var out []sandbox.EgressEntry
		for _, r := range p.Records() {
			out = append(out, sandbox.EgressEntry{Host: r.Host, Port: r.Port, Verdict: string(r.Verdict),
				Reason: r.Reason, BytesUp: r.BytesUp, BytesDown: r.BytesDown})
		}
		return out
	}
	return &isolation.Egress{ProxySocket: sock, ProxyPort: proxyPort, LocalhostPorts: ports, Rules: rules.Describe()}, stop, nil
}
