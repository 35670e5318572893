package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// The test cluster is a real single-node Kubernetes cluster on this
// machine, made by `make cluster-up` (.ci/cluster/cluster.sh, which says
// what it holds; docs/development.md, "The test cluster"). CI brings it up before the
// suite and takes it down after.

// clusterKubeconfigVar names a kubeconfig to use instead of the checkout's.
const clusterKubeconfigVar = "SANDBOXED_E2E_KUBECONFIG"

// clusterKubeconfigFiles are where `make cluster-up` writes the admin
// kubeconfig: the checkout's .cluster/kubeconfig (the suite runs in e2e/),
// and the cluster's own copy, which serves every checkout on the machine.
var clusterKubeconfigFiles = []string{"../.cluster/kubeconfig", "/var/lib/sandboxed-k8s/kubeconfig/admin"}

// clusterKubeconfig returns the path of the test cluster's admin
// kubeconfig: $SANDBOXED_E2E_KUBECONFIG when set, else the first of
// clusterKubeconfigFiles that exists. The error says how to bring the
// cluster up when there is none; pass it to testenv.Need.
func clusterKubeconfig() (string, error) {
	if path := os.Getenv(clusterKubeconfigVar); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("kubeconfig %s (%s): %w", path, clusterKubeconfigVar, err)
		}
		return path, nil
	}
	for _, f := range clusterKubeconfigFiles {
		path, err := filepath.Abs(f)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(path); err == nil {
			return path, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("no test cluster (no kubeconfig in %s): bring it up with sudo make cluster-up, or name a kubeconfig in %s",
		strings.Join(clusterKubeconfigFiles, " or "), clusterKubeconfigVar)
}

// documentationPrefixes are the IPv4 ranges the cluster's pods and services
// must come from (RFC 5737), never a private range.
var documentationPrefixes = []netip.Prefix{
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
}

// TestClusterFacts checks what `make cluster-up` promises the Kubernetes
// backend (docs/development.md, "The test cluster"): one Ready node, the gVisor
// RuntimeClasses marked as having no network, the namespace for test runs,
// and the ConfigMap kube-system/sandboxed-cluster whose ranges are
// documentation ranges. It reads the cluster and changes nothing.
func TestClusterFacts(t *testing.T) {
	testenv.NeedE2E(t)
	path, err := clusterKubeconfig()
	testenv.Need(t, "the test cluster", err)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", path, err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	get := func(path string, out any) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("get %s (is the cluster up? sudo make cluster-up): %w", path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("get %s: %s", path, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(out)
	}

	var nodes corev1.NodeList
	if err := get("/api/v1/nodes", &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 {
		t.Fatalf("nodes: got %d, want the one node", len(nodes.Items))
	}
	ready := false
	for _, c := range nodes.Items[0].Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		t.Errorf("node %s is not Ready", nodes.Items[0].Name)
	}

	for name, handler := range map[string]string{"gvisor": "runsc", "gvisor-nonet": "runsc-nonet"} {
		var rc nodev1.RuntimeClass
		if err := get("/apis/node.k8s.io/v1/runtimeclasses/"+name, &rc); err != nil {
			t.Errorf("RuntimeClass %s: %v", name, err)
			continue
		}
		if rc.Handler != handler {
			t.Errorf("RuntimeClass %s: handler %q, want %q", name, rc.Handler, handler)
		}
		if rc.Annotations["sandboxed.dev/no-network"] != "true" {
			t.Errorf("RuntimeClass %s: not annotated sandboxed.dev/no-network=true", name)
		}
	}

	var cm corev1.ConfigMap
	if err := get("/api/v1/namespaces/kube-system/configmaps/sandboxed-cluster", &cm); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"podCIDR", "serviceCIDR"} {
		p, err := netip.ParsePrefix(cm.Data[key])
		if err != nil {
			t.Errorf("sandboxed-cluster %s: %v", key, err)
			continue
		}
		if !slices.ContainsFunc(documentationPrefixes, func(d netip.Prefix) bool { return d.Contains(p.Addr()) && d.Bits() <= p.Bits() }) {
			t.Errorf("sandboxed-cluster %s = %s: not within a documentation range", key, p)
		}
	}
	if got := cm.Data["networkPolicyEnforced"]; got != "false" {
		t.Errorf("sandboxed-cluster networkPolicyEnforced = %q; nothing in the cluster enforces NetworkPolicy", got)
	}
	// The pods' Localhost seccomp profile is on the node, in the kubelet's
	// seccomp directory, and both RuntimeClasses are gVisor's.
	if p := cm.Data["seccompProfile"]; p == "" {
		t.Errorf("sandboxed-cluster advertises no seccompProfile")
	} else if _, err := os.Stat(filepath.Join("/var/lib/sandboxed-k8s/kubelet/seccomp", p)); err != nil {
		t.Errorf("sandboxed-cluster seccompProfile %s: %v", p, err)
	}
	if got := strings.Fields(cm.Data["gvisorRuntimeClasses"]); !slices.Contains(got, "gvisor") || !slices.Contains(got, kubeRuntimeClass) {
		t.Errorf("sandboxed-cluster gvisorRuntimeClasses = %q", cm.Data["gvisorRuntimeClasses"])
	}
	ns := cm.Data["testNamespace"]
	var sa corev1.ServiceAccount
	if err := get("/api/v1/namespaces/"+ns+"/serviceaccounts/default", &sa); err != nil {
		t.Errorf("the test namespace %q and its default ServiceAccount: %v", ns, err)
	}
}
