package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxed-dev/sandboxed/internal/testenv"
)

// kubeTier is the Kubernetes backend as a conformance tier: the same tools
// (isolation: container), run with --backend kubernetes on the test
// cluster (make cluster-up) under its gVisor RuntimeClass without network.
const kubeTier = "kubernetes"

// The test cluster's facts (.ci/cluster/cluster.sh): the namespace for
// test runs, and a gVisor RuntimeClass whose handler has no network (it
// says so with the backend's annotation, sandboxed.dev/no-network).
const (
	kubeNamespace    = "sandboxed-e2e"
	kubeRuntimeClass = "gvisor-nonet"
)

// cluster is the test cluster, when there is one.
var cluster struct {
	kubeconfig string
	hc         *http.Client
	host       string
	err        error // why there is none
}

// setupCluster finds the test cluster (clusterKubeconfig). Without one
// the kubernetes tier's tests fail under CI and are skipped otherwise
// (useCluster).
func setupCluster() {
	cluster.kubeconfig, cluster.err = clusterKubeconfig()
	if cluster.err != nil {
		return
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.kubeconfig)
	if err == nil {
		cluster.hc, err = rest.HTTPClientFor(cfg)
	}
	if err != nil {
		cluster.err = fmt.Errorf("test cluster kubeconfig %s: %w", cluster.kubeconfig, err)
		return
	}
	cluster.host = strings.TrimSuffix(cfg.Host, "/")
}

// kubeRequest sends one request to the test cluster's API server.
func kubeRequest(method, path, body string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, cluster.host+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := cluster.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// useCluster points every sandboxed the test starts at the test cluster.
func useCluster(t *testing.T) {
	t.Helper()
	if cluster.kubeconfig == "" && cluster.err == nil {
		// The suite's setup finds the cluster when the kubernetes tier
		// runs; the rootless mode runs the process tier only, and the
		// Kubernetes tests then find it here.
		setupCluster()
	}
	testenv.Need(t, "the Kubernetes test cluster", cluster.err)
	kubeconfig := cluster.kubeconfig
	if env.runner != nil {
		// The backend needs no root: the rootless mode's user reads a
		// copy of the cluster's kubeconfig of its own.
		var err error
		if kubeconfig, err = runnerKubeconfig(); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SANDBOXED_BACKEND", "kubernetes")
	t.Setenv("SANDBOXED_KUBECONFIG", kubeconfig)
	t.Setenv("SANDBOXED_NAMESPACE", kubeNamespace)
	t.Setenv("SANDBOXED_RUNTIME_CLASS", kubeRuntimeClass)
	t.Setenv("SANDBOXED_IMAGE_PULL_POLICY", "Never")
}

// runnerKubeconfig copies the test cluster's kubeconfig (root's, mode 0600)
// into the rootless mode's user's home, owned by that user.
var runnerKubeconfig = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(cluster.kubeconfig)
	if err != nil {
		return "", err
	}
	p := filepath.Join(env.runner.home, "kubeconfig")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return "", err
	}
	return p, os.Chown(p, int(env.runner.uid), int(env.runner.gid))
})

// kubeLeaks lists the objects of runs left in the test namespace: pods,
// ConfigMaps, NetworkPolicies and Secrets labelled with a run id.
func kubeLeaks() []string {
	if cluster.hc == nil {
		return nil
	}
	var leaks []string
	for _, r := range []string{"/api/v1/namespaces/" + kubeNamespace + "/pods", "/api/v1/namespaces/" + kubeNamespace + "/configmaps",
		"/api/v1/namespaces/" + kubeNamespace + "/secrets", "/apis/networking.k8s.io/v1/namespaces/" + kubeNamespace + "/networkpolicies"} {
		var l struct {
			Items []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if err := kubeRequest(http.MethodGet, r+"?labelSelector=dev.sandboxed.run-id", "", &l); err != nil {
			leaks = append(leaks, "cannot list the cluster's objects: "+err.Error())
			continue
		}
		for _, it := range l.Items {
			leaks = append(leaks, "cluster object "+filepath.Base(r)+"/"+it.Metadata.Name)
		}
	}
	return leaks
}

// kubeOnly runs f as a test of the kubernetes tier alone, with the leak check.
func kubeOnly(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	useCluster(t)
	begin(t)
	f(t)
}

// expectFastRefusal checks that a run that cannot start failed as a
// sandbox failure, with the reason and the fix, well before the pod start
// timeout (two minutes).
func expectFastRefusal(t *testing.T, r result, c cli, took time.Duration, reason string) {
	t.Helper()
	if r.Status != "error" || c.code != 125 || r.Error == nil {
		t.Fatalf("status %q exit %d error %+v, want a sandbox failure\nstderr: %s", r.Status, c.code, r.Error, c.stderr)
	}
	if !strings.Contains(r.Error.Message, reason) {
		t.Errorf("the error does not say %q: %s", reason, r.Error.Message)
	}
	if r.Error.Hint == "" && !strings.Contains(r.Error.Message, ": ") {
		t.Errorf("no fix given: %+v", r.Error)
	}
	if took > 60*time.Second {
		t.Errorf("took %s to fail; the pod start timeout is 2 minutes", took)
	}
}

func TestKubernetesUnschedulablePodFailsFast(t *testing.T) {
	kubeOnly(t, func(t *testing.T) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, kubeTier, "huge", `echo RAN`, nil, "sandboxed:\n  cpus: 512\n")
		t0 := time.Now()
		r, c := runJSON(t, dir, tool)
		expectFastRefusal(t, r, c, time.Since(t0), "Insufficient cpu")
		if strings.Contains(r.Stdout, "RAN") {
			t.Errorf("the tool ran")
		}
	})
}

