package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxed-dev/sandboxed/isolation"
)

// fakeAPI is an API server that keeps objects by path and gives every pod
// the status podStatus.
type fakeAPI struct {
	mu        sync.Mutex
	objects   map[string]map[string]any
	podStatus map[string]any
	created   []string
	pod       corev1.Pod // the last pod created
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	p := r.URL.Path
	switch r.Method {
	case http.MethodPost:
		var obj map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &obj)
		if strings.HasSuffix(p, "/pods") {
			json.Unmarshal(b, &f.pod)
		}
		name := obj["metadata"].(map[string]any)["name"].(string)
		f.objects[p+"/"+name] = obj
		f.created = append(f.created, p+"/"+name)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(obj)
	case http.MethodDelete:
		delete(f.objects, p)
		w.Write([]byte(`{}`))
	case http.MethodGet:
		if strings.HasSuffix(p, "/events") {
			w.Write([]byte(`{"items":[]}`))
			return
		}
		if strings.HasSuffix(p, "/pods") || strings.HasSuffix(p, "/configmaps") || strings.HasSuffix(p, "/networkpolicies") {
			var items []any
			for k, v := range f.objects {
				if strings.HasPrefix(k, p+"/") {
					items = append(items, v)
				}
			}
			json.NewEncoder(w).Encode(map[string]any{"items": items})
			return
		}
		obj, ok := f.objects[p]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","reason":"NotFound","message":"not found"}`))
			return
		}
		if strings.Contains(p, "/pods/") {
			obj["status"] = f.podStatus
		}
		json.NewEncoder(w).Encode(obj)
	}
}

