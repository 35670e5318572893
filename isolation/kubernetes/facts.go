package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	nodev1 "k8s.io/api/node/v1"
)

// The cluster facts: a ConfigMap in which a cluster's operator states what
// the API cannot say about the nodes (the test cluster's cluster.sh writes
// it). The backend reads two keys; without the ConfigMap, or without the
// right to read it, it assumes neither.
const (
	factsNamespace = "kube-system"
	factsName      = "sandboxed-cluster"
	// factsSeccompProfile names the Localhost seccomp profile every node
	// has, relative to the kubelet's seccomp directory: the container
	// tier's (sandboxed setup --seccomp-profile writes it).
	factsSeccompProfile = "seccompProfile"
	// factsGVisor lists, space-separated, the RuntimeClasses whose pods
	// run under gVisor, beyond those whose handler says so (gVisorHandler).
	factsGVisor = "gvisorRuntimeClasses"
)

// RuntimeDefaultProfile, as Settings.SeccompProfile, keeps the runtime's
// default seccomp profile whatever the cluster advertises.
const RuntimeDefaultProfile = "RuntimeDefault"

// clusterFacts are the facts the backend uses.
type clusterFacts struct {
	seccompProfile string
	gvisor         map[string]bool
}

// readFacts reads the cluster facts. A ConfigMap that is missing or that
// the kubeconfig's user may not read is no facts, not an error.
func readFacts(ctx context.Context, a *api) (clusterFacts, error) {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	err := a.do(ctx, http.MethodGet, "/api/v1/namespaces/"+factsNamespace+"/configmaps/"+factsName, nil, nil, &cm)
	var ae *apiError
	if err != nil && errors.As(err, &ae) && (ae.Code == http.StatusNotFound || ae.Code == http.StatusForbidden || ae.Code == http.StatusUnauthorized) {
		return clusterFacts{}, nil
	}
	if err != nil {
		return clusterFacts{}, err
	}
	return parseFacts(cm.Data), nil
}

func parseFacts(data map[string]string) clusterFacts {
	f := clusterFacts{seccompProfile: strings.TrimSpace(data[factsSeccompProfile]), gvisor: map[string]bool{}}
	for _, rc := range strings.Fields(data[factsGVisor]) {
		f.gvisor[rc] = true
	}
	return f
}

// gVisorHandler reports whether a RuntimeClass handler is gVisor's by its
// name: runsc, as gVisor's documentation names it, or runsc-SOMETHING.
func gVisorHandler(h string) bool {
	return h == "runsc" || strings.HasPrefix(h, "runsc-")
}

// runtimeInfo is what the backend needs to know of a run's RuntimeClass.
type runtimeInfo struct {
	// noNetwork: annotated NoNetworkAnnotation=true.
	noNetwork bool
	// gvisor: its pods run under gVisor, a kernel of their own per pod.
	gvisor bool
}

// podEnv is what the pod spec takes from the cluster rather than the plan.
type podEnv struct {
	// seccompProfile is the Localhost profile of the pod; "" for the
	// runtime's default.
	seccompProfile string
	// gvisor is true when the pod's RuntimeClass is gVisor's: its own
	// kernel is charged to the pod's memory limit, which holds
	// specconv.GVisorMemoryOverhead above the tool's.
	gvisor bool
}

// runtimeClass reads the RuntimeClass name (once per backend) and says what
// it is. It wraps isolation.ErrUnsupported when the cluster has none.
func (b *Backend) runtimeClass(ctx context.Context, a *api, name string) (runtimeInfo, error) {
	b.mu.Lock()
	ri, ok := b.classes[name]
	b.mu.Unlock()
	if ok {
		return ri, nil
	}
	var rc nodev1.RuntimeClass
	err := a.do(ctx, http.MethodGet, "/apis/node.k8s.io/v1/runtimeclasses/"+name, nil, nil, &rc)
	switch {
	case isNotFound(err):
		return runtimeInfo{}, unsupported(fmt.Sprintf("RuntimeClass %q (the cluster at %s has none of that name)", name, a.cfg.Host),
			"create it (e.g. handler runsc for gVisor), or name one the cluster has with --runtime-class (`kubectl get runtimeclass`)")
	case err != nil:
		return runtimeInfo{}, b.apiFailure("read RuntimeClass "+name, err)
	}
	f, err := b.facts(ctx, a)
	if err != nil {
		return runtimeInfo{}, err
	}
	ri = runtimeInfo{noNetwork: rc.Annotations[NoNetworkAnnotation] == "true", gvisor: gVisorHandler(rc.Handler) || f.gvisor[name]}
	b.mu.Lock()
	b.classes[name] = ri
	b.mu.Unlock()
	return ri, nil
}

// facts reads the cluster facts once per backend.
func (b *Backend) facts(ctx context.Context, a *api) (clusterFacts, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.factsRead {
		return b.clusterFacts, nil
	}
	f, err := readFacts(ctx, a)
	if err != nil {
		return clusterFacts{}, b.apiFailure("read the cluster facts "+factsNamespace+"/"+factsName, err)
	}
	b.clusterFacts, b.factsRead = f, true
	return f, nil
}

// env is the pod environment of a run: the seccomp profile the settings
// name, else the one the cluster advertises, else the runtime's default.
func (b *Backend) env(ctx context.Context, a *api) (podEnv, error) {
	switch p := b.settings.SeccompProfile; p {
	case RuntimeDefaultProfile:
		return podEnv{}, nil
	case "":
	default:
		return podEnv{seccompProfile: p}, nil
	}
	f, err := b.facts(ctx, a)
	if err != nil {
		return podEnv{}, err
	}
	return podEnv{seccompProfile: f.seccompProfile}, nil
}
