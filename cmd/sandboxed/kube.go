package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/policy"
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
// kubernetes.Settings takes them (kube_linked.go): they are parsed in every
// build, so a command line means the same whichever build reads it.
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

// kubernetesBinary is the build of this CLI that links the Kubernetes
// backend (make build puts it beside sandboxed; built with -tags
// kubernetes). client-go and the Kubernetes API types cost every command
// about as much package initialisation as the rest of the CLI together, so
// the default build leaves them out and hands a command over to this one
// when the command needs a cluster.
const kubernetesBinary = "sandboxed-kubernetes"

// handOver runs the command in the build with the Kubernetes backend when
// the command needs it (--backend kubernetes, or a policy that sends a
// source there) and this build lacks it. It replaces the process, before
// the command has done anything but read its flags, definition and
// policy; it returns only with an error, or nil when there is nothing to
// hand over. A server cannot hand a caller's run over: served, it declines
// and the caller runs the command itself.
func handOver(pol *policy.Policy, served bool) error {
	if kubernetesLinked {
		return nil
	}
	why := ""
	switch {
	case cluster.backend == isolation.BackendKubernetes:
		why = "--backend kubernetes"
	case pol.SendsToKubernetes():
		why = "the policy sends a source to the Kubernetes backend"
	default:
		return nil
	}
	if served {
		return errDecline(why + ": the server was started from the build without the Kubernetes backend")
	}
	path, err := kubernetesBinaryPath()
	if err != nil {
		return &isolation.UnsupportedError{
			What: "the Kubernetes backend (" + why + "): " + err.Error(),
			Fix:  "install " + kubernetesBinary + " beside sandboxed or on PATH (make build builds both)",
		}
	}
	err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ())
	return fmt.Errorf("run %s for %s: %w", path, why, err)
}

// kubernetesBinaryPath finds the build with the Kubernetes backend: beside
// this executable, else on PATH.
func kubernetesBinaryPath() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), kubernetesBinary)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(kubernetesBinary)
	if err != nil {
		return "", errors.New(kubernetesBinary + " is neither beside this executable nor on PATH")
	}
	return p, nil
}
