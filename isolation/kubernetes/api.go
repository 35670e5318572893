package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// dialTimeout bounds connecting to the API server: a cluster that does
// not answer fails the run fast.
const dialTimeout = 5 * time.Second

// requestTimeout bounds one API request (not the exec stream).
const requestTimeout = 30 * time.Second

// ErrAPI wraps an answer of the API server other than success.
var ErrAPI = errors.New("kubernetes API")

// apiError is a failed request: the status code and the server's message.
type apiError struct {
	Code    int
	Reason  string
	Message string
}

func (e *apiError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s (%d %s)", e.Message, e.Code, e.Reason)
	}
	return fmt.Sprintf("%d %s", e.Code, e.Reason)
}

func (e *apiError) Unwrap() error { return ErrAPI }

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Code == http.StatusNotFound
}

// api is a small JSON client of the API server: client-go's transport
// (TLS, credentials, exec plugins) with plain requests on top, so no
// typed clientset (every API group) is linked.
type api struct {
	cfg  *rest.Config
	hc   *http.Client
	base string
	ns   string
}

// loadConfig finds the cluster as kubectl does: an explicit kubeconfig,
// else $KUBECONFIG, else ~/.kube/config, else the in-cluster service
// account. It returns the config and the namespace (explicit, else the
// context's, else "default").
func loadConfig(kubeconfig, namespace string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", unsupported("a Kubernetes cluster (no usable kubeconfig: "+err.Error()+")",
			"set --kubeconfig or KUBECONFIG to a kubeconfig of the cluster (kubectl must work with it), or run inside a pod with a service account")
	}
	if namespace == "" {
		if ns, _, err := cc.Namespace(); err == nil && ns != "" {
			namespace = ns
		} else {
			namespace = "default"
		}
	}
	return cfg, namespace, nil
}

func newAPI(cfg *rest.Config, ns string) (*api, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	base := strings.TrimSuffix(cfg.Host, "/")
	if !strings.Contains(base, "://") {
		base = "https://" + base
	}
	if cfg.APIPath != "" && cfg.APIPath != "/api" {
		base += strings.TrimSuffix(cfg.APIPath, "/")
	}
	return &api{cfg: cfg, hc: hc, base: base, ns: ns}, nil
}

// core and group paths of the namespaced resources a run makes.
func (a *api) path(group, resource, name string) string {
	p := "/api/v1"
	if group != "" {
		p = "/apis/" + group
	}
	p += "/namespaces/" + url.PathEscape(a.ns) + "/" + resource
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// do sends one request with a JSON body (nil for none) and decodes the
// answer into out (nil to drop it).
func (a *api) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := a.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return &unreachableError{host: a.cfg.Host, err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &apiError{Code: resp.StatusCode, Reason: http.StatusText(resp.StatusCode)}
		var st struct {
			Message string `json:"message"`
			Reason  string `json:"reason"`
		}
		if json.Unmarshal(b, &st) == nil {
			ae.Message = st.Message
			if st.Reason != "" {
				ae.Reason = st.Reason
			}
		}
		return ae
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = b // a log, not JSON
		return nil
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
		}
	}
	return nil
}

// unreachableError: the API server did not answer at all.
type unreachableError struct {
	host string
	err  error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("cannot reach the Kubernetes API server at %s: %v", e.host, e.err)
}

func (e *unreachableError) Unwrap() []error { return []error{e.err, ErrUnreachable} }

// ErrUnreachable: the API server did not answer.
var ErrUnreachable = errors.New("kubernetes API server unreachable")

// unreachableFix is what to do about an ErrUnreachable.
const unreachableFix = "check that the cluster is up and that --kubeconfig (or KUBECONFIG) names it: `kubectl get --raw /readyz` must answer; or run with --backend local"

func (a *api) create(ctx context.Context, group, resource string, obj, out any) error {
	return a.do(ctx, http.MethodPost, a.path(group, resource, ""), nil, obj, out)
}

func (a *api) get(ctx context.Context, group, resource, name string, out any) error {
	return a.do(ctx, http.MethodGet, a.path(group, resource, name), nil, nil, out)
}

// remove deletes the object; an object already gone is not an error. A
// pod gets a grace of one second rather than none: a pod deleted with
// none leaves the API at once, before the node has stopped its sandbox,
// and a pod that is gone from the API must be gone from the node.
func (a *api) remove(ctx context.Context, group, resource, name string) error {
	grace := 0
	if resource == "pods" {
		grace = 1
	}
	body := map[string]any{"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": grace, "propagationPolicy": "Background"}
	err := a.do(ctx, http.MethodDelete, a.path(group, resource, name), nil, body, nil)
	if isNotFound(err) {
		return nil
	}
	return err
}

// list lists the objects of resource with the label selector sel.
func (a *api) list(ctx context.Context, group, resource, sel string, out any) error {
	return a.do(ctx, http.MethodGet, a.path(group, resource, ""), url.Values{"labelSelector": {sel}}, nil, out)
}

// execURL is the pod's exec subresource running argv, with every stream
// but a tty.
func (a *api) execURL(name string, argv []string) (*url.URL, error) {
	q := url.Values{"container": {containerName}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}, "command": argv}
	return url.Parse(a.base + a.path("", "pods", name) + "/exec?" + q.Encode())
}
