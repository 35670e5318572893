package egress_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/sandboxed-dev/sandboxed/isolation/egress"
)

// The host controller's side of one run: rules from grants and policy,
// a proxy on a socket in the run's private directory, the records into
// the result after Close.
func ExampleStart() {
	ctx := context.Background()
	hostDir := "/run/sandboxed/RUN_ID" // Plan.HostDir, mode 0700
	rules, err := egress.ParseRules(
		[]string{"api.example.com", "*.cdn.example.net:443"}, // network:external grants
		[]string{"*.evil.example"},                           // policy deny entries
		[]int{5432},                                          // network:localhost grants
	)
	if err != nil {
		return
	}
	cfg := egress.Config{SocketPath: filepath.Join(hostDir, "egress.sock"), Rules: rules}
	// Operator-only test switch (never from a tool definition or run flag).
	if path := os.Getenv("SANDBOXED_TEST_HOSTS_FILE"); path != "" {
		r, err := egress.LoadHostsFile(path)
		if err != nil {
			return
		}
		cfg.Resolver = r
	}
	p, err := egress.Start(ctx, cfg)
	if err != nil {
		return
	}
	// ... bind-mount cfg.SocketPath at isolation.SandboxSocket, run the
	// commands with egress.ProxyEnv(plan.Egress.ProxyPort) appended ...
	_ = p.Close()
	_ = json.NewEncoder(os.Stdout).Encode(p.Records())
}
