package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/kubernetes"
	"github.com/sandboxed-dev/sandboxed/sandbox"
)

// cluster holds the backend flags of the command being run (run, mcp,
// tool test, doctor); newController builds the Kubernetes backend from
// them.
var cluster struct {
	backend      string
	runtimeClass string
	settings     clusterSettings
}

// clusterSettings are the flags of the Kubernetes backend, as
// kubernetes.Settings takes them.
type clusterSettings struct {
	Kubeconfig            string
	Namespace             string
	NetworkPolicyEnforced bool
	Concurrency           int
	ImagePullPolicy       string
	SeccompProfile        string
}

// clusterFlags choose where runs go: this host, or one pod per run on a
// Kubernetes cluster. Each has an environment variable, for CI runners.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "backend", Value: "local", EnvVars: []string{"SANDBOXED_BACKEND"}, Destination: &cluster.backend,
			Usage: "where runs go: local (this host's tiers) or kubernetes (one pod per run)"},
		&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"SANDBOXED_KUBECONFIG"}, Destination: &cluster.settings.Kubeconfig,
			Usage: "kubeconfig `FILE` of the cluster (default as kubectl: $KUBECONFIG, ~/.kube/config, in-cluster)"},
		&cli.StringFlag{Name: "namespace", EnvVars: []string{"SANDBOXED_NAMESPACE"}, Destination: &cluster.settings.Namespace,
			Usage: "namespace of the runs' pods (default: the kubeconfig context's)"},
		&cli.StringFlag{Name: "runtime-class", Value: "gvisor", EnvVars: []string{"SANDBOXED_RUNTIME_CLASS"}, Destination: &cluster.runtimeClass,
			Usage: "RuntimeClass of the runs' pods; \"\" for the cluster's default runtime"},
		&cli.BoolFlag{Name: "network-policy-enforced", EnvVars: []string{"SANDBOXED_NETWORK_POLICY_ENFORCED"}, Destination: &cluster.settings.NetworkPolicyEnforced,
			Usage: "the cluster's network plugin enforces NetworkPolicy (else the RuntimeClass must have no network)"},
		&cli.IntFlag{Name: "kube-concurrency", Value: 16, EnvVars: []string{"SANDBOXED_KUBE_CONCURRENCY"}, Destination: &cluster.settings.Concurrency,
			Usage: "at most `N` runs live at once in the namespace (0: no bound); a run waits for a slot"},
		&cli.StringFlag{Name: "image-pull-policy", Value: "IfNotPresent", EnvVars: []string{"SANDBOXED_IMAGE_PULL_POLICY"}, Destination: &cluster.settings.ImagePullPolicy,
			Usage: "IfNotPresent, Never (images imported on the nodes) or Always"},
		&cli.StringFlag{Name: "kube-seccomp-profile", EnvVars: []string{"SANDBOXED_KUBE_SECCOMP_PROFILE"}, Destination: &cluster.settings.SeccompProfile,
			Usage: "the pods' Localhost seccomp `PROFILE`, relative to the kubelet's seccomp directory (sandboxed setup --seccomp-profile writes it); default: the one the cluster advertises, else RuntimeDefault; RuntimeDefault forces the runtime's"},
	}
}

// clusterChoice is the backend choice for a request, checked.
func clusterChoice() (sandbox.Cluster, error) {
	switch cluster.backend {
	case "", "local", isolation.BackendKubernetes:
	default:
		return sandbox.Cluster{}, usageError(fmt.Errorf("--backend %q: want local or kubernetes", cluster.backend))
	}
	switch cluster.settings.ImagePullPolicy {
	case "", "IfNotPresent", "Never", "Always":
	default:
		return sandbox.Cluster{}, usageError(fmt.Errorf("--image-pull-policy %q: want IfNotPresent, Never or Always", cluster.settings.ImagePullPolicy))
	}
	return sandbox.Cluster{Backend: cluster.backend, RuntimeClass: cluster.runtimeClass}, nil
}

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
		return []check{{Tier: "kubernetes", Name: "cluster", OK: false, Detail: err.Error(),
			Fix: "set --kubeconfig or KUBECONFIG to the cluster's kubeconfig (kubectl must work with it)"}}
	}
	out := []check{{Tier: "kubernetes", Name: "cluster", OK: true, Detail: fmt.Sprintf("%s (Kubernetes %s), namespace %s", pr.Host, pr.Version, pr.Namespace)}}
	if len(pr.RuntimeClasses) == 0 {
		out = append(out, check{Tier: "kubernetes", Name: "runtime classes", OK: false, Detail: "none: pods run on the nodes' default runtime",
			Fix: "create a RuntimeClass for gVisor (handler runsc), annotated " + kubernetes.NoNetworkAnnotation + "=true if its handler runs with --network=none"})
	}
	switch {
	case cluster.settings.SeccompProfile != "":
		out = append(out, check{Tier: "kubernetes", Name: "seccomp profile", OK: true, Detail: cluster.settings.SeccompProfile + " (--kube-seccomp-profile)"})
	case pr.SeccompProfile != "":
		out = append(out, check{Tier: "kubernetes", Name: "seccomp profile", OK: true, Detail: "Localhost " + pr.SeccompProfile + " (the cluster facts)"})
	default:
		out = append(out, check{Tier: "kubernetes", Name: "seccomp profile", OK: true,
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
		out = append(out, check{Tier: "kubernetes", Name: "runtime class " + rc.Name, OK: true, Detail: d})
	}
	return out
}
