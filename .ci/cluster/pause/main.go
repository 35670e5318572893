// Command pause is the sandbox container of the test cluster's pods (see
// .ci/cluster/cluster.sh): it holds the pod's namespaces and waits until it
// is stopped. No registry is reachable, so the cluster cannot pull the
// usual pause image; this one is built from source and imported.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return
		}
		// A pod that shares its process namespace leaves its orphans to
		// this process, the namespace's first: reap them.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
