package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The test cluster is a real single-node Kubernetes cluster on this
// machine, made by `make cluster-up` (.ci/cluster/cluster.sh, which says
// what it holds; README, "The test cluster"). CI brings it up before the
// suite and takes it down after.

// clusterKubeconfigVar names a kubeconfig to use instead of the checkout's.
const clusterKubeconfigVar = "SANDBOXED_E2E_KUBECONFIG"

// clusterKubeconfigFile is where `make cluster-up` writes the admin
// kubeconfig, relative to the checkout (the suite runs in e2e/).
const clusterKubeconfigFile = "../.cluster/kubeconfig"

// clusterKubeconfig returns the path of the test cluster's admin
// kubeconfig: $SANDBOXED_E2E_KUBECONFIG when set, else the checkout's
// .cluster/kubeconfig. The error says how to bring the cluster up when
// there is none; pass it to testenv.Need.
func clusterKubeconfig() (string, error) {
	path := os.Getenv(clusterKubeconfigVar)
	if path == "" {
		abs, err := filepath.Abs(clusterKubeconfigFile)
		if err != nil {
			return "", err
		}
		path = abs
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("no test cluster (no kubeconfig %s): bring it up with sudo make cluster-up, or name a kubeconfig in %s", path, clusterKubeconfigVar)
		}
		return "", err
	}
	return path, nil
}
