//go:build linux

package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"text/tabwriter"
	"time"
)

// The Kubernetes backend's rows: the per-run latency of sandboxed run
// --backend kubernetes on a trivial tool, and its throughput with 4 and 16
// runs in parallel, on the test cluster (make cluster-up) or the cluster
// -kubeconfig names. Without a cluster the rows are skipped, with the
// reason.
var (
	kubeconfigFlag = flag.String("kubeconfig", "", "kubeconfig of the cluster for the Kubernetes rows (default: $SANDBOXED_E2E_KUBECONFIG, else .cluster/kubeconfig)")
	kubeNamespace  = flag.String("kube-namespace", "sandboxed-e2e", "namespace of the Kubernetes rows' pods")
	kubeRuntime    = flag.String("kube-runtime-class", "gvisor-nonet", "RuntimeClass of the Kubernetes rows' pods")
	kubeRuns       = flag.Int("kube-n", 10, "sequential runs of the Kubernetes latency row")
)

// benchKubeconfig is the kubeconfig of the Kubernetes rows, "" for none.
func benchKubeconfig() string {
	for _, p := range []string{*kubeconfigFlag, os.Getenv("SANDBOXED_E2E_KUBECONFIG"), ".cluster/kubeconfig"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	return ""
}

// kubernetesRows times the Kubernetes backend. tool makes a trivial
// definition; work and env are the bench's directory and environment.
func kubernetesRows(bin, work string, env []string, tool func(name, tier string, extra ...string) string) {
	kc := benchKubeconfig()
	if kc == "" {
		fmt.Fprintln(os.Stderr, "bench: Kubernetes backend skipped: no cluster (make cluster-up, or -kubeconfig FILE)")
		return
	}
	// The test cluster drops every packet of its pods (iptables) and the
	// RuntimeClass has no network: the operator vouches for no route out.
	kenv := append(append([]string{}, env...),
		"SANDBOXED_BACKEND=kubernetes", "SANDBOXED_KUBECONFIG="+kc, "SANDBOXED_NAMESPACE="+*kubeNamespace,
		"SANDBOXED_RUNTIME_CLASS="+*kubeRuntime, "SANDBOXED_IMAGE_PULL_POLICY=Never", "SANDBOXED_NETWORK_POLICY_ENFORCED=true",
		"SANDBOXED_KUBE_CONCURRENCY=0")
	p := peer{name: "sandboxed kubernetes", argv: []string{bin, "run", tool("noop-kube", "container")}, dir: work, env: kenv}
	if err := once(p); err != nil {
		fmt.Fprintf(os.Stderr, "bench: Kubernetes backend skipped: a run on %s failed: %v\n", kc, err)
		return
	}
	var seq []time.Duration
	for i := 0; i < *kubeRuns; i++ {
		t0 := time.Now()
		if err := once(p); err != nil {
			fmt.Fprintln(os.Stderr, "bench: Kubernetes backend:", err)
			return
		}
		seq = append(seq, time.Since(t0))
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "KUBERNETES\tP50\tP90\tRUNS\tRUNS/S\n")
	fmt.Fprintf(w, "one at a time\t%s\t%s\t%d\t%.2f\n", ms(pct(seq, .5)), ms(pct(seq, .9)), len(seq), 1/pct(seq, .5).Seconds())
	for _, par := range []int{4, 16} {
		lat, wall, failed := parallelRuns(p, par, 2*par)
		if failed != nil {
			fmt.Fprintf(w, "%d in parallel\tfailed: %v\n", par, failed)
			continue
		}
		fmt.Fprintf(w, "%d in parallel\t%s\t%s\t%d\t%.2f\n", par, ms(pct(lat, .5)), ms(pct(lat, .9)), len(lat), float64(len(lat))/wall.Seconds())
	}
	w.Flush()
	fmt.Println()
}

// parallelRuns makes total runs of p with par at a time, and returns each
// run's latency and the wall time of all.
func parallelRuns(p peer, par, total int) ([]time.Duration, time.Duration, error) {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	jobs := make(chan struct{}, total)
	for i := 0; i < total; i++ {
		jobs <- struct{}{}
	}
	close(jobs)
	t0 := time.Now()
	for i := 0; i < par; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				s := time.Now()
				err := once(p)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					lat = append(lat, time.Since(s))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, 0, fmt.Errorf("%d of %d runs: %v", len(errs), total, errs[0])
	}
	return lat, time.Since(t0), nil
}
