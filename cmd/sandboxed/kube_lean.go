//go:build !kubernetes

package main

import (
	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// kubernetesLinked: this build hands commands that need a cluster over to
// the build with the Kubernetes backend (handOver).
const kubernetesLinked = false

// kubernetesBackend refuses every plan: a command that needs the cluster
// was handed over before it planned anything, so a plan reaches it only
// when that could not be done, and then the run is refused, never run
// elsewhere.
func kubernetesBackend() isolation.Backend {
	return refusing{tier: isolation.Tier(isolation.BackendKubernetes), err: &isolation.UnsupportedError{
		What: "the Kubernetes backend in this build",
		Fix:  "run " + kubernetesBinary + " (make build puts it beside sandboxed)",
	}}
}

// kubernetesChecks: doctor was handed over when it was asked about a
// cluster; here it can only say where the backend is.
func kubernetesChecks(*cli.Context) []check {
	if p, err := kubernetesBinaryPath(); err == nil {
		return []check{{Tier: "kubernetes", Check: "backend", OK: true, Detail: "in " + p}}
	}
	return []check{{Tier: "kubernetes", Check: "backend", OK: false, Detail: kubernetesBinary + " not found",
		Fix: "install " + kubernetesBinary + " beside sandboxed or on PATH (make build builds both)"}}
}