func TestKubernetesMissingImageFailsFast(t *testing.T) {
	kubeOnly(t, func(t *testing.T) {
		dir := workdir(t, nil)
		tool := toolYAML(t, dir, kubeTier, "noimage", `echo RAN`, nil, "sandboxed:\n  image: sandboxed-missing:e2e\n")
		t0 := time.Now()
		r, c := runJSON(t, dir, tool)
		expectFastRefusal(t, r, c, time.Since(t0), "image sandboxed-missing:e2e in the cluster")
	})
}

func TestKubernetesUnreachableClusterFailsFast(t *testing.T) {
	kubeOnly(t, func(t *testing.T) {
		dir := workdir(t, nil)
		bogus := filepath.Join(dir, "bogus-kubeconfig")
		// Nothing listens on loopback port 1: the dial is refused at once.
		must(t, os.WriteFile(bogus, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o644))
		giveToRunner(t, bogus)
		t.Setenv("SANDBOXED_KUBECONFIG", bogus)
		tool := toolYAML(t, dir, kubeTier, "unreachable", `echo RAN`, nil, "")
		t0 := time.Now()
		r, c := runJSON(t, dir, tool)
		expectFastRefusal(t, r, c, time.Since(t0), "cannot reach the Kubernetes API server")
	})
}

// TestKubernetesParallelRunsAreIndependent: eight runs at once, each
// with its own write grant, each gets its own result and files.
func TestKubernetesParallelRunsAreIndependent(t *testing.T) {
	kubeOnly(t, func(t *testing.T) {
		const n = 8
		dirs := make([]string, n)
		tools := make([]string, n)
		for i := range dirs {
			dirs[i] = workdir(t, map[string]string{"out/.keep": ""})
			tools[i] = toolYAML(t, dirs[i], kubeTier, fmt.Sprintf("par%d", i),
				fmt.Sprintf(`echo "RUN-%d" > out/mine.txt; echo "OUT-%d"`, i, i), []string{"filesystem:write:./out"}, "")
		}
		type got struct {
			r result
			c cli
		}
		res := make(chan got, n)
		for i := range dirs {
			go func() {
				defer func() { recover() }()
				r, c := runJSONNoFatal(dirs[i], tools[i])
				res <- got{r, c}
			}()
		}
		for i := 0; i < n; i++ {
			g := <-res
			if g.r.Status != "ok" {
				t.Errorf("a parallel run: status %q exit %d %+v\n%s", g.r.Status, g.c.code, g.r.Error, g.c.stderr)
			}
		}
		for i, d := range dirs {
			if b, err := os.ReadFile(filepath.Join(d, "out/mine.txt")); err != nil || string(b) != fmt.Sprintf("RUN-%d\n", i) {
				t.Errorf("run %d's file: %q %v", i, b, err)
			}
		}
	})
}

// runJSONNoFatal is runJSON for a goroutine: it never calls t.Fatal.
func runJSONNoFatal(dir string, args ...string) (result, cli) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := command(append([]string{"run", "--json"}, args...)...)
	cmd.Dir = dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := runCtx(ctx, cmd)
	c := cli{stdout: out.String(), stderr: errb.String()}
	if cmd.ProcessState != nil {
		c.code = cmd.ProcessState.ExitCode()
	} else if err != nil {
		c.code = -1
	}
	var r result
	_ = json.Unmarshal([]byte(c.stdout), &r)
	return r, c
}

// TestKubernetesKilledControllerIsReapedByGC kills sandboxed with SIGKILL
// while its pod runs, then checks that `sandboxed gc` removes the pod,
// its ConfigMap and its NetworkPolicy (the leak check).
func TestKubernetesKilledControllerIsReapedByGC(t *testing.T) {
	kubeOnly(t, func(t *testing.T) {
		dir := workdir(t, map[string]string{"data/in.txt": "x"})
		tool := toolYAML(t, dir, kubeTier, "victim", `sleep 300`, []string{"filesystem:read:./data"}, "timeout: 600000\n")
		cmd := command("run", tool)
		cmd.Dir = dir
		cmd.Env = runEnv()
		must(t, cmd.Start())
		deadline := time.Now().Add(90 * time.Second)
		for {
			var l struct {
				Items []struct {
					Status struct {
						Phase string `json:"phase"`
					} `json:"status"`
				} `json:"items"`
			}
			err := kubeRequest(http.MethodGet, "/api/v1/namespaces/"+kubeNamespace+"/pods?labelSelector=dev.sandboxed.run-id", "", &l)
			if err == nil && len(l.Items) == 1 && l.Items[0].Status.Phase == "Running" {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the run's pod did not run within 90s (%v)", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(time.Second) // the init is up and the command started
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		c := sandboxed(t, dir, "gc")
		if c.code != 0 {
			t.Fatalf("gc: exit %d\n%s%s", c.code, c.stdout, c.stderr)
		}
		if !strings.Contains(c.stdout, "pods/sbx-") || !strings.Contains(c.stdout, "networkpolicies/sbx-") || !strings.Contains(c.stdout, "configmaps/sbx-") {
			t.Errorf("gc did not remove the run's objects:\n%s%s", c.stdout, c.stderr)
		}
		// The pod goes once its node has stopped it: the leak check waits
		// only a second, so wait for that here.
		for i := 0; i < 100 && len(kubeLeaks()) > 0; i++ {
			time.Sleep(200 * time.Millisecond)
		}
	})
}
