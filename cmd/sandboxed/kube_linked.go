//go:build kubernetes

package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/kubernetes"
)

// kubernetesLinked: this build has the Kubernetes backend.
const kubernetesLinked = true

// kubernetesBackendSettings are the flags' settings for the backend.
func kubernetesBackendSettings() kubernetes.Settings {
	s := cluster.settings
	return kubernetes.Settings{
		Kubeconfig: s.Kubeconfig, Namespace: s.Namespace, NetworkPolicyEnforced: s.NetworkPolicyEnforced,
		Concurrency: s.Concurrency, ImagePullPolicy: s.ImagePullPolicy, SeccompProfile: s.SeccompProfile,
	}
}

// kubernetesBackend is the Kubernetes backend of the current flags. It
// reads no kubeconfig until a run or gc needs the cluster.
func kubernetesBackend() isolation.Backend {
	return kubernetes.New(kubernetesBackendSettings())
}

// kubernetesChecks reports the cluster for doctor, when one is configured.
func kubernetesChecks(c *cli.Context) []check {
	pr, err := kubernetes.Probe(c.Context, kubernetesBackendSettings(), 10*time.Second)
	if err != nil {
		return []check{{Tier: "kubernetes", Check: "cluster", OK: false, Detail: err.Error(),
			Fix: "set --kubeconfig or KUBECONFIG to the cluster's kubeconfig (kubectl must work with it)"}}
	}
	out := []check{{Tier: "kubernetes", Check: "cluster", OK: true, Detail: fmt.Sprintf("%s (Kubernetes %s), namespace %s", pr.Host, pr.Version, pr.Namespace)}}
	if len(pr.RuntimeClasses) == 0 {
		out = append(out, check{Tier: "kubernetes", Check: "runtime classes", OK: false, Detail: "none: pods run on the nodes' default runtime",
			Fix: "create a RuntimeClass for gVisor (handler runsc), annotated " + kubernetes.NoNetworkAnnotation + "=true if its handler runs with --network=none"})
	}
	switch {
	case cluster.settings.SeccompProfile != "":
		out = append(out, check{Tier: "kubernetes", Check: "seccomp profile", OK: true, Detail: cluster.settings.SeccompProfile + " (--kube-seccomp-profile)"})
	case pr.SeccompProfile != "":
		out = append(out, check{Tier: "kubernetes", Check: "seccomp profile", OK: true, Detail: "Localhost " + pr.SeccompProfile + " (the cluster facts)"})
	default:
		out = append(out, check{Tier: "kubernetes", Check: "seccomp profile", OK: true,
			Detail: "RuntimeDefault: under gVisor glibc's select is refused (the profile names pselect6 only); install the container tier's on the nodes: sandboxed setup --seccomp-profile"})
	}
	for _, rc := range pr.RuntimeClasses {
		d := "handler " + rc.Handler
		if rc.NoNetwork {
			d += ", no network"
		}
		if rc.GVisor {
			d += ", gVisor (the pids limit is the run's own)"
		}
		out = append(out, check{Tier: "kubernetes", Check: "runtime class " + rc.Name, OK: true, Detail: d})
	}
	return out
}
