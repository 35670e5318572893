package kubernetes

import (
	"context"
	"net/http"
	"time"

	nodev1 "k8s.io/api/node/v1"
)

// ProbeResult is what doctor says about the cluster.
type ProbeResult struct {
	Host           string
	Namespace      string
	Version        string
	RuntimeClasses []RuntimeClass
	// SeccompProfile is the Localhost seccomp profile the cluster facts
	// advertise ("": none; the pods get RuntimeDefault unless the
	// settings name one).
	SeccompProfile string
}

// RuntimeClass is one RuntimeClass of the cluster.
type RuntimeClass struct {
	Name      string
	Handler   string
	NoNetwork bool // annotated NoNetworkAnnotation=true
	GVisor    bool // its pods run under gVisor (handler or cluster facts)
}

// Probe asks the cluster of s for its version and RuntimeClasses, within
// timeout. It changes nothing.
func Probe(ctx context.Context, s Settings, timeout time.Duration) (*ProbeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b := New(s)
	a, err := b.client()
	if err != nil {
		return nil, err
	}
	res := &ProbeResult{Host: a.cfg.Host, Namespace: a.ns}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := a.do(ctx, http.MethodGet, "/version", nil, nil, &v); err != nil {
		return nil, b.apiFailure("ask the cluster its version", err)
	}
	res.Version = v.GitVersion
	var l nodev1.RuntimeClassList
	if err := a.do(ctx, http.MethodGet, "/apis/node.k8s.io/v1/runtimeclasses", nil, nil, &l); err != nil {
		return nil, b.apiFailure("list RuntimeClasses", err)
	}
	f, err := readFacts(ctx, a)
	if err != nil {
		return nil, b.apiFailure("read the cluster facts "+factsNamespace+"/"+factsName, err)
	}
	res.SeccompProfile = f.seccompProfile
	for _, rc := range l.Items {
		res.RuntimeClasses = append(res.RuntimeClasses, RuntimeClass{Name: rc.Name, Handler: rc.Handler,
			NoNetwork: rc.Annotations[NoNetworkAnnotation] == "true", GVisor: gVisorHandler(rc.Handler) || f.gvisor[rc.Name]})
	}
	return res, nil
}
