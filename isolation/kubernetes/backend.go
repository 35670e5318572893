package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandboxed-dev/sandboxed/isolation"
	"github.com/sandboxed-dev/sandboxed/isolation/initbin"
)

// Settings are the operator's choices for the backend. The zero value
// finds the cluster as kubectl does and uses its context's namespace.
type Settings struct {
	// Kubeconfig is the kubeconfig file; "" looks where kubectl does
	// ($KUBECONFIG, ~/.kube/config, then the in-cluster service account).
	Kubeconfig string
	// Namespace of every object of a run; "" is the context's, else
	// "default".
	Namespace string
	// NetworkPolicyEnforced is the operator's word that the cluster's
	// network plugin enforces NetworkPolicy. Without it, and without a
	// RuntimeClass that has no network, a run is refused: nothing else
	// guarantees that a pod has no direct route out.
	NetworkPolicyEnforced bool
	// ImagePullPolicy of the run's container: IfNotPresent (default),
	// Never (images imported on the nodes) or Always.
	ImagePullPolicy string
	// MaxWriteBytes caps the files of each write grant, both ways
	// (default DefaultMaxWriteBytes).
	MaxWriteBytes int64
	// Concurrency bounds the runs of this backend live at once in the
	// namespace, whichever sandboxed started them; a run waits for a
	// slot. 0: no bound.
	Concurrency int
	// StartTimeout bounds a pod's way to running (default 2 minutes).
	StartTimeout time.Duration
	// SeccompProfile is the pods' Localhost seccomp profile, a path
	// relative to the kubelet's seccomp directory on every node
	// (sandboxed setup --seccomp-profile writes it). "" takes the one
	// the cluster facts advertise, else the runtime's default;
	// RuntimeDefaultProfile the runtime's default whatever they say.
	SeccompProfile string
}

func (s *Settings) pullPolicy() string {
	if s.ImagePullPolicy == "" {
		return string(corev1.PullIfNotPresent)
	}
	return s.ImagePullPolicy
}

func (s *Settings) maxWriteBytes() int64 {
	if s.MaxWriteBytes <= 0 {
		return DefaultMaxWriteBytes
	}
	return s.MaxWriteBytes
}

func (s *Settings) startTimeout() time.Duration {
	if s.StartTimeout <= 0 {
		return 2 * time.Minute
	}
	return s.StartTimeout
}

// NoNetworkAnnotation, set to "true" on a RuntimeClass, says that its
// sandboxes have no network interface but loopback (gVisor's runsc with
// --network=none): the backend then needs no NetworkPolicy enforcement to
// run a tool that must have no direct route out.
const NoNetworkAnnotation = "sandboxed.dev/no-network"

// Backend runs each plan as one Pod of its own.
type Backend struct {
	settings Settings

	once   sync.Once
	api    *api
	apiErr error

	mu           sync.Mutex
	classes      map[string]runtimeInfo // the RuntimeClasses read, by name
	clusterFacts clusterFacts
	factsRead    bool
}

// New returns the backend. It reads no kubeconfig and dials nothing until
// a run needs the cluster.
func New(s Settings) *Backend {
	return &Backend{settings: s, classes: map[string]runtimeInfo{}}
}

func (b *Backend) client() (*api, error) {
	b.once.Do(func() {
		cfg, ns, err := loadConfig(b.settings.Kubeconfig, b.settings.Namespace)
		if err != nil {
			b.apiErr = err
			return
		}
		b.api, b.apiErr = newAPI(cfg, ns)
	})
	return b.api, b.apiErr
}

// Namespace is the namespace runs use (after loading the kubeconfig).
func (b *Backend) Namespace() string {
	if a, err := b.client(); err == nil {
		return a.ns
	}
	return b.settings.Namespace
}

// Tier reports the container tier: a pod is a container of its own,
// whichever tier the plan asked for.
func (b *Backend) Tier() isolation.Tier { return isolation.TierContainer }

// Check refuses a plan the cluster cannot run as asked: an elevated run,
// mounts a pod cannot carry, a RuntimeClass the cluster lacks, or no
// guarantee that the pod has no direct route out. It reads the cluster
// (the RuntimeClass) and the read grants' files, and changes nothing.
func (b *Backend) Check(ctx context.Context, p *isolation.Plan) error {
	if p.Observe {
		return isolation.ObserveUnsupported("kubernetes")
	}
	if p.Image == "" {
		return unsupported("a run without an image on Kubernetes", "set sandboxed.image in the definition")
	}
	if _, err := buildObjects(p, &b.settings, podEnv{}); err != nil {
		return err
	}
	a, err := b.client()
	if err != nil {
		return err
	}
	var rc runtimeInfo
	if p.Runtime != "" {
		if rc, err = b.runtimeClass(ctx, a, p.Runtime); err != nil {
			return err
		}
	}
	if !rc.noNetwork && !b.settings.NetworkPolicyEnforced {
		what := "a pod with no direct route out"
		if p.Runtime != "" {
			what += fmt.Sprintf(" (RuntimeClass %s keeps the pod network, and nothing says the cluster enforces NetworkPolicy)", p.Runtime)
		}
		return unsupported(what,
			"use a RuntimeClass without network, annotated "+NoNetworkAnnotation+"=true (runsc --network=none), or, if the cluster's network plugin enforces NetworkPolicy, say so with --network-policy-enforced")
	}
	return nil
}

