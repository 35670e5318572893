package tool

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Quota is one entry of `sandboxed: quotas:`: a cap the egress proxy puts
// on what the tool sends to a host, besides the operator's (a tool can
// only narrow them: both hold).
type Quota struct {
	// Host is a host name or *.suffix.
	Host string `json:"host" yaml:"host"`
	// Requests caps requests (and opaque tunnels); 0 is no cap.
	Requests int64 `json:"requests,omitempty" yaml:"requests,omitempty"`
	// Bytes caps bytes up and down; 0 is no cap.
	Bytes int64 `json:"bytes,omitempty" yaml:"bytes,omitempty" form:"size"`
	// Window is the sliding window across the tool's runs; 0 caps each run.
	Window time.Duration `json:"window,omitempty" yaml:"window,omitempty" form:"ms"`
}

// quotas reads sandboxed.quotas.
func (l *defLoader) quotas(n *yaml.Node) []Quota {
	var out []Quota
	const hint = "write quotas: [- host: api.example.com / requests: 60 / window: 1m]"
	for _, item := range l.items(n, "sandboxed.quotas", hint) {
		var q Quota
		ok := l.mapping(item, "a quota", map[string]fieldFn{
			"host": func(k, v *yaml.Node) {
				q.Host, _ = l.str(v, "quota host")
				if err := checkCredentialHost(q.Host); err != nil {
					l.errf(v, "name the host the quota caps", "%v", err)
				}
			},
			"requests": func(k, v *yaml.Node) {
				if i, ok := l.integer(v, "quota requests"); ok {
					if i < 1 {
						l.errf(v, "omit the key for no cap of requests", "quota requests must be at least 1")
					}
					q.Requests = i
				}
			},
			"bytes":  func(k, v *yaml.Node) { q.Bytes, _ = l.size(v, "quota bytes") },
			"window": func(k, v *yaml.Node) { q.Window, _ = l.duration(v, "quota window", true) },
		}, map[string]string{"hosts": "one host per quota: host: NAME"})
		if ok && q.Host == "" {
			l.errf(item, "add host: api.example.com", "quota has no host")
		}
		if ok && q.Requests == 0 && q.Bytes == 0 {
			l.errf(item, "add requests: N or bytes: SIZE", "quota caps nothing")
		}
		out = append(out, q)
	}
	return out
}