// startFake serves f and returns settings whose kubeconfig points at it.
func startFake(t *testing.T, f *fakeAPI) Settings {
	t.Helper()
	if f.objects == nil {
		f.objects = map[string]map[string]any{}
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return Settings{Kubeconfig: writeKubeconfig(t, srv.URL), Namespace: "runs", NetworkPolicyEnforced: true, StartTimeout: 10 * time.Second}
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: ctxns}}]
current-context: x
`, server)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStartFailsFastAndLeavesNothing(t *testing.T) {
	for name, tc := range map[string]struct {
		status map[string]any
		want   string
	}{
		"unschedulable": {
			status: map[string]any{"phase": "Pending", "conditions": []any{map[string]any{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available: 1 Insufficient memory."}}},
			want:   "Insufficient memory",
		},
		"image missing": {
			status: map[string]any{"phase": "Pending", "containerStatuses": []any{map[string]any{"name": "sandbox", "state": map[string]any{"waiting": map[string]any{"reason": "ErrImageNeverPull", "message": "image not present"}}}}},
			want:   "image sandboxed-runner:latest in the cluster",
		},
		"seccomp profile missing on the node": {
			status: map[string]any{"phase": "Pending", "containerStatuses": []any{map[string]any{"name": "sandbox", "state": map[string]any{"waiting": map[string]any{"reason": "CreateContainerError",
				"message": `failed to generate seccomp security options for container: cannot load seccomp profile "/var/lib/kubelet/seccomp/sandboxed.json": open /var/lib/kubelet/seccomp/sandboxed.json: no such file or directory`}}}}},
			want: "the seccomp profile sandboxed.json on the run's node",
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeAPI{podStatus: tc.status}
			s := startFake(t, f)
			f.objects["/apis/node.k8s.io/v1/runtimeclasses/gvisor"] = map[string]any{"metadata": map[string]any{"name": "gvisor"}, "handler": "runsc"}
			f.objects["/api/v1/namespaces/kube-system/configmaps/sandboxed-cluster"] = map[string]any{"data": map[string]any{factsSeccompProfile: "sandboxed.json"}}
			b := New(s)
			p := testPlan()
			t0 := time.Now()
			_, err := b.Start(context.Background(), p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, isolation.ErrUnsupported) {
				t.Fatalf("Start: %v, want %q", err, tc.want)
			}
			var u *isolation.UnsupportedError
			if !errors.As(err, &u) || u.Fix == "" {
				t.Errorf("no fix in %v", err)
			}
			if d := time.Since(t0); d > 5*time.Second {
				t.Errorf("took %s to fail", d)
			}
			if len(f.created) != 2 {
				t.Errorf("made %v, want the NetworkPolicy and the pod", f.created)
			}
			// The profile the cluster advertises.
			if sp := f.pod.Spec.SecurityContext.SeccompProfile; sp.Type != corev1.SeccompProfileTypeLocalhost || *sp.LocalhostProfile != "sandboxed.json" {
				t.Errorf("pod seccomp profile %+v", sp)
			}
			delete(f.objects, "/apis/node.k8s.io/v1/runtimeclasses/gvisor")
			delete(f.objects, "/api/v1/namespaces/kube-system/configmaps/sandboxed-cluster")
			if len(f.objects) != 0 {
				t.Errorf("left %v", f.objects)
			}
		})
	}
}

func TestUnreachableClusterFailsFast(t *testing.T) {
	// A port nothing listens on: the dial is refused at once.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	b := New(Settings{Kubeconfig: writeKubeconfig(t, url), NetworkPolicyEnforced: true})
	err := b.Check(context.Background(), testPlan())
	var u *isolation.UnsupportedError
	if !errors.Is(err, ErrUnreachable) && !errors.As(err, &u) {
		t.Fatalf("Check: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "cannot reach") || u == nil || !strings.Contains(u.Fix, "kubectl get --raw /readyz") {
		t.Errorf("Check: %v (fix %v)", err, u)
	}
	if err := New(Settings{Kubeconfig: filepath.Join(t.TempDir(), "missing")}).Check(context.Background(), testPlan()); !errors.Is(err, isolation.ErrUnsupported) {
		t.Errorf("missing kubeconfig: %v", err)
	}
}

func TestCheckRuntimeClassAndNetwork(t *testing.T) {
	f := &fakeAPI{}
	s := startFake(t, f)
	f.objects["/apis/node.k8s.io/v1/runtimeclasses/gvisor"] = map[string]any{"metadata": map[string]any{"name": "gvisor"}, "handler": "runsc"}
	f.objects["/apis/node.k8s.io/v1/runtimeclasses/gvisor-nonet"] = map[string]any{"metadata": map[string]any{"name": "gvisor-nonet", "annotations": map[string]any{NoNetworkAnnotation: "true"}}, "handler": "runsc-nonet"}
	ctx := context.Background()
	p := testPlan()
	if err := New(s).Check(ctx, p); err != nil {
		t.Errorf("gvisor with NetworkPolicy enforced: %v", err)
	}
	s.NetworkPolicyEnforced = false
	if err := New(s).Check(ctx, p); !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), "no direct route") {
		t.Errorf("gvisor, nothing enforced: %v", err)
	}
	p.Runtime = "gvisor-nonet"
	if err := New(s).Check(ctx, p); err != nil {
		t.Errorf("a RuntimeClass without network: %v", err)
	}
	p.Runtime = "kata"
	if err := New(s).Check(ctx, p); !errors.Is(err, isolation.ErrUnsupported) || !strings.Contains(err.Error(), `RuntimeClass "kata"`) {
		t.Errorf("missing RuntimeClass: %v", err)
	}
	if len(f.created) != 0 {
		t.Errorf("Check made %v", f.created)
	}
}

func TestGCReapsByLabel(t *testing.T) {
	f := &fakeAPI{}
	s := startFake(t, f)
	for _, id := range []string{"live-1", "dead-2"} {
		for _, r := range []string{"/api/v1/namespaces/runs/pods/", "/api/v1/namespaces/runs/configmaps/", "/apis/networking.k8s.io/v1/namespaces/runs/networkpolicies/"} {
			f.objects[r+"sbx-"+id] = map[string]any{"metadata": map[string]any{"name": "sbx-" + id, "labels": map[string]any{isolation.AnnotationRunID: id, hostLabel: thisHost()}}}
		}
	}
	removed, err := New(s).GC(context.Background(), func(id string) bool { return id == "live-1" })
	if err != nil || len(removed) != 3 {
		t.Fatalf("removed %v, %v", removed, err)
	}
	for k := range f.objects {
		if strings.Contains(k, "dead-2") {
			t.Errorf("left %s", k)
		}
	}
	if len(f.objects) != 3 {
		t.Errorf("objects %v", f.objects)
	}
}

func TestNamespaceFromContext(t *testing.T) {
	f := &fakeAPI{}
	s := startFake(t, f)
	s.Namespace = ""
	if ns := New(s).Namespace(); ns != "ctxns" {
		t.Errorf("namespace %q, want the context's", ns)
	}
	_ = io.Discard
}
