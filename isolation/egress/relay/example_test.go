package relay_test

import (
	"context"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/egress/relay"
)

// The init's side: listen while still privileged, serve after dropping
// privileges, stop before exiting.
func ExampleListen() {
	r, err := relay.Listen(relay.Config{
		SocketPath:     isolation.SandboxSocket,
		ProxyPort:      3128,
		LocalhostPorts: []int{5432},
	})
	if err != nil {
		return
	}
	// ... drop capabilities, set no_new_privs, switch uid/gid ...
	r.Serve(context.Background())
	defer r.Close()
	// ... run the commands with egress.ProxyEnv(3128) in their environment ...
}