// apiFailure turns a failed request into an error with the fix.
func (b *Backend) apiFailure(what string, err error) error {
	if errors.Is(err, ErrUnreachable) {
		return &isolation.UnsupportedError{What: "the Kubernetes cluster: " + err.Error(), Fix: unreachableFix}
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == http.StatusNotFound && strings.Contains(ae.Message, "namespaces") {
		return &isolation.UnsupportedError{What: what + ": " + err.Error(),
			Fix: "create the namespace (kubectl create namespace " + b.Namespace() + "), or name another with --namespace"}
	}
	if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusForbidden) {
		return &isolation.UnsupportedError{What: what + ": " + err.Error(),
			Fix: "give the kubeconfig's user the right to create, read and delete pods (with pods/exec), configmaps and networkpolicies in namespace " + b.Namespace() + ", and to read runtimeclasses"}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// initImage returns the init binary to send into the pod and its size:
// the small embedded init, else this executable.
func initImage() (io.ReadCloser, int64, error) {
	var f *os.File
	var err error
	if initbin.Embedded() {
		f, err = initbin.Open()
	} else if runtime.GOOS != "linux" {
		// This executable is no Linux program, and no Linux init is
		// carried off Linux yet: the pod could not run it.
		return nil, 0, &isolation.UnsupportedError{What: "the Kubernetes backend on " + runtime.GOOS + " (no Linux init to send into the pod)", Fix: "run sandboxed on Linux"}
	} else {
		var exe string
		if exe, err = os.Executable(); err == nil {
			f, err = os.Open(exe)
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("open the init binary: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("open the init binary: %w", err)
	}
	// From the start whatever the file's offset (a memory file is left
	// at its end once filled).
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, 0, fi.Size()), f}, fi.Size(), nil
}

// objectList is the part of a list answer gc reads.
type objectList struct {
	Items []struct {
		Metadata struct {
			Name              string            `json:"name"`
			Labels            map[string]string `json:"labels"`
			DeletionTimestamp *string           `json:"deletionTimestamp"`
		} `json:"metadata"`
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	} `json:"items"`
}

// kinds are the objects a run makes, in the order gc removes them.
var kinds = []struct{ group, resource string }{
	{"", "pods"},
	{"", "configmaps"},
	{"networking.k8s.io/v1", "networkpolicies"},
}

// GC deletes the pods, ConfigMaps and NetworkPolicies this host made for
// runs that keep does not report live (other hosts' runs are theirs to
// reap). With a nil keep it removes only pods that ended
// (and the objects of their runs). A cluster that cannot be reached is
// not an error here: there is nothing this host can reap.
func (b *Backend) GC(ctx context.Context, keep func(runID string) bool) ([]string, error) {
	a, err := b.client()
	if err != nil {
		return nil, nil
	}
	dead := map[string]bool{}
	var removed []string
	var errs []error
	for _, k := range kinds {
		var l objectList
		if err := a.list(ctx, k.group, k.resource, isolation.AnnotationRunID+","+hostLabel+"="+thisHost(), &l); err != nil {
			if errors.Is(err, ErrUnreachable) {
				return nil, nil
			}
			errs = append(errs, err)
			continue
		}
		for _, it := range l.Items {
			id := it.Metadata.Labels[isolation.AnnotationRunID]
			if id == "" {
				continue
			}
			reap := false
			switch {
			case keep != nil:
				reap = !keep(runIDOf(id))
			case k.resource == "pods":
				reap = it.Status.Phase == string(corev1.PodSucceeded) || it.Status.Phase == string(corev1.PodFailed)
			default:
				reap = dead[id]
			}
			if !reap {
				continue
			}
			if k.resource == "pods" {
				dead[id] = true
			}
			if err := a.remove(ctx, k.group, k.resource, it.Metadata.Name); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, fmt.Sprintf("%s/%s/%s", a.ns, k.resource, it.Metadata.Name))
		}
	}
	return removed, errors.Join(errs...)
}

// runIDOf is the run id a label value names (labels keep a run id as is:
// it is already of label syntax).
func runIDOf(label string) string { return label }

// networkingGroup is the API group of NetworkPolicy.
const networkingGroup = "networking.k8s.io/v1"
